"""QC thumbnail: the slide overview with the tissue contour, removed pen ink and the tile grid."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pathkit_core.workspace import atomic_write_with

if TYPE_CHECKING:
    import numpy as np
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
    import numpy as np

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
    import numpy as np

    img = thumb.rgb.copy()
    shape = thumb.shape
    line = max(1, round(max(shape) / 1000))
    if mask.pen is not None and mask.pen.any():
        pen = _upsample_nearest(mask.pen, shape)
        img[pen] = (img[pen].astype(np.uint16) + np.array(PEN_TINT, dtype=np.uint16)) // 2
    if tiles.height:
        xs = tiles["x"].to_numpy() / thumb.downsample_x
        ys = tiles["y"].to_numpy() / thumb.downsample_y
        w = max(1, int(round(geometry.size0 / thumb.downsample_x)))
        h = max(1, int(round(geometry.size0 / thumb.downsample_y)))
        x0 = np.clip(np.round(xs).astype(np.int64), 0, shape[1] - 1)
        y0 = np.clip(np.round(ys).astype(np.int64), 0, shape[0] - 1)
        x1 = np.clip(x0 + w - 1, 0, shape[1] - 1)
        y1 = np.clip(y0 + h - 1, 0, shape[0] - 1)
        span_x = np.arange(w)
        span_y = np.arange(h)
        colour = np.array(TILE_OUTLINE, dtype=np.uint8)
        hx = np.clip(x0[:, None] + span_x[None, :], 0, shape[1] - 1)
        vy = np.clip(y0[:, None] + span_y[None, :], 0, shape[0] - 1)
        img[np.broadcast_to(y0[:, None], hx.shape), hx] = colour
        img[np.broadcast_to(y1[:, None], hx.shape), hx] = colour
        img[vy, np.broadcast_to(x0[:, None], vy.shape)] = colour
        img[vy, np.broadcast_to(x1[:, None], vy.shape)] = colour
    if mask.tissue.any():
        tissue = _upsample_nearest(mask.tissue, shape)
        img[_outline(tissue, line + 1)] = TISSUE_CONTOUR
    return img


def render_qc(
    thumb: Thumbnail, mask: TissueMask, tiles: pl.DataFrame, geometry: TileGeometry, path: str | Path
) -> Path:
    """Write the QC thumbnail PNG atomically."""
    from PIL import Image

    img = Image.fromarray(draw_qc(thumb, mask, tiles, geometry))
    return atomic_write_with(
        Path(path), lambda tmp: img.save(tmp, format="PNG", compress_level=1, compress_type=_Z_RLE)
    )
