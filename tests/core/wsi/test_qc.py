"""The QC thumbnail (pathkit_core.wsi.qc): contour outline and the PNG written."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from scipy.ndimage import binary_erosion

from pathkit_core.wsi.qc import _outline, draw_qc, render_qc


@pytest.mark.parametrize("shape", [(1, 1), (1, 6), (2, 2), (9, 7), (48, 33)])
@pytest.mark.parametrize("width", [1, 2, 3])
def test_outline_is_scipys_erosion_edge(shape, width):
    rng = np.random.default_rng(shape[0] * 10 + width)
    for density in (0.3, 0.8, 1.0):
        mask = rng.random(shape) < density
        assert np.array_equal(_outline(mask, width), mask & ~binary_erosion(mask, iterations=width))


def test_the_qc_png_holds_the_drawn_image_exactly(tmp_path, synthetic_slides, fast_params):
    from pathkit_core.wsi.segmentation import segment_slide
    from pathkit_core.wsi.slide import open_slide
    from pathkit_core.wsi.tiling import choose_geometry, plan_grid

    with open_slide(synthetic_slides["pen"]) as slide:
        thumb, mask, mdx, mdy = segment_slide(slide, fast_params)
        geometry = choose_geometry(slide.mpp, slide.level_downsamples, fast_params)
        tiles = plan_grid(slide.dimensions, geometry, mask.tissue, (mdx, mdy), fast_params.min_tissue_fraction)
    assert tiles.height and mask.pen is not None and mask.pen.any()
    drawn = draw_qc(thumb, mask, tiles, geometry)
    path = render_qc(thumb, mask, tiles, geometry, tmp_path / "s.qc.png")
    with Image.open(path) as img:
        assert img.format == "PNG" and np.array_equal(np.asarray(img.convert("RGB")), drawn)
