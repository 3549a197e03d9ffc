"""QC thumbnail: the slide overview with the tissue contour, removed pen ink and the tile grid (docs/wsi.md,
section 3)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from pathkit_core.workspace import atomic_write_with

if TYPE_CHECKING:
    import polars as pl

    from pathkit_core.wsi.params import TileGeometry
    from pathkit_core.wsi.segmentation import Thumbnail, TissueMask

TISSUE_CONTOUR = (0, 200, 0)
PEN_TINT = (255, 0, 255)
TILE_OUTLINE = (20, 60, 255)
# zlib's run-length strategy: the QC image is mostly flat glass and lines, which it encodes 1.6x
# faster than the default strategy and smaller on real slides too (docs/benchmarks.md).
_Z_RLE = 3


def _upsample_nearest(mask: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    h, w = shape
    if mask.shape == (h, w):
        return mask
    rows = np.minimum((np.arange(h) * mask.shape[0] / h).astype(np.int64), mask.shape[0] - 1)
    cols = np.minimum((np.arange(w) * mask.shape[1] / w).astype(np.int64), mask.shape[1] - 1)
    return mask[rows[:, None], cols[None, :]]


def _outline(mask: np.ndarray, width: int) -> np.ndarray:
    """The pixels of `mask` within `width` 4-connected steps of its edge or the image border:
    `mask & ~scipy.ndimage.binary_erosion(mask, iterations=width)`, by shifted ANDs."""
    inner = mask
    for _ in range(width):
        step = inner.copy()
        step[1:] &= inner[:-1]
        step[:-1] &= inner[1:]
        step[:, 1:] &= inner[:, :-1]
        step[:, :-1] &= inner[:, 1:]
        step[[0, -1], :] = False  # outside the image counts as background (SciPy's border_value=0)
        step[:, [0, -1]] = False
        inner = step
    return mask & ~inner


def draw_qc(thumb: Thumbnail, mask: TissueMask, tiles: pl.DataFrame, geometry: TileGeometry) -> np.ndarray:
    """The QC image as an RGB uint8 array (thumbnail size)."""
    img = thumb.rgb.copy()
    height, width = shape = thumb.shape
    if mask.pen is not None and mask.pen.any():
        pen = _upsample_nearest(mask.pen, shape)
        img[pen] = (img[pen].astype(np.uint16) + np.array(PEN_TINT, dtype=np.uint16)) // 2
    if tiles.height:
        w = max(1, round(geometry.size0 / thumb.downsample_x))
        h = max(1, round(geometry.size0 / thumb.downsample_y))
        x0 = np.clip(np.round(tiles["x"].to_numpy() / thumb.downsample_x).astype(np.int64), 0, width - 1)[:, None]
        y0 = np.clip(np.round(tiles["y"].to_numpy() / thumb.downsample_y).astype(np.int64), 0, height - 1)[:, None]
        x1, y1 = np.minimum(x0 + w - 1, width - 1), np.minimum(y0 + h - 1, height - 1)
        across, down = np.minimum(x0 + np.arange(w), width - 1), np.minimum(y0 + np.arange(h), height - 1)
        for rows, cols in ((y0, across), (y1, across), (down, x0), (down, x1)):  # top, bottom, left, right
            img[rows, cols] = TILE_OUTLINE
    if mask.tissue.any():
        img[_outline(_upsample_nearest(mask.tissue, shape), max(1, round(max(shape) / 1000)) + 1)] = TISSUE_CONTOUR
    return img


def render_qc(thumb: Thumbnail, mask: TissueMask, tiles: pl.DataFrame, geometry: TileGeometry,
              path: str | Path) -> Path:
    """Write the QC thumbnail PNG atomically."""
    img = Image.fromarray(draw_qc(thumb, mask, tiles, geometry))
    return atomic_write_with(Path(path), lambda tmp: img.save(tmp, format="PNG", compress_level=1,
                                                              compress_type=_Z_RLE))
