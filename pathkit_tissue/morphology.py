"""Binary morphology of tissue masks by shifted logical operations: the same results as
scikit-image's `opening` / `closing` with `disk(r, decomposition="sequence")` and SciPy's
`binary_fill_holes`, several times faster on boolean thumbnails.

scikit-image treats a boolean mask as a grey image (`scipy.ndimage.grey_erosion` / `grey_dilation`,
borders reflected, a generic footprint loop per pixel). Here every pass of a small footprint is
the AND (erosion) or OR (dilation) of the mask shifted to each footprint offset, over a copy
padded the same way (SciPy's "reflect" is numpy's "symmetric"); the footprints and their order
are scikit-image's own. tests/core/wsi/test_morphology.py compares every function with the
library call it stands for.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


@functools.cache
def disk_sequence(radius: int) -> tuple[tuple[Any, int], ...]:
    """scikit-image's decomposition of `disk(radius)` into (3 x 3 footprint, repeats) steps."""
    from skimage.morphology import disk

    return tuple((fp.astype(bool), int(n)) for fp, n in disk(max(1, int(radius)), decomposition="sequence"))


def _offsets(footprint: np.ndarray, mirror: bool) -> list[tuple[int, int]]:
    import numpy as np

    centre = np.array(footprint.shape) // 2
    out = [tuple(int(v) for v in (k - centre)) for k in np.argwhere(footprint)]
    return [(-dy, -dx) for dy, dx in out] if mirror else out


def _pass(mask: np.ndarray, offsets: list[tuple[int, int]], erode: bool, pad_mode: str) -> np.ndarray:
    """One footprint pass: out[y, x] = AND (erode) or OR over offsets of mask[y + dy, x + dx]."""
    import numpy as np

    r = max(max(abs(dy), abs(dx)) for dy, dx in offsets)
    h, w = mask.shape
    padded = np.pad(mask, r, mode=pad_mode) if pad_mode == "symmetric" else \
        np.pad(mask, r, mode="constant", constant_values=False)
    combine = np.logical_and if erode else np.logical_or
    (dy, dx), rest = offsets[0], offsets[1:]
    out = padded[r + dy:r + dy + h, r + dx:r + dx + w].copy()
    for dy, dx in rest:
        combine(out, padded[r + dy:r + dy + h, r + dx:r + dx + w], out=out)
    return out


def _sequence(mask: np.ndarray, steps: tuple[tuple[Any, int], ...], erode: bool, mirror: bool) -> np.ndarray:
    for footprint, repeats in steps:
        offsets = _offsets(footprint, mirror)
        for _ in range(repeats):
            mask = _pass(mask, offsets, erode, "symmetric")
    return mask


def binary_opening(mask: np.ndarray, radius: int) -> np.ndarray:
    """= skimage.morphology.opening(mask, disk(radius, decomposition="sequence"))."""
    import numpy as np

    steps = disk_sequence(radius)
    mask = np.asarray(mask, dtype=bool)
    return _sequence(_sequence(mask, steps, erode=True, mirror=False), steps, erode=False, mirror=True)


def binary_closing(mask: np.ndarray, radius: int) -> np.ndarray:
    """= skimage.morphology.closing(mask, disk(radius, decomposition="sequence"))."""
    import numpy as np

    steps = disk_sequence(radius)
    mask = np.asarray(mask, dtype=bool)
    return _sequence(_sequence(mask, steps, erode=False, mirror=False), steps, erode=True, mirror=True)


def fill_holes(mask: np.ndarray) -> np.ndarray:
    """= scipy.ndimage.binary_fill_holes(mask): background not 4-connected to the image border
    becomes foreground. One labelling of the background instead of SciPy's propagation from the
    border, which sweeps the image until nothing changes."""
    import numpy as np
    from scipy import ndimage as ndi

    mask = np.asarray(mask, dtype=bool)
    if mask.size == 0:
        return mask.copy()
    labels, n = ndi.label(~mask)  # SciPy's default structure: 4-connectivity, as binary_fill_holes'
    outside = np.zeros(n + 1, dtype=bool)  # a lookup per label: no sort of the whole image (np.isin)
    outside[np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]])] = True
    outside[0] = False
    return ~outside[labels]
