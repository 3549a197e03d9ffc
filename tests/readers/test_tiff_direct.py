"""The OpenSlide reader's direct JPEG decoding of TIFF tiles (`SlideReader.direct_levels`): the same
pixels as OpenSlide, or OpenSlide itself."""

from __future__ import annotations

import importlib
import shutil
import sys

import numpy as np
import polars as pl
import pytest

from pathkit_core import _deprecation
from pathkit_core.contracts import PathkitError, SlideReader
from pathkit_core.wsi.manifest import Manifest, read_manifest
from pathkit_core.wsi.reader import direct_enabled
from pathkit_core.wsi.tiling import TilingParams, tile_slide
from pathkit_readers.openslide_reader import OpenSlideReader
from pathkit_readers.tiff_direct import DirectTiffLevels

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")


@pytest.fixture(scope="module")
def synthetic_slides(tmp_path_factory):
    """A generic-tiff and an Aperio slide, as tests/core/wsi's fixture writes them."""
    from pathkit_sdk.synthetic import write_synthetic_slide
    from tests.core.wsi.conftest import HEIGHT, MPP, WIDTH, tissue_blobs

    root = tmp_path_factory.mktemp("direct_slides")
    return {"tissue": write_synthetic_slide(root / "tissue.tiff", width=WIDTH, height=HEIGHT, mpp=MPP,
                                            tissue=tissue_blobs(), seed=1),
            "aperio": write_synthetic_slide(root / "aperio.svs", width=2048, height=1536, mpp=0.25,
                                            tissue=tissue_blobs(), aperio=True, seed=2)}


def test_the_openslide_reader_offers_its_direct_levels_and_a_reader_by_default_none(synthetic_slides):
    import openslide

    path = synthetic_slides["tissue"]
    with openslide.OpenSlide(str(path)) as handle:
        direct = OpenSlideReader().direct_levels(path, handle)
        assert isinstance(direct, DirectTiffLevels) and direct.handle is handle
        direct.close()
        assert SlideReader().direct_levels(path, handle) is None


def test_the_old_core_path_warns_and_gives_the_plugins_objects(monkeypatch):
    monkeypatch.setattr(_deprecation, "_warned", set())
    monkeypatch.delitem(sys.modules, "pathkit_core.wsi.tiff_direct", raising=False)
    old = importlib.import_module("pathkit_core.wsi.tiff_direct")
    with pytest.warns(DeprecationWarning, match="DirectTiffLevels from pathkit_readers.tiff_direct instead"):
        assert old.DirectTiffLevels is DirectTiffLevels
    with pytest.warns(DeprecationWarning, match="direct_enabled from pathkit_core.wsi.reader instead"):
        assert old.direct_enabled is direct_enabled
    with pytest.raises(AttributeError):
        old.no_such_name  # noqa: B018


def _openslide_rgb(handle, location, level, size):
    from pathkit_core.wsi.slide import read_rgb

    return read_rgb(handle, location, level, size)


