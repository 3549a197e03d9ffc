"""The segmentation overlay: which pyramid level it is drawn on, and its colours."""

from __future__ import annotations

import numpy as np

from pathkit_core.wsi.masks import MaskFrame
from pathkit_tasks.segmentation.overlay import ALPHA, OUTLINE, draw_overlay
from pathkit_tasks.segmentation.task import OVERLAY_MIN_PX, overlay_level


def test_the_overlay_is_the_coarsest_level_long_enough_read_as_stored():
    halving = [(30000, 20000), (15000, 10000), (7500, 5000), (3750, 2500), (1875, 1250), (938, 625), (469, 313)]
    assert overlay_level(halving) == 5  # 938 px, read as stored, no resampling
    assert overlay_level([(46000, 32914), (11500, 8228), (2875, 2057)]) is None  # resampled to 1,024 px
    assert overlay_level([(600, 400)]) == 0  # a small slide: level 0
    assert overlay_level([(5000, 5000), (OVERLAY_MIN_PX, OVERLAY_MIN_PX), (300, 300)]) == 1


def test_overlay_colours_blend_at_alpha_and_outline_the_foreground():
    thumb = np.full((8, 8, 3), 200, dtype=np.uint8)
    thumb[:, :, 2] = 10
    labels = np.array([[0, 1], [2, 2]], dtype=np.uint8)  # cells of 4 x 4 thumbnail pixels
    fg = np.zeros((2, 2), dtype=bool)
    colours = [(220, 30, 30), (40, 110, 230)]
    out = draw_overlay(thumb, MaskFrame(8, 8, 1.0, 1.0), labels, fg, MaskFrame(2, 2, 4.0, 4.0), colours)
    assert (out[:4, :4] == thumb[:4, :4]).all()  # label 0: the thumbnail as it is
    for (y, x), colour in (((0, 6), colours[0]), ((6, 2), colours[1])):
        expected = (1 - ALPHA) * thumb[y, x].astype(float) + ALPHA * np.array(colour)
        assert np.abs(out[y, x].astype(float) - expected).max() <= 1.0
    fg[1, :] = True
    outlined = draw_overlay(thumb, MaskFrame(8, 8, 1.0, 1.0), labels, fg, MaskFrame(2, 2, 4.0, 4.0), colours)
    assert tuple(outlined[4, 0]) == OUTLINE and tuple(outlined[0, 0]) == (200, 200, 10)
