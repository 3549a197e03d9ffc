"""The real CMU-1-Small-Region slide converted with each format's own writer (PATHKIT_REALDATA):
tiles at the same physical coordinates as OpenSlide's on the original (identical when lossless;
mean absolute difference within the bound docs/formats.md states when not), the original's mpp,
the same tile grid from `pathkit tile`, and (lossless) the same tiny-vit features."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest

from pathkit_core.wsi.slide import open_slide
from pathkit_core.wsi.tiling import TilingParams, tile_slide

pytestmark = [pytest.mark.realdata, pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")]

CMU1 = "CMU-1-Small-Region.svs"
# The JPEG OME-TIFF (quality 90) re-encodes the decoded pixels: its mean absolute difference from
# OpenSlide's pixels on CMU-1, measured 4.0 grey levels, is held under this bound (docs/formats.md).
JPEG_MAD_BOUND = 5.0
# tiny-vit's field of view: 128 px at 1 um/px
PARAMS = TilingParams(target_mpp=1.0, tile_px=128)


@pytest.fixture(scope="module")
def original(realdata) -> tuple[Path, np.ndarray]:
    """The slide and its level 0 as OpenSlide decodes it (one level, like the original)."""
    path = realdata / "slides" / CMU1
    with open_slide(path) as slide:
        return path, slide.read_region((0, 0), 0, slide.dimensions)


@pytest.fixture(scope="module")
def converted(original, tmp_path_factory, formats) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cmu1-formats")
    _, level0 = original
    out = {"ome-tiff": formats.write_ome_tiff(root / "cmu1.ome.tif", [level0], 0.499, compression="zlib"),
           "ome-tiff-jpeg": formats.write_ome_tiff(root / "cmu1-jpeg.ome.tif", [level0], 0.499,
                                                    compression="jpeg", quality=90)}
    optional = {"ome-zarr": lambda: formats.write_ome_zarr(root / "cmu1.ome.zarr", [level0], 0.499, version="0.4"),
                "czi": lambda: formats.write_czi(root / "cmu1.czi", level0, 0.499)}
    for case, write in optional.items():
        with contextlib.suppress(ImportError):  # that format's writer is not installed
            out[case] = write()
    return out


CASES = [("ome-tiff", "ome-tiff", True), ("ome-tiff-jpeg", "ome-tiff", False), ("ome-zarr", "ome-zarr", True),
         ("czi", "czi", True)]


def _grid(original_level0: np.ndarray, n: int = 24) -> list[tuple[int, int]]:
    h, w = original_level0.shape[:2]
    rng = np.random.default_rng(42)
    return [(int(rng.integers(0, w - 256)), int(rng.integers(0, h - 256))) for _ in range(n)]


@pytest.mark.parametrize("case, reader, lossless", CASES)
def test_tiles_match_openslides_on_the_original_with_its_mpp(needs, original, converted, case, reader, lossless):
    needs(reader)
    if case not in converted:
        pytest.skip(f"no writer for {case}")
    _, level0 = original
    with open_slide(converted[case]) as slide:
        assert slide.reader == reader
        assert slide.mpp == pytest.approx(0.499) and slide.dimensions == (level0.shape[1], level0.shape[0])
        diffs = [np.abs(slide.read_region((x, y), 0, (256, 256)).astype(int) - level0[y:y + 256, x:x + 256]).mean()
                 for x, y in _grid(level0)]
    if lossless:
        assert max(diffs) == 0.0
    else:
        assert 0.0 < float(np.mean(diffs)) < JPEG_MAD_BOUND


@pytest.fixture(scope="module")
def original_manifest(original, tmp_path_factory):
    from pathkit_core.wsi.manifest import read_manifest

    result = tile_slide(original[0], tmp_path_factory.mktemp("cmu1-tiles"), PARAMS)
    return read_manifest(result.manifest_path)


@pytest.mark.parametrize("case, reader, lossless", CASES)
def test_pathkit_tile_gives_the_originals_grid(needs, original_manifest, converted, tmp_path, case, reader, lossless):
    needs(reader)
    if case not in converted:
        pytest.skip(f"no writer for {case}")
    from pathkit_core.wsi.manifest import read_manifest

    manifest = read_manifest(tile_slide(converted[case], tmp_path, PARAMS).manifest_path)
    assert manifest.meta["slide_reader"] == reader
    columns = ["x", "y", "level", "read_px"]
    ours, theirs = manifest.tiles.select(columns), original_manifest.tiles.select(columns)
    if lossless:
        assert ours.equals(theirs) and ours.height > 10
    else:  # JPEG moves a few saturation values near the threshold: nearly the same grid
        shared = ours.join(theirs, on=columns, how="inner").height
        assert shared >= 0.9 * max(ours.height, theirs.height)


@pytest.mark.slow
def test_lossless_formats_give_the_same_tiny_vit_features(needs, original_manifest, converted, tmp_path,
                                                          one_torch_thread):
    needs("ome-tiff")
    from pathkit_core.features.extract import extract_features
    from pathkit_core.features.store import read_features
    from pathkit_core.wsi.manifest import read_manifest

    manifests = [original_manifest.path]
    for case in ("ome-tiff", "ome-zarr", "czi"):
        if case in converted:
            out = tmp_path / case
            manifests.append(tile_slide(converted[case], out, PARAMS).manifest_path)
            assert read_manifest(manifests[-1]).meta["slide_reader"] == case
    features = []
    for i, manifest in enumerate(manifests):
        extract_features("tiny-vit", [manifest], tmp_path / f"features{i}", workers=0, batch_size=16, progress=False)
        found = next((tmp_path / f"features{i}").rglob("*.safetensors"))
        features.append(read_features(found).features.numpy())
    for other in features[1:]:
        np.testing.assert_array_equal(other, features[0])


@pytest.mark.slow
def test_dicom_from_wsidicomizer_matches_openslide_and_tiles_the_same_grid(needs, formats, original, original_manifest,
                                                                          tmp_path):
    """wsidicomizer's import alone takes seconds: slow, run by `make test-suite` (with the features test)."""
    needs("dicom")
    pytest.importorskip("wsidicomizer", reason="the DICOM conversion needs wsidicomizer (requirements-dev.txt)")
    from pathkit_core.wsi.manifest import read_manifest

    path, level0 = original
    folder = formats.write_dicom(path, tmp_path / "cmu1.dcm", all_levels=False)
    with open_slide(folder) as slide:
        assert slide.reader == "dicom" and slide.mpp == pytest.approx(0.499)
        assert slide.associated_image_names == ["label", "macro"]
        for x, y in _grid(level0, 8):
            np.testing.assert_array_equal(slide.read_region((x, y), 0, (256, 256)), level0[y:y + 256, x:x + 256])
    manifest = read_manifest(tile_slide(folder, tmp_path / "tiles", PARAMS).manifest_path)
    columns = ["x", "y", "level", "read_px"]
    assert manifest.tiles.select(columns).equals(original_manifest.tiles.select(columns))
