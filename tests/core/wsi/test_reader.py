"""The manifest tile reader: pixels, resampling, worker processes, slide verification."""

from __future__ import annotations

import pickle
import shutil

import numpy as np
import pytest
from PIL import Image

from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.manifest import read_manifest
from pathkit_core.wsi.tiling import TilingParams, tile_slide

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")


@pytest.fixture(scope="module")
def tiled(synthetic_slides, tmp_path_factory):
    out = tmp_path_factory.mktemp("reader_tiles")
    params = TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=1024)
    return read_manifest(tile_slide(synthetic_slides["tissue"], out, params).manifest_path)


def test_tiles_are_the_slide_pixels_at_the_read_level(tiled):
    import openslide
    import torch

    from pathkit_core.wsi.reader import TileReader

    reader = TileReader(tiled)
    assert isinstance(reader, torch.utils.data.Dataset) and len(reader) == tiled.n_tiles
    handle = openslide.OpenSlide(str(tiled.slide_path))
    for i in (0, len(reader) // 2, len(reader) - 1):
        row = tiled.tiles.row(i, named=True)
        tile = reader[i]
        assert tile.shape == (64, 64, 3) and tile.dtype == np.uint8
        direct = np.asarray(handle.read_region((row["x"], row["y"]), row["level"], (64, 64)))[..., :3]
        assert np.array_equal(tile, direct)
    with pytest.raises(IndexError):
        reader[len(reader)]


def test_resampling_from_the_exact_mpp(synthetic_slides, tmp_path):
    import openslide

    from pathkit_core.wsi.reader import TileReader

    # tell the tiler the slide is 0.45 um/px: 64 px at 0.5 um/px = round(64 * 0.5 / 0.45) = 71 px
    params = TilingParams(target_mpp=0.5, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=512)
    m = read_manifest(tile_slide(synthetic_slides["tissue"], tmp_path, params, mpp=0.45).manifest_path)
    assert (m.tiles["read_px"] == 71).all() and (m.tiles["level"] == 0).all()
    row = m.tiles.row(5, named=True)
    raw = openslide.OpenSlide(str(m.slide_path)).read_region((row["x"], row["y"]), 0, (71, 71)).convert("RGB")
    pillow = np.asarray(raw.resize((64, 64), Image.Resampling.BICUBIC)).astype(int)
    reader = TileReader(m)
    tile = reader[5]
    assert tile.shape == (64, 64, 3)
    # Pillow's antialiased bicubic to two grey levels of fixed-point rounding (docs/wsi.md).
    assert np.abs(tile.astype(int) - pillow).max() <= 2
    # One tile or a batch: the same pixels; and the regions as read when the caller resamples.
    batch = reader.read_batch([4, 5, 6])
    assert np.array_equal(batch[1], tile)
    assert np.array_equal(batch, np.stack([reader[i] for i in (4, 5, 6)]))
    regions = reader.read_batch([5], resample=False)
    assert regions.shape == (1, 71, 71, 3) and np.array_equal(regions[0], np.asarray(raw))


def test_workers_open_their_own_handles_and_match_in_process(tiled):
    import torch

    from pathkit_core.wsi.reader import TileReader
    from pathkit_sdk.tiles import tile_loader

    torch.set_num_threads(1)
    reference = np.stack(list(TileReader(tiled)))
    batches = list(tile_loader(tiled, batch_size=7, num_workers=2))
    assert np.array_equal(torch.cat(batches).numpy(), reference)
    seen = {}
    for idx, tiles in tile_loader(tiled.path, batch_size=5, num_workers=2, ordered=False):
        for i, t in zip(idx.tolist(), tiles.numpy(), strict=True):
            seen[i] = t
    assert sorted(seen) == list(range(tiled.n_tiles))
    assert all(np.array_equal(seen[i], reference[i]) for i in seen)


def test_pickling_drops_the_handle(tiled):
    from pathkit_core.wsi.reader import TileReader

    reader = TileReader(tiled)
    reader[0]
    assert reader._handle is not None
    clone = pickle.loads(pickle.dumps(reader))
    assert clone._handle is None and type(clone) is TileReader
    assert np.array_equal(clone[0], reader[0])


def test_verify_slide_and_moved_slides(tiled, tmp_path):
    from pathkit_core.wsi.reader import TileReader

    TileReader(tiled).verify_slide()
    moved = tmp_path / "moved.tiff"
    shutil.copy(tiled.slide_path, moved)
    reader = TileReader(tiled, slide_path=moved)
    reader.verify_slide()
    with open(moved, "ab") as fh:
        fh.write(b"\0" * 8)
    with pytest.raises(PathkitError, match="changed since tiling"):
        reader.verify_slide()
    moved.unlink()
    with pytest.raises(PathkitError, match="not found"):
        TileReader(tiled, slide_path=moved)


@pytest.mark.parametrize("workers, copy", [(0, True), (0, False), (2, True), (2, False)])
def test_batches_from_the_shared_memory_ring_are_the_reader_tiles_in_order(tiled, workers, copy):
    from pathkit_core.wsi.reader import TileReader
    from pathkit_sdk.tiles import iter_tile_batches

    reference = np.stack(list(TileReader(tiled)))
    seen = []
    for indices, tiles in iter_tile_batches(tiled, batch_size=7, workers=workers, copy=copy):
        assert tiles.dtype == np.uint8 and tiles.shape[1:] == (64, 64, 3) and len(indices) == len(tiles)
        assert np.array_equal(tiles, reference[indices])  # a view is valid until the next batch
        seen.extend(indices.tolist())
    assert seen == list(range(tiled.n_tiles))


def test_a_worker_error_reaches_the_consumer(tiled, monkeypatch):
    from pathkit_core.wsi import reader
    from pathkit_sdk.tiles import iter_tile_batches

    original = reader.TileReader._region

    def broken(self, i, *args):
        if i == 9:
            raise PathkitError("tile 9 cannot be decoded")
        return original(self, i, *args)

    monkeypatch.setattr(reader.TileReader, "_region", broken)  # forked workers inherit it
    with pytest.raises(PathkitError, match="tile 9 cannot be decoded"):
        for _ in iter_tile_batches(tiled, batch_size=4, workers=2):
            pass


def test_stopping_early_stops_the_workers_and_frees_the_shared_memory(tiled):
    from pathlib import Path

    from pathkit_sdk.tiles import iter_tile_batches

    before = set(Path("/dev/shm").glob("psm_*")) if Path("/dev/shm").is_dir() else set()
    batches = iter_tile_batches(tiled, batch_size=2, workers=2)
    next(batches)
    batches.close()
    after = set(Path("/dev/shm").glob("psm_*")) if Path("/dev/shm").is_dir() else set()
    assert after <= before