def _regions(handle, direct, rng, n=40):
    """Aligned tiles, unaligned windows, windows over the right/bottom edge and off the slide."""
    out = []
    for level in direct.levels:
        lv = direct.levels[level]
        ds = int(round(handle.level_downsamples[level]))
        for _ in range(n // len(direct.levels)):
            kind = rng.integers(4)
            if kind == 0:  # exactly one tile
                tx, ty = rng.integers(max(1, lv.width // lv.tile_w)), rng.integers(max(1, lv.height // lv.tile_h))
                x, y, w, h = tx * lv.tile_w, ty * lv.tile_h, lv.tile_w, lv.tile_h
            elif kind == 1:  # anywhere inside, any size up to 3 tiles
                w, h = (int(v) for v in rng.integers(1, 3 * lv.tile_w, size=2))
                x, y = int(rng.integers(0, max(1, lv.width - w))), int(rng.integers(0, max(1, lv.height - h)))
            elif kind == 2:  # over the right or bottom edge
                w, h = (int(v) for v in rng.integers(20, 2 * lv.tile_w, size=2))
                x, y = lv.width - w // 2, int(rng.integers(-h // 2, lv.height - h // 2))
            else:  # partly or wholly off the slide on the top/left
                w, h = (int(v) for v in rng.integers(10, lv.tile_w, size=2))
                x, y = int(rng.integers(-2 * w, w)), int(rng.integers(-2 * h, lv.height))
            out.append((level, (int(x) * ds, int(y) * ds), (int(w), int(h))))
    return out


@pytest.mark.parametrize("name", ["tissue", "aperio"])
def test_every_kind_of_region_matches_openslide(synthetic_slides, name):
    import openslide

    path = synthetic_slides[name]
    handle = openslide.OpenSlide(str(path))
    direct = DirectTiffLevels.open(path, handle)
    assert direct is not None and set(direct.levels) == set(range(handle.level_count))
    rng = np.random.default_rng(0)
    regions = _regions(handle, direct, rng)
    assert len({r[0] for r in regions}) >= 2
    for level, location, size in regions:
        out = np.empty((size[1], size[0], 3), dtype=np.uint8)
        assert direct.read(level, location, size, out), (level, location, size)
        expected = _openslide_rgb(handle, location, level, size)
        assert np.array_equal(out, expected), (level, location, size)
    assert direct.direct_reads == len(regions)
    direct.close()


def test_sub_pixel_level_positions_are_left_to_openslide(synthetic_slides):
    import openslide

    path = synthetic_slides["tissue"]
    handle = openslide.OpenSlide(str(path))
    direct = DirectTiffLevels.open(path, handle)
    assert handle.level_downsamples[1] == 2.0
    out = np.empty((32, 32, 3), dtype=np.uint8)
    assert not direct.read(1, (101, 64), (32, 32), out)  # x = 50.5 at level 1: OpenSlide interpolates
    assert direct.read(1, (100, 64), (32, 32), out)


def test_formats_it_does_not_decode(synthetic_slides, tmp_path):
    import openslide

    from pathkit_sdk.synthetic import write_synthetic_slide

    deflate = write_synthetic_slide(tmp_path / "deflate.tiff", width=512, height=512, mpp=0.5,
                                    compression="deflate", tile_size=128)
    assert DirectTiffLevels.open(deflate, openslide.OpenSlide(str(deflate))) is None

    class OtherVendor:
        properties = {"openslide.vendor": "hamamatsu"}

    assert DirectTiffLevels.open(synthetic_slides["tissue"], OtherVendor()) is None


@pytest.fixture(scope="module")
def tiled(synthetic_slides, tmp_path_factory):
    out = tmp_path_factory.mktemp("direct_tiles")
    # 128 px at 1 um/px from a 0.5 um/px slide: level 1, 128-px reads on 256-px tiles, mostly unaligned
    params = TilingParams(target_mpp=1.0, tile_px=128, stride_px=96, min_tissue_area_mm2=0.0, thumbnail_px=1024)
    return read_manifest(tile_slide(synthetic_slides["tissue"], out, params).manifest_path)


def test_reader_tiles_are_identical_with_and_without_direct_decoding(tiled, monkeypatch):
    from pathkit_core.wsi.reader import TileReader
    from pathkit_sdk.tiles import iter_tile_batches

    assert (tiled.tiles["level"] == 1).all()
    fast = TileReader(tiled, direct=True)
    slow = TileReader(tiled, direct=False)
    a = np.stack([fast[i] for i in range(len(fast))])
    b = np.stack([slow[i] for i in range(len(slow))])
    assert np.array_equal(a, b)
    assert fast._decoder.direct_reads == len(fast) and fast._decoder.verified == {1}
    assert slow._decoder is None
    ring = np.concatenate([t for _, t in iter_tile_batches(tiled, batch_size=8, workers=2, direct=True)])
    assert np.array_equal(ring, b)
    monkeypatch.setenv("PATHKIT_DIRECT_TIFF", "0")
    assert TileReader(tiled).direct is False


def test_a_difference_from_openslide_turns_direct_decoding_off(tiled, monkeypatch, caplog):
    from pathkit_core.wsi.reader import TileReader
    from pathkit_readers import tiff_direct

    original = tiff_direct.DirectTiffLevels._decode

    def off_by_one(self, lv, k, out):
        original(self, lv, k, out)
        out ^= 1

    monkeypatch.setattr(tiff_direct.DirectTiffLevels, "_decode", off_by_one)
    reader = TileReader(tiled, direct=True)
    reference = TileReader(tiled, direct=False)
    with caplog.at_level("WARNING", logger="pathkit_readers.tiff_direct"):
        first = reader[0]
    assert "differs from OpenSlide" in caplog.text
    assert np.array_equal(first, reference[0])
    assert not reader._decoder.enabled
    for i in (1, 2, len(reader) - 1):
        assert np.array_equal(reader[i], reference[i])
    assert reader._decoder.direct_reads == 1  # only the checked read


def _corrupt_first_tissue_tile(src, dst):
    import tifffile

    shutil.copy(src, dst)
    with tifffile.TiffFile(dst) as tif:
        page = tif.pages[0]
        counts = np.asarray(page.databytecounts)
        k = int(np.argmax(counts))  # a busy tissue tile
        offset, count = int(page.dataoffsets[k]), int(counts[k])
        across = -(-page.imagewidth // page.tilewidth)
        tile_w, tile_h = page.tilewidth, page.tilelength
    with open(dst, "r+b") as fh:  # keep the markers, scramble the entropy-coded data
        fh.seek(offset + count // 2)
        fh.write(b"\xff\xd9" + bytes(range(256)) * 4)
    return ((k % across) * tile_w, (k // across) * tile_h), (tile_w, tile_h)


def _manifest(slide, locations, px):
    n = len(locations)
    ints = {"level": pl.Int32, "read_px": pl.Int32, "size0": pl.Int32, "tile_px": pl.Int32,
            "grid_col": pl.Int32, "grid_row": pl.Int32}
    tiles = pl.DataFrame(
        {"slide_id": [slide.stem] * n, "tile_index": list(range(n)), "x": [x for x, _ in locations],
         "y": [y for _, y in locations], "level": [0] * n, "read_px": [px] * n, "size0": [px] * n,
         "tile_px": [px] * n, "target_mpp": [0.5] * n, "tissue_fraction": [1.0] * n, "grid_col": [0] * n,
         "grid_row": [0] * n},
        schema_overrides=ints,
    )
    return Manifest(tiles=tiles, meta={"slide_id": slide.stem, "slide_path": str(slide), "tile_px": px})


def test_a_damaged_tile_is_the_same_error_as_in_openslide(synthetic_slides, tmp_path):
    from pathkit_core.wsi.reader import TileReader

    bad = tmp_path / "bad.tiff"
    location, size = _corrupt_first_tissue_tile(synthetic_slides["tissue"], bad)
    good = (0, 0) if location != (0, 0) else (size[0], 0)
    # the good tile first, so the level is already checked when the damaged one comes
    m = _manifest(bad, [good, location], size[0])
    errors = []
    for direct in (True, False):
        reader = TileReader(m, direct=direct)
        assert reader[0].shape == (size[1], size[0], 3)
        with pytest.raises(PathkitError, match="cannot be decoded") as info:
            reader[1]
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "premature end of data segment" in errors[0] and str(bad) in errors[0]


def test_direct_decoding_rejects_what_openslide_rejects(synthetic_slides, tmp_path):
    import openslide

    bad = tmp_path / "bad.tiff"
    location, size = _corrupt_first_tissue_tile(synthetic_slides["tissue"], bad)
    handle = openslide.OpenSlide(str(bad))
    direct = DirectTiffLevels.open(bad, handle)
    out = np.empty((size[1], size[0], 3), dtype=np.uint8)
    assert not direct.read(0, location, size, out)  # a lenient decoder would return half a tile
    with pytest.raises(Exception, match="premature end of data segment"):
        _openslide_rgb(handle, location, 0, size)


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["CMU-1-Small-Region.svs", "PIT_06_00633_01.tiff", "openslide-small.svs"])
def test_real_scanner_files_decode_to_openslides_pixels(realdata, name):
    import openslide

    path = realdata / "slides" / name
    handle = openslide.OpenSlide(str(path))
    direct = DirectTiffLevels.open(path, handle)
    assert direct is not None and 0 in direct.levels
    regions = _regions(handle, direct, np.random.default_rng(1), n=30)
    regions.append((0, (0, 0), handle.level_dimensions[0]))  # the whole level at once
    for level, location, size in regions:
        out = np.empty((size[1], size[0], 3), dtype=np.uint8)
        assert direct.read(level, location, size, out), (level, location, size)
        assert np.array_equal(out, _openslide_rgb(handle, location, level, size)), (name, level, location, size)


@pytest.mark.realdata
def test_real_cmu1_manifest_reads_the_same_tiles_either_way(realdata, tmp_path):
    from pathkit_core.wsi.reader import TileReader

    m = read_manifest(tile_slide(realdata / "slides" / "CMU-1-Small-Region.svs", tmp_path,
                                 TilingParams(target_mpp=0.5, tile_px=256)).manifest_path)
    fast, slow = TileReader(m, direct=True), TileReader(m, direct=False)
    assert np.array_equal(np.stack(list(fast)), np.stack(list(slow)))  # 257-px reads over 240-px tiles
    assert fast._decoder.direct_reads == len(fast) > 20


@pytest.mark.realdata
def test_real_files_it_leaves_to_openslide(realdata, tmp_path):
    import openslide

    from pathkit_core.wsi.reader import TileReader

    j2k = realdata / "slides" / "tcga-cr-7395-01a-01-ts1.svs"  # JPEG 2000 tiles
    assert DirectTiffLevels.open(j2k, openslide.OpenSlide(str(j2k))) is None
    unreadable = realdata / "slides" / "openslide-unreadable.svs"
    reader = TileReader(_manifest(unreadable, [(0, 0)], 16), direct=True)
    with pytest.raises(PathkitError, match="cannot be decoded"):
        reader[0]
