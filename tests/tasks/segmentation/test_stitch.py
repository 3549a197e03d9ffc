"""Stitching: cell grids of the tiling, average and Gaussian blending (MONAI's importance map), edges,
window weights, foreground and class maps, and a map's memory at 100,000 px."""

from __future__ import annotations

import numpy as np
import pytest

from pathkit_core.contracts import PathkitError
from pathkit_tasks.segmentation.stitch import (
    GAUSSIAN_FLOOR,
    ProbabilityMap,
    StitchGrid,
    class_map,
    foreground_mask,
    tissue_cells,
    window_weights,
)


def grid(width0=40, height0=20, tile_px=20, stride_px=10, window0=20.0, subdivide=1):
    return StitchGrid.for_tiling((width0, height0), tile_px=tile_px, stride_px=stride_px, window0=window0,
                                 slide_mpp=0.5, subdivide=subdivide)


def test_average_is_the_mean_of_the_windows_over_each_cell():
    g = grid()
    assert (g.cell0, g.span, g.step, g.width, g.height) == (10.0, 2, 1, 4, 2)
    stitched = ProbabilityMap(g, 2)
    coords = np.array([[0, 0], [10, 0], [20, 0]])
    probs = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    stitched.add(coords[:2], probs[:2])  # windows may come in chunks
    stitched.add(coords[2:], probs[2:])
    cells, covered = stitched.finish()
    assert covered.all()
    assert cells[0, 0].tolist() == [1.0, 0.0]  # one window: the slide's left edge
    assert cells[0, 1].tolist() == [0.5, 0.5]  # windows 0 and 1
    assert cells[1, 2].tolist() == [0.25, 0.75]  # windows 1 and 2
    assert cells[0, 3].tolist() == [0.5, 0.5]  # the last window alone at the right edge
    assert stitched.n_windows == 3


def test_uncovered_cells_and_windows_past_the_edge():
    g = grid(width0=35, height0=15)
    stitched = ProbabilityMap(g, 2)
    # a padded window at x=20 reaches past the 35 px slide: its cells beyond the map are dropped
    stitched.add(np.array([[20, 0]]), np.array([[0.2, 0.8]]))
    cells, covered = stitched.finish()
    assert (g.width, g.height) == (4, 2)
    assert covered.tolist() == [[False, False, True, True], [False, False, True, True]]
    assert cells[~covered].sum() == 0
    with pytest.raises(PathkitError, match=r"\(windows, 2\) probabilities"):
        stitched.add(np.array([[0, 0]]), np.array([[1.0, 0.0, 0.0]]))


def test_cells_are_the_gcd_of_window_and_stride():
    g = StitchGrid.for_tiling((10_000, 10_000), tile_px=224, stride_px=168, window0=448.0)  # 25 % overlap
    assert (g.cell0, g.span, g.step) == (112.0, 4, 3)
    assert g.stride0 == 336.0
    assert StitchGrid.for_tiling((10, 10), tile_px=224, stride_px=224, window0=448.0).span == 1
    with pytest.raises(PathkitError, match="stride"):
        StitchGrid.for_tiling((10, 10), tile_px=224, stride_px=300, window0=448.0)
    # window positions round(i * stride0) come back as grid positions exactly
    odd = StitchGrid.for_tiling((10_000, 10_000), tile_px=256, stride_px=128, window0=256 * 1.0107)
    xs = np.round(np.arange(40) * odd.stride0)
    cols, _ = odd.window_cells(np.c_[xs, xs])
    assert cols.tolist() == list(range(40))


def test_gaussian_weights_follow_monai():
    w = window_weights(8, "gaussian")
    offsets = (np.arange(8) + 0.5 - 4) / (0.125 * 8)
    g = np.exp(-0.5 * offsets**2)
    assert np.allclose(w, np.maximum(np.outer(g, g), GAUSSIAN_FLOOR))
    assert w.min() >= GAUSSIAN_FLOOR and w[3, 3] == w.max()
    # at 50 % overlap with stride cells the four cells of a window are equidistant: both modes agree
    assert np.allclose(window_weights(2, "gaussian"), window_weights(2, "gaussian")[0, 0])
    with pytest.raises(PathkitError, match="blend 'median'"):
        window_weights(2, "median")


