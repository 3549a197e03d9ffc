"""Real slides (PATHKIT_REALDATA): the OpenSlide test slide and the documented problem files."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from pathkit_core.wsi.manifest import read_manifest
from pathkit_core.wsi.slide import SlideError, open_slide
from pathkit_core.wsi.tiling import TilingParams, tile_slide, tile_slides

pytestmark = [pytest.mark.realdata, pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")]

# file -> (code, words the message must contain), as documented in docs/wsi.md
PROBLEMS = {
    "openslide-unopenable.tiff": ("unopenable", "Unsupported TIFF compression"),
    "kidney-48-5.tif": ("not-a-slide", "flat (striped, untiled) TIFF of 1493x901 px"),
    "openslide-unreadable.svs": ("unreadable", "cannot be decoded"),
    "tcga-cr-7395-01a-01-ts1.svs": ("no-mpp", "no resolution (mpp)"),
    "PIT_06_00633_01.tiff": ("implausible-mpp", "72-dpi placeholder"),
}


@pytest.fixture(scope="module")
def cmu1(realdata, tmp_path_factory):
    out = tmp_path_factory.mktemp("cmu1")
    result = tile_slide(realdata / "slides" / "CMU-1-Small-Region.svs", out, TilingParams(target_mpp=0.5, tile_px=256))
    return result, read_manifest(result.manifest_path)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_each_problem_file_gives_its_documented_error(realdata, tmp_path, name):
    code, words = PROBLEMS[name]
    with pytest.raises(SlideError) as e:
        tile_slide(realdata / "slides" / name, tmp_path, TilingParams())
    assert e.value.code == code and words in str(e.value) and name in str(e.value)


def test_cmu1_tiles_the_stained_tissue_and_not_the_glass(cmu1):
    from pathkit_core.wsi.reader import TileReader
    from pathkit_tissue.otsu import hsv_channels

    result, manifest = cmu1
    meta = manifest.meta
    assert result.status == "ok" and 20 <= manifest.n_tiles <= 45
    assert meta["mpp"] == pytest.approx(0.499) and meta["mpp_source"] == "openslide.mpp (aperio.MPP)"
    assert (meta["read_level"], meta["read_px"]) == (0, 257)  # exact 0.499 um/px, not "20x"
    assert meta["slide_sha256"].startswith("ed92d5a9") and meta["objective_power"] == 20
    assert 0.3 < meta["tissue_area_mm2"] < 1.0
    # every tile is largely stained tissue: saturation, smoothed over ~4 um, above 0.1 (glass has
    # ~0.02); loose connective tissue at the edge leaves white gaps, hence the lower minimum
    reader = TileReader(manifest)
    fractions = [
        float((ndi.uniform_filter(hsv_channels(reader[i])[1], 9) > 0.1).mean()) for i in range(len(reader))
    ]
    assert min(fractions) > 0.3 and np.median(fractions) > 0.85
    # the right third of the slide is glass and stray fragments: no tiles there
    assert manifest.tiles["x"].max() + 257 <= 0.85 * meta["width"]
    assert result.manifest_path.with_name("CMU-1-Small-Region.qc.png").stat().st_size > 10_000


def test_placeholder_mpp_slide_tiles_with_a_user_mpp(realdata, tmp_path):
    r = tile_slide(realdata / "slides" / "PIT_06_00633_01.tiff", tmp_path, TilingParams(), mpp=0.25)
    meta = read_manifest(r.manifest_path).meta
    assert r.status == "ok" and r.n_tiles > 0 and meta["mpp_source"] == "user"


def test_a_batch_with_every_problem_file_finishes_the_good_slides(realdata, tmp_path):
    results = tile_slides([realdata / "slides"], tmp_path, TilingParams(), progress=False)
    by = {r.slide_id: r for r in results}
    for name, (code, _) in PROBLEMS.items():
        sid = name.rsplit(".", 1)[0]
        assert (by[sid].status, by[sid].code) == ("failed", code)
    assert by["CMU-1-Small-Region"].status == "ok" and by["CMU-1-Small-Region"].n_tiles > 0
    assert by["openslide-small"].status == "empty"  # 16 x 16 px: no tissue, no crash
    assert by["openslide-boxes"].code == "implausible-mpp"


def test_open_slide_reports_vendor_metadata(realdata):
    with open_slide(realdata / "slides" / "CMU-1-Small-Region.svs") as s:
        assert s.vendor == "aperio" and s.dimensions == (2220, 2967)


def test_cmu1_has_no_ink_and_loses_no_tissue_to_it(cmu1):
    # the magenta eosin edges and the blue-cyan fringes of its loose tissue are not marker ink
    _, manifest = cmu1
    assert manifest.meta["segmentation"]["pen_fraction"] <= 0.005


def _patch_pen(path):
    from PIL import Image

    from pathkit_tissue.otsu import OtsuTissueSegmenter, hsv_channels

    params = TilingParams()
    rgb = np.asarray(Image.open(path).convert("RGB"))
    hue, sat, val = hsv_channels(rgb)
    pen = OtsuTissueSegmenter(params).pen_mask(rgb, hue, sat, val, params.seg_mpp)
    glass = (val > params.background_value) & (sat < params.background_saturation)
    return pen, sat, glass


@pytest.mark.parametrize("name", ["no-tissue-green-pen.png", "no-tissue-red-pen.png"])
def test_real_marker_ink_is_found(realdata, name):
    # the ink: visibly coloured pixels that are not glass (benchmarks/pen_validity.py, docs/wsi.md)
    pen, sat, glass = _patch_pen(realdata / "patches" / name)
    ink = ~glass & (sat >= 0.2)
    assert ink.mean() > 0.5 and (pen & ink).sum() / ink.sum() >= 0.9


@pytest.mark.parametrize("name", ["tissue-level0-4302-10273-4814-10785.png", "tissue-level0-7352-11762-7864-12274.png",
                                  "tissue-level2-1784-6289-5880-10386.png", "tissue-level2-3000-7666-7096-11763.png",
                                  "tissue-level2-4640-4649-8736-8746.png", "tissue-level2-4760-5241-8856-9338.png",
                                  "MUC-TCGA-ACCPKIPN.tif", "TUM-TCGA-ACRLPPQE.tif"])
def test_real_he_tissue_has_no_ink(realdata, name):
    pen, _, glass = _patch_pen(realdata / "patches" / name)
    assert (~glass).mean() > 0.5 and not pen.any()
