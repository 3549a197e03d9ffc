"""The tissue-mask morphology against the library calls it stands for, pixel for pixel."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi
from skimage.morphology import closing, disk, opening

from pathkit_tissue.morphology import binary_closing, binary_opening, fill_holes


def blobby(shape, seed, density=0.5):
    """Masks with regions, holes, thin bridges, specks and tissue touching every border."""
    rng = np.random.default_rng(seed)
    noise = ndi.gaussian_filter(rng.random(shape), 2.0)
    mask = noise > np.quantile(noise, 1 - density)
    mask |= rng.random(shape) > 0.995  # specks
    mask[:, :2] |= rng.random((shape[0], 2)) > 0.5
    return mask


@pytest.mark.parametrize("radius", [1, 2, 3, 4, 5, 6, 9])
@pytest.mark.parametrize("seed", [0, 1])
def test_opening_and_closing_equal_scikit_image(radius, seed):
    mask = blobby((97, 131), seed)
    fp = disk(radius, decomposition="sequence")
    np.testing.assert_array_equal(binary_opening(mask, radius), opening(mask, fp))
    np.testing.assert_array_equal(binary_closing(mask, radius), closing(mask, fp))
    assert (binary_opening(mask, radius) != mask).any()  # the operation did something


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fill_holes_equals_scipy(seed):
    mask = blobby((80, 64), seed, density=0.6)
    filled = fill_holes(mask)
    np.testing.assert_array_equal(filled, ndi.binary_fill_holes(mask))
    assert (filled & ~mask).any()  # there were holes
    assert fill_holes(np.zeros((0, 3), dtype=bool)).shape == (0, 3)
    ring = np.zeros((5, 5), dtype=bool)
    ring[1:4, 1:4] = True
    ring[2, 2] = False
    assert fill_holes(ring)[2, 2] and not fill_holes(ring)[0, 0]