def test_blending_leaves_no_seams_and_gaussian_favours_window_centres():
    g = grid(width0=80, height0=80, subdivide=2)  # 4 x 4 cells per window, stride 2 cells
    xs = np.arange(0, 61, 10)
    coords = np.array([(x, y) for y in xs for x in xs])
    flat = np.tile([0.3, 0.7], (len(coords), 1))
    for blend in ("average", "gaussian"):
        stitched = ProbabilityMap(g, 2, blend)
        stitched.add(coords, flat)
        cells, covered = stitched.finish()
        assert covered.all() and np.allclose(cells, [0.3, 0.7])  # a constant field stays constant: no seams
    one = np.zeros((len(coords), 2))
    one[:, 0] = 1.0
    one[len(coords) // 2] = (0.0, 1.0)  # the window at (30, 30): cells 6..9
    maps = {}
    for blend in ("average", "gaussian"):
        stitched = ProbabilityMap(g, 2, blend)
        stitched.add(coords, one)
        maps[blend] = stitched.finish()[0][..., 1]
    # the odd window's centre cells weigh more under the Gaussian, its border cells less
    assert maps["gaussian"][7, 7] > maps["average"][7, 7]
    assert maps["gaussian"][6, 6] < maps["average"][6, 6]


def test_window_weights_scale_their_contribution():
    stitched = ProbabilityMap(grid(), 2)
    stitched.add(np.array([[0, 0], [10, 0]]), np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.25, 1.0]))
    cells, _ = stitched.finish()
    assert cells[0, 1].tolist() == pytest.approx([0.2, 0.8])
    with pytest.raises(PathkitError, match="window weights"):
        stitched.add(np.array([[0, 0]]), np.array([[1.0, 0.0]]), np.array([1.0, 1.0]))


def test_foreground_class_map_and_tissue_cells():
    probs = np.array([[[0.6, 0.4], [0.45, 0.55]], [[0.2, 0.8], [0.9, 0.1]]], dtype=np.float32)
    covered = np.array([[True, True], [True, False]])
    tissue = np.array([[True, True], [False, True]])
    assert foreground_mask(probs, covered, tissue, 0).tolist() == [[True, False], [False, False]]
    assert foreground_mask(probs, covered, None, 0, threshold=0.3).tolist() == [[True, True], [False, False]]
    assert class_map(probs, covered, tissue).tolist() == [[1, 2], [0, 0]]
    g = grid(width0=40, height0=20)
    mask = np.zeros((10, 20), dtype=bool)  # mask at downsample 2: cells are 5 x 5 mask pixels
    mask[:, :10] = True
    mask[:, 10:13] = True  # 3 of 5 columns of cell 2: 60 %
    got = tissue_cells(mask, (2.0, 2.0), g)
    assert got.tolist() == [[True, True, True, False], [True, True, True, False]]
    assert tissue_cells(mask, (2.0, 2.0), g, 0.7).tolist() == [[True, True, False, False]] * 2


@pytest.mark.parametrize("downsample,cell0", [(2.0, 10.0), (4.0, 8.0), (1.0, 3.0), (3.0, 7.5), (2.5, 10.0)])
def test_tissue_cells_are_the_exact_area_fractions(downsample, cell0):
    """Whole blocks of mask pixels (counted) and other cells (summed-area table) alike: each cell's
    tissue share is the exact area of its rectangle on the mask, partial cells past the mask's edge
    count the missing part as glass."""
    from pathkit_core.wsi.tiling import tissue_fractions

    rng = np.random.default_rng(int(cell0 * downsample))
    mask = rng.random((23, 31)) < 0.6
    g = StitchGrid(int(31 * downsample) + 5, int(23 * downsample) - 3, cell0, 2, 1)
    cols, rows = np.meshgrid(np.arange(g.width), np.arange(g.height))
    side = cell0 / downsample
    frac = tissue_fractions(mask, cols.ravel() * side, rows.ravel() * side, side, side).reshape(g.height, g.width)
    for share in (0.5, 0.25, 1.0):
        expected = (frac >= share - 1e-9) & (frac > 0)
        np.testing.assert_array_equal(tissue_cells(mask, (downsample, downsample), g, share), expected)
    # by hand, one whole block: cell (0, 0) is the mask's top-left side x side block
    if side.is_integer():
        block = mask[:int(side), :int(side)].mean()
        assert tissue_cells(mask, (downsample, downsample), g, block)[0, 0]
        assert not tissue_cells(mask, (downsample, downsample), g, block + 1e-6)[0, 0]


def test_a_100k_px_slide_map_is_a_few_megabytes():
    g = StitchGrid.for_tiling((100_000, 100_000), tile_px=224, stride_px=112, window0=448.0, slide_mpp=0.25)
    stitched = ProbabilityMap(g, 7)
    megabytes = (stitched.total.nbytes + stitched.weight.nbytes) / 2**20
    assert (g.width, g.height) == (447, 447) and megabytes < 8
