"""The Otsu segmenter's shortcuts (pathkit_tissue.otsu): the same values as the long way."""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

from pathkit_core.wsi.params import TilingParams
from pathkit_tissue.otsu import PEN_HUE_MIN_SATURATION, OtsuTissueSegmenter, hsv_channels


def test_hue_of_the_saturated_pixels_only_is_the_full_conversion_there():
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(60, 70, 3), dtype=np.uint8)
    full_hue, sat, val = hsv_channels(rgb)
    hue, sat2, val2 = hsv_channels(rgb, hue_min_saturation=PEN_HUE_MIN_SATURATION)
    some = sat >= PEN_HUE_MIN_SATURATION
    assert 0 < some.sum() < some.size
    assert np.array_equal(hue[some], full_hue[some]) and not hue[~some].any()
    assert np.array_equal(sat, sat2) and np.array_equal(val, val2)
    grey = np.full((4, 5, 3), 128, dtype=np.uint8)  # nothing saturated: no conversion at all
    assert not hsv_channels(grey, hue_min_saturation=0.25)[0].any()


def test_region_and_hole_counts_are_those_of_the_final_mask():
    yy, xx = np.mgrid[:200, :300]

    def disc(cy, cx, r):
        return (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r

    img = np.empty((200, 300, 3), np.uint8)
    img[...] = (242, 241, 245)  # glass
    pink = (222, 140, 190)
    for cy, cx, r in ((60, 80, 40), (150, 220, 30), (20, 280, 1)):  # two regions and a speck
        img[disc(cy, cx, r)] = pink
    img[disc(60, 80, 3)] = img[disc(150, 225, 2)] = (242, 241, 245)  # two pinholes
    params = TilingParams(open_radius_um=0, close_radius_um=0, blur_sigma_um=0)
    mask = OtsuTissueSegmenter(params).segment(img, 4.0)
    # the speck is under min_region_area_mm2 (625 px at 4 um/px) and dropped, the pinholes under
    # min_hole_area_mm2 and filled
    assert mask.info["regions"] == ndi.label(mask.tissue)[1] == 2
    assert mask.info["holes_filled"] == 2 and not (ndi.binary_fill_holes(mask.tissue) & ~mask.tissue).any()
