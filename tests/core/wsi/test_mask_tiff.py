"""Pyramidal mask TIFFs: OpenSlide opens them as generic-tiff with the slide's geometry and mpp,
and every level holds the cell under each pixel's centre."""

from __future__ import annotations

import numpy as np
import pytest

from pathkit_core.wsi.mask_tiff import level_sizes, write_mask_tiff


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
