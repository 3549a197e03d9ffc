"""Pyramidal mask TIFFs: OpenSlide opens them as generic-tiff with the slide's geometry and mpp,
and every level holds the cell under each pixel's centre."""

from __future__ import annotations

import numpy as np
import pytest

from pathkit_tasks.segmentation.mask_tiff import level_sizes, write_mask_tiff


def test_mask_tiff_opens_in_openslide_at_the_slides_geometry(tmp_path):
    import openslide

    cells = np.zeros((20, 30), dtype=np.uint8)
    cells[5:10, 5:20] = 1
    cells[12:15, 2:4] = 3
    path = write_mask_tiff(tmp_path / "classes.tiff", cells, cell0=100.0, slide_size=(2950, 1990), slide_mpp=0.25,
                           colours=[(255, 0, 0), (0, 255, 0), (0, 0, 255)], description="pathkit test")
    with openslide.OpenSlide(str(path)) as slide:
        assert slide.properties["openslide.vendor"] == "generic-tiff"
        assert slide.dimensions == (2950, 1990)
        assert float(slide.properties["openslide.mpp-x"]) == pytest.approx(0.25)
        assert slide.level_dimensions == tuple((w, h) for w, h, _ in level_sizes(2950, 1990))
        pixel = lambda x, y, level=0: tuple(np.asarray(slide.read_region((x, y), level, (1, 1)))[0, 0, :3])  # noqa: E731
        assert pixel(550, 550) == (255, 0, 0)  # cell (5, 5): class 1
        assert pixel(250, 1250) == (0, 0, 255)  # cell (12, 2): class 3
        assert pixel(10, 10) == (255, 255, 255)  # value 0: white
        assert pixel(1000, 800, 2) == (255, 0, 0)  # a reduced level: the same place
    binary = write_mask_tiff(tmp_path / "mask.tiff", np.where(cells == 1, 255, 0), cell0=100.0,
                             slide_size=(2950, 1990), slide_mpp=0.25)
    with openslide.OpenSlide(str(binary)) as slide:
        assert slide.dimensions == (2950, 1990)
        assert np.asarray(slide.read_region((550, 550), 0, (1, 1)))[0, 0, 0] == 255
        assert np.asarray(slide.read_region((2900, 1950), 0, (1, 1)))[0, 0, 0] == 0


def test_levels_halve_down_to_one_tile():
    sizes = level_sizes(100_000, 60_000)
    assert sizes[0] == (100_000, 60_000, 1) and max(sizes[-1][:2]) <= 256 and sizes[1][2] == 2


@pytest.mark.parametrize("cell0", [100.0, 224.0, 37.5])
def test_every_level_holds_the_cell_under_each_pixel_centre(tmp_path, cell0):
    """Every pixel of every level against the direct rule (cell = floor((pixel + 0.5) * downsample
    / cell0), clipped to the map), on a random class map whose borders cut tiles at every offset;
    pixels past the image edge of a border tile are 0."""
    import tifffile

    rng = np.random.default_rng(int(cell0))
    cells = rng.integers(0, 4, size=(23, 31)).astype(np.uint8)
    cells[5:15, 5:20] = 2  # a region spanning many tiles: uniform tiles beside mixed ones
    size = (int(31 * cell0) - 7, int(23 * cell0) - 3)
    path = write_mask_tiff(tmp_path / "m.tiff", cells, cell0=cell0, slide_size=size, slide_mpp=0.5)
    with tifffile.TiffFile(path) as tif:
        pages = list(tif.pages)
        assert len(pages) == len(level_sizes(*size))
        for page, (w, h, d) in zip(pages, level_sizes(*size), strict=True):
            rows = np.minimum(((np.arange(h) + 0.5) * d / cell0).astype(np.int64), cells.shape[0] - 1)
            cols = np.minimum(((np.arange(w) + 0.5) * d / cell0).astype(np.int64), cells.shape[1] - 1)
            np.testing.assert_array_equal(page.asarray(), cells[rows[:, None], cols[None, :]])


def test_runs_of_identical_tiles_share_their_bytes(tmp_path):
    """Background and the inside of a region are runs of identical tiles: stored once per run
    (offsets repeat), and every tile still reads back as the cells under it."""
    import tifffile

    cells = np.zeros((40, 40), dtype=np.uint8)
    cells[10:30, 10:30] = 1
    path = write_mask_tiff(tmp_path / "m.tiff", cells, cell0=64.0, slide_size=(2560, 2560), slide_mpp=0.5)
    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        assert len(page.dataoffsets) == 100 and len(set(page.dataoffsets)) < 40
        rows = np.minimum(((np.arange(2560) + 0.5) / 64.0).astype(np.int64), 39)
        np.testing.assert_array_equal(page.asarray(), cells[rows[:, None], rows[None, :]])
