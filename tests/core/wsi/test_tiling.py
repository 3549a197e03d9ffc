"""Tiling geometry, tissue fractions, manifests, resume and batch behaviour."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.manifest import read_manifest, read_manifest_meta
from pathkit_core.wsi.slide import SlideError
from pathkit_core.wsi.tiling import (
    TilingParams,
    choose_geometry,
    low_tissue_note,
    plan_grid,
    read_tiling_status,
    tile_slide,
    tile_slides,
    tissue_fractions,
)

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")


# --------------------------------------------------------------------------- geometry


def test_exact_mpp_not_magnification_bucket():
    g = choose_geometry(0.499, [1.0], TilingParams(target_mpp=0.5, tile_px=256))
    # 256 * 0.5 / 0.499 = 256.51 level-0 px: read 257 and resample to 256
    assert (g.level, g.read_px, g.tile_px) == (0, 257, 256)
    assert g.size0 == pytest.approx(256.513, abs=1e-3)


def test_best_level_is_the_coarsest_not_coarser_than_target():
    p = TilingParams(target_mpp=0.5, tile_px=256)
    g = choose_geometry(0.25, [1.0, 2.0, 4.0, 16.0], p)
    assert (g.level, g.read_px, g.size0) == (1, 256, 512.0)
    # 40x at 0.2527: the 2x level (0.5054 um/px) is 1.1% coarser than the target, within the
    # 2% tolerance: read round(256 * 0.5/0.2527 / 2) = 253 px there and upsample slightly
    g = choose_geometry(0.2527, [1.0, 2.0, 4.0], p)
    assert (g.level, g.read_px) == (1, 253)
    # a level 3% coarser is skipped: read level 0 and downsample
    g = choose_geometry(0.2575, [1.0, 2.0], p)
    assert (g.level, g.read_px) == (0, 497)
    g = choose_geometry(0.5, [1.0, 4.0], TilingParams(target_mpp=2.0, tile_px=64))
    assert (g.level, g.read_px, g.size0) == (1, 64, 256.0)


def test_tile_um_sets_the_field_of_view():
    p = TilingParams(target_mpp=0.5, tile_px=None, tile_um=128)
    assert p.tile_px == 256 and p.tile_size_um == 128
    assert TilingParams(target_mpp=0.25, tile_px=None, tile_um=128).tile_px == 512
    with pytest.raises(PathkitError, match="not both"):
        TilingParams(tile_px=224, tile_um=128)


def test_invalid_params_and_upsampling_are_refused():
    with pytest.raises(PathkitError, match="overlap"):
        TilingParams(overlap=1.0)
    with pytest.raises(PathkitError, match="pen colour"):
        TilingParams(pen_colours=("purple",))
    with pytest.raises(SlideError) as e:
        choose_geometry(1.0, [1.0], TilingParams(target_mpp=0.5))
    assert e.value.code == "resolution-too-low"


def test_params_hash_is_stable_and_sensitive():
    a, b = TilingParams(), TilingParams()
    assert a.params_hash() == b.params_hash()
    assert TilingParams(min_tissue_fraction=0.4).params_hash() != a.params_hash()
    assert TilingParams.from_dict(a.as_dict()).params_hash() == a.params_hash()
    assert TilingParams(overlap=0.5).stride == 128


@settings(max_examples=40, deadline=None)
@given(
    st.integers(3, 12), st.integers(3, 12),
    st.floats(0, 6), st.floats(0, 6), st.floats(0.5, 5), st.floats(0.5, 5), st.integers(0, 10_000),
)
def test_tissue_fraction_is_exact_area_overlap(h, w, x0, y0, rw, rh, seed):
    mask = np.random.default_rng(seed).random((h, w)) > 0.5
    # brute force on a 50x finer grid
    k = 50
    fine = np.kron(mask, np.ones((k, k), bool))
    xa, xb = int(round(x0 * k)), int(round((x0 + rw) * k))
    ya, yb = int(round(y0 * k)), int(round((y0 + rh) * k))
    x0, y0, rw, rh = xa / k, ya / k, (xb - xa) / k, (yb - ya) / k
    padded = np.zeros((max(yb, h * k), max(xb, w * k)), bool)
    padded[: h * k, : w * k] = fine
    expected = padded[ya:yb, xa:xb].mean()
    got = tissue_fractions(mask, np.array([x0]), np.array([y0]), rw, rh)[0]
    assert got == pytest.approx(expected, abs=1e-9)


def test_grid_positions_do_not_drift_and_keep_the_threshold():
    g = choose_geometry(0.499, [1.0], TilingParams(target_mpp=0.5, tile_px=256))
    tissue = np.ones((100, 100), bool)
    tiles = plan_grid((2220, 2967), g, tissue, (22.2, 29.67), 0.5)
    xs = sorted(set(tiles["x"].to_list()))
    assert xs == [round(i * g.size0) for i in range(8)]  # 8 * 256.51 <= 2220 < 9 * 256.51
    assert tiles.height == 8 * 11 and tiles["tile_index"].to_list() == list(range(88))
    tissue[:, :50] = False  # left half glass: the column straddling x=1110 has < 50% tissue
    tiles = plan_grid((2220, 2967), g, tissue, (22.2, 29.67), 0.5)
    assert tiles["x"].min() == round(5 * g.size0) or tiles["x"].min() == round(4 * g.size0)
    assert (tiles["tissue_fraction"] >= 0.5).all()


def test_padded_edges_cover_the_whole_slide_and_old_hashes_stay():
    g = choose_geometry(0.5, [1.0], TilingParams(target_mpp=0.5, tile_px=256, overlap=0.5))
    tissue = np.ones((100, 100), bool)
    inside = plan_grid((1000, 700), g, tissue, (10.0, 7.0), 0.1)
    padded = plan_grid((1000, 700), g, tissue, (10.0, 7.0), 0.1, pad_edges=True)
    # inside: windows end by 896 <= 1000; padded: the last starts at 768 and reaches 1024 >= 1000
    assert inside["x"].max() + 256 <= 1000 and padded["x"].max() == 768
    assert padded["y"].max() + 256 >= 700 > inside["y"].max() + 256
    edge = padded.filter(padded["x"] == 768)
    assert (edge["tissue_fraction"] < 1.0).all()  # past the edge is no tissue
    assert "pad_edges" not in TilingParams().as_dict()
    assert TilingParams(pad_edges=True).params_hash() != TilingParams().params_hash()
    assert TilingParams.from_dict(TilingParams(pad_edges=True).as_dict()).pad_edges


# --------------------------------------------------------------------------- one slide


def test_tile_slide_writes_manifest_and_qc(synthetic_slides, tmp_path, fast_params):
    r = tile_slide(synthetic_slides["tissue"], tmp_path, fast_params)
    assert r.status == "ok" and r.n_tiles > 20 and r.manifest_path == tmp_path / "tissue.parquet"
    m = read_manifest(r.manifest_path)
    t = m.tiles
    assert t.columns[:6] == ["slide_id", "tile_index", "x", "y", "level", "read_px"]
    assert (t["tile_px"] == 64).all() and (t["size0"] == 256).all() and (t["level"] == 2).all()
    assert (t["read_px"] == 64).all() and (t["tissue_fraction"] >= 0.5).all()
    meta = m.meta
    for key in ("slide_id", "slide_path", "slide_sha256", "params_hash", "target_mpp", "tile_px",
                "mpp", "mpp_source", "width", "height", "vendor", "slide_size"):
        assert key in meta
    assert meta["params_hash"] == fast_params.params_hash() and meta["n_tiles"] == r.n_tiles
    assert meta["width"] == 3072 and meta["mpp_source"] == "openslide.mpp (tiff-resolution)"
    # every tile lies inside one of the two blobs' bounding boxes (no tiles on glass)
    cx = (t["x"] + 128).to_numpy() / 3072
    cy = (t["y"] + 128).to_numpy() / 2048
    in_left = ((cx - 0.3) / 0.18) ** 2 + ((cy - 0.5) / 0.3) ** 2 <= 1.3
    in_right = ((cx - 0.72) / 0.14) ** 2 + ((cy - 0.5) / 0.22) ** 2 <= 1.3
    assert (in_left | in_right).all()
    assert (tmp_path / "tissue.qc.png").stat().st_size > 1000


def test_aperio_slide_at_40x_reads_its_half_resolution_level(synthetic_slides, tmp_path):
    params = TilingParams(target_mpp=0.5, tile_px=128, min_tissue_area_mm2=0)
    r = tile_slide(synthetic_slides["aperio"], tmp_path, params)
    meta = read_manifest_meta(r.manifest_path)
    assert meta["vendor"] == "aperio" and meta["objective_power"] == 40
    assert (meta["read_level"], meta["read_px"], meta["size0"]) == (1, 128, 256.0)


def test_tissue_fractions_of_many_rectangles_at_once_are_their_pixel_counts():
    # integer rectangles, some over the edges (outside counts as background): the fraction is the
    # count of mask pixels inside over the area; many at once share the summed-area rows
    rng = np.random.default_rng(3)
    mask = rng.random((37, 53)) > 0.6
    padded = np.zeros((37 + 40, 53 + 40), bool)
    padded[20:57, 20:73] = mask
    xs = rng.integers(-15, 60, 300)
    ys = rng.integers(-15, 45, 300)
    for side in (1, 4, 9):
        got = tissue_fractions(mask, xs.astype(float), ys.astype(float), side, side)
        expected = [padded[y + 20:y + 20 + side, x + 20:x + 20 + side].sum() / side**2
                    for x, y in zip(xs, ys, strict=True)]
        assert np.allclose(got, expected, atol=1e-12)
    assert tissue_fractions(mask, np.array([]), np.array([]), 4, 4).shape == (0,)


def test_resume_skips_and_stale_manifest_needs_overwrite(synthetic_slides, tmp_path, fast_params):
    first = tile_slide(synthetic_slides["tissue"], tmp_path, fast_params)
    before = first.manifest_path.read_bytes()
    again = tile_slide(synthetic_slides["tissue"], tmp_path, fast_params)
    assert again.status == "skipped" and again.n_tiles == first.n_tiles
    other = TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0, min_tissue_fraction=0.9,
                         thumbnail_px=1024)
    with pytest.raises(SlideError) as e:
        tile_slide(synthetic_slides["tissue"], tmp_path, other)
    assert e.value.code == "stale-manifest" and "--overwrite" in str(e.value)
    assert first.manifest_path.read_bytes() == before  # nothing lost
    redone = tile_slide(synthetic_slides["tissue"], tmp_path, other, overwrite=True)
    assert redone.status == "ok" and redone.n_tiles < first.n_tiles
    # a different mpp override is a different manifest too
    with pytest.raises(SlideError, match="mpp override"):
        tile_slide(synthetic_slides["tissue"], tmp_path, other, mpp=0.45)


def _flip_byte_keeping_mtime(path, offset):
    """Change one byte in place (same size) and put the modification time back."""
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_resume_compares_the_sampled_identity_even_when_size_and_mtime_are_kept(
    synthetic_slides, tmp_path, fast_params, monkeypatch
):
    import shutil

    from pathkit_core import sources

    # the synthetic slide is small: lower the whole-hash limit so that it gets the sampled
    # identity of a large slide (head and tail 32 KiB, four 8 KiB blocks between)
    monkeypatch.setattr(sources, "FULL_HASH_BYTES", 64 * 1024)
    slide = tmp_path / "tissue.tiff"
    shutil.copyfile(synthetic_slides["tissue"], slide)
    size = slide.stat().st_size
    offsets = sources.sampled_offsets(size)
    assert sources.file_identity(slide).startswith(f"sampled:{size}:")
    out = tmp_path / "tiles"
    tile_slide(slide, out, fast_params)
    assert tile_slide(slide, out, fast_params).status == "skipped"
    # the documented limit: a same-size edit only between the sampled blocks is not seen
    _flip_byte_keeping_mtime(slide, (offsets[1] + sources.BLOCK_BYTES + offsets[2]) // 2)
    assert tile_slide(slide, out, fast_params).status == "skipped"
    # a same-size edit in bytes the identity reads (the tail: tile data; the header) is another
    # slide even with the mtime restored: the manifest is stale, and re-tiled with overwrite
    for offset in (size - 100, 4):
        _flip_byte_keeping_mtime(slide, offset)
        with pytest.raises(SlideError, match="content identity differs") as e:
            tile_slide(slide, out, fast_params)
        assert e.value.code == "stale-manifest"
        _flip_byte_keeping_mtime(slide, offset)  # back: the slide as tiled
    assert tile_slide(slide, out, fast_params).status == "skipped"
    _flip_byte_keeping_mtime(slide, size - 100)
    result = tile_slide(slide, out, fast_params, overwrite=True)
    assert result.status == "ok"
    assert read_manifest_meta(result.manifest_path)["slide_identity"] == sources.file_identity(slide)


def test_empty_and_low_tissue_slides(synthetic_slides, tmp_path, fast_params):
    with pytest.warns(UserWarning, match="no tissue"):
        r = tile_slide(synthetic_slides["glass"], tmp_path, fast_params)
    assert r.status == "empty" and r.n_tiles == 0 and r.reason == "no tissue found"
    assert read_manifest(r.manifest_path).n_tiles == 0
    # the default 25 mm^2 minimum: the 0.42 mm^2 of tissue is tiled and flagged, not warned about
    # per slide; a batch says it once for all its small slides
    warn = TilingParams(target_mpp=2.0, tile_px=64, thumbnail_px=1024)
    r = tile_slide(synthetic_slides["tissue"], tmp_path / "warn", warn)
    assert r.status == "ok" and r.n_tiles > 0 and not any("below" in w for w in r.warnings)
    assert read_manifest_meta(r.manifest_path)["below_min_tissue_area"] is True
    note = low_tissue_note([r, r], warn)
    assert note.startswith("2 slide(s) have less tissue than the 25 mm^2") and f"{r.tissue_area_mm2:.2f}" in note
    assert low_tissue_note([r], TilingParams(min_tissue_area_mm2=0.4)) is None
    # ... or excluded (GOLDMARK's cohort rule) on request
    excl = TilingParams(target_mpp=2.0, tile_px=64, exclude_below_min_area=True, thumbnail_px=1024)
    r = tile_slide(synthetic_slides["tissue"], tmp_path / "excl", excl)
    assert r.status == "empty" and r.n_tiles == 0 and "excluded" in r.reason


def test_pen_strokes_get_no_tiles(synthetic_slides, tmp_path, fast_params):
    clean = read_manifest(tile_slide(synthetic_slides["tissue"], tmp_path / "a", fast_params).manifest_path)
    inked = read_manifest(tile_slide(synthetic_slides["pen"], tmp_path / "b", fast_params).manifest_path)
    assert inked.meta["segmentation"]["pen_fraction"] > 0.02
    assert 0 < inked.n_tiles < clean.n_tiles
    # tiles off the tissue blobs would be on ink over glass: none
    t = inked.tiles
    cx = (t["x"] + 128).to_numpy() / 3072
    cy = (t["y"] + 128).to_numpy() / 2048
    in_left = ((cx - 0.3) / 0.18) ** 2 + ((cy - 0.5) / 0.3) ** 2 <= 1.3
    in_right = ((cx - 0.72) / 0.14) ** 2 + ((cy - 0.5) / 0.22) ** 2 <= 1.3
    assert (in_left | in_right).all()


# --------------------------------------------------------------------------- batches


def test_batch_records_failures_and_goes_on(synthetic_slides, tmp_path, fast_params):
    slides = [synthetic_slides["tissue"], synthetic_slides["nompp"], tmp_path / "missing.svs",
              synthetic_slides["glass"]]
    results = tile_slides(slides, tmp_path / "out", fast_params, progress=False, write_csv=True)
    by = {r.slide_id: r for r in results}
    assert [r.slide_id for r in results] == ["tissue", "nompp", "missing", "glass"]
    assert by["tissue"].status == "ok" and by["glass"].status == "empty"
    assert (by["nompp"].status, by["nompp"].code) == ("failed", "no-mpp")
    assert (by["missing"].status, by["missing"].code) == ("failed", "not-found")
    status = read_tiling_status(tmp_path / "out")
    assert status["nompp"]["code"] == "no-mpp" and status["tissue"]["n_tiles"] == by["tissue"].n_tiles
    assert (tmp_path / "out" / "tissue.csv").read_text().startswith("slide_id,tile_index,x,y")
    # an mpp override by slide id rescues the slide; the rest resume
    results = tile_slides(slides[:2], tmp_path / "out", fast_params, progress=False,
                          mpp_overrides={"nompp": 0.5})
    assert [r.status for r in results] == ["skipped", "ok"]
    assert read_manifest_meta(tmp_path / "out" / "nompp.parquet")["mpp_source"] == "user"
    assert read_tiling_status(tmp_path / "out")["nompp"]["status"] == "ok"


def test_strict_stops_at_the_first_failure(synthetic_slides, tmp_path, fast_params):
    from pathkit_core.wsi.tiling import TilingFailed

    with pytest.raises(TilingFailed) as e:
        tile_slides([synthetic_slides["nompp"], synthetic_slides["tissue"]], tmp_path, fast_params,
                    strict=True, progress=False)
    assert [r.code for r in e.value.results] == ["no-mpp"]
    assert not (tmp_path / "tissue.parquet").exists()


def test_parallel_workers_give_identical_manifests(synthetic_slides, tmp_path, fast_params):
    slides = [synthetic_slides["tissue"], synthetic_slides["pen"]]
    tile_slides(slides, tmp_path / "one", fast_params, progress=False)
    tile_slides(slides, tmp_path / "two", fast_params, progress=False, workers=2)
    for name in ("tissue", "pen"):
        one, two = tmp_path / "one" / f"{name}.parquet", tmp_path / "two" / f"{name}.parquet"
        assert one.read_bytes() == two.read_bytes()


def test_duplicate_slide_ids_fail_both(tmp_path, fast_params, synthetic_slides):
    import shutil

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(synthetic_slides["glass"], tmp_path / "a" / "x.tiff")
    shutil.copy(synthetic_slides["glass"], tmp_path / "b" / "x.svs")
    results = tile_slides([tmp_path / "a" / "x.tiff", tmp_path / "b" / "x.svs"], tmp_path / "o",
                          fast_params, progress=False)
    assert [r.code for r in results] == ["duplicate-slide-id"] * 2


def test_the_manifest_keeps_the_tissue_mask_that_stitching_reads(synthetic_slides, fast_params, tmp_path):
    """Tiling stores its tissue mask in the manifest; stitched segmentation reads that mask instead
    of segmenting the slide again, and gets what segmenting again gives (the fallback for
    manifests written before the mask was kept). A damaged mask is an error naming the manifest."""
    from pathkit_core.wsi.manifest import read_manifest_meta
    from pathkit_core.wsi.masks import unpack_mask
    from pathkit_core.wsi.segmentation import segment_slide
    from pathkit_core.wsi.slide import open_slide
    from pathkit_core.wsi.tiling import tile_slide
    from pathkit_tasks.segmentation.task import _tissue, slide_geometry

    slide = synthetic_slides["pen"]
    result = tile_slide(slide, tmp_path / "tiles", fast_params)
    meta = read_manifest_meta(result.manifest_path)
    with open_slide(slide) as s:
        _thumb, mask, mds_x, mds_y = segment_slide(s, fast_params)
    kept = unpack_mask(meta["tissue_mask"], "manifest")
    np.testing.assert_array_equal(kept, mask.tissue)
    assert mask.pen.any() and mask.tissue.any() and not mask.tissue.all()  # a mask worth comparing

    features = tmp_path / "f.safetensors"
    import torch

    from pathkit_core.features.store import write_features

    write_features(features, torch.zeros(1, 4), torch.zeros(1, 2, dtype=torch.int64),
                   {"slide_id": "pen", "manifest_path": str(result.manifest_path), "tile_px": "64"})
    geo = slide_geometry(features)
    read, downsample = _tissue(geo)
    np.testing.assert_array_equal(read, mask.tissue)
    assert downsample == (mds_x, mds_y)
    again, again_ds = _tissue({**geo, "tissue_mask": None})  # an older manifest: segmented again
    np.testing.assert_array_equal(again, mask.tissue)
    assert again_ds == downsample
    damaged = {**geo, "tissue_mask": {**meta["tissue_mask"], "bits": "AAAA"}}
    with pytest.raises(PathkitError, match="tissue_mask: .*packed mask"):
        _tissue(damaged)
