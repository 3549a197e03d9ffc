"""Stitching sliding-window class probabilities into a per-slide map on a regular grid.

Windows of `tile_px` output pixels every `stride_px` (TilingParams) tile the slide; the map's cells
are `gcd(tile_px, stride_px) / subdivide` output pixels wide (the stride itself at 50 % or no
overlap), so every window covers whole cells. Each cell is the weighted mean of the windows over
it: "average" weighs them equally (TIAToolbox's sum / count), "gaussian" by MONAI's importance map
(a Gaussian centred on the window, sigma = 0.125 of the window, floored at 1e-3) taken at the cell
centres. Windows stream in (`ProbabilityMap.add`), so memory holds the map, never the windows: a
100,000 px slide at 224 level-0 px per cell is 447 x 447 cells, 5.6 MB for seven classes.
docs/segmentation.md says which anchor each choice follows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.masks import MaskFrame

if TYPE_CHECKING:
    import numpy as np

BLEND_MODES = ("average", "gaussian")
# MONAI sliding_window_inference: sigma_scale 0.125; weights floored at 1e-3 (compute_importance_map).
GAUSSIAN_SIGMA_SCALE = 0.125
GAUSSIAN_FLOOR = 1e-3


@dataclass(frozen=True)
class StitchGrid:
    """Where windows and cells lie on a slide of `width0` x `height0` level-0 pixels.

    A window is `span` cells wide and windows start every `step` cells; a cell is `cell0` level-0
    pixels (`mpp` micrometres when the slide's mpp is known). The window at level-0 (x, y) starts
    at cell (round(x / stride0) * step, round(y / stride0) * step): tiling places window i at
    round(i * stride0), so the rounding recovers i exactly.
    """

    width0: int
    height0: int
    cell0: float
    span: int
    step: int
    slide_mpp: float | None = None

    @classmethod
    def for_tiling(cls, slide_size: tuple[int, int], *, tile_px: int, stride_px: int, window0: float,
                   slide_mpp: float | None = None, subdivide: int = 1) -> StitchGrid:
        """The grid of windows of `tile_px` output px (`window0` level-0 px) every `stride_px`."""
        if stride_px < 1 or tile_px < 1 or stride_px > tile_px:
            raise PathkitError(f"stitching needs 1 <= stride ({stride_px} px) <= window ({tile_px} px)")
        if subdivide < 1:
            raise PathkitError(f"subdivide {subdivide} must be a positive whole number")
        unit = math.gcd(int(tile_px), int(stride_px))
        scale = window0 / tile_px  # level-0 px per output px
        return cls(int(slide_size[0]), int(slide_size[1]), unit * scale / subdivide, tile_px // unit * subdivide,
                   stride_px // unit * subdivide, slide_mpp)

    @property
    def stride0(self) -> float:
        return self.cell0 * self.step

    @property
    def frame(self) -> MaskFrame:
        """The cells on the slide: whole cells of `cell0` level-0 px covering its extent."""
        return MaskFrame.over(self.width0, self.height0, self.cell0, self.slide_mpp)

    @property
    def width(self) -> int:
        return self.frame.width

    @property
    def height(self) -> int:
        return self.frame.height

    @property
    def mpp(self) -> float | None:
        return self.frame.mpp

    def window_cells(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(column, row) of the first cell of each window at level-0 `coords` (N, 2)."""
        import numpy as np

        coords = np.asarray(coords, dtype=np.float64).reshape(-1, 2)
        cols = np.round(coords[:, 0] / self.stride0).astype(np.int64) * self.step
        rows = np.round(coords[:, 1] / self.stride0).astype(np.int64) * self.step
        return cols, rows

    def as_dict(self) -> dict[str, Any]:
        return {"width0": self.width0, "height0": self.height0, "cell_px0": self.cell0, "span": self.span,
                "step": self.step, "width": self.width, "height": self.height, "mpp": self.mpp}


def window_weights(span: int, blend: str = "average") -> np.ndarray:
    """(span, span) weights of a window's cells: ones ("average") or MONAI's Gaussian importance
    at the cell centres ("gaussian"; at 50 % overlap with stride-sized cells the four cells of a
    window are equidistant from its centre, so both modes give the same map)."""
    import numpy as np

    if blend not in BLEND_MODES:
        raise PathkitError(f"blend {blend!r}: choose {' or '.join(BLEND_MODES)}")
    if blend == "average":
        return np.ones((span, span), dtype=np.float32)
    offsets = (np.arange(span) + 0.5 - span / 2.0) / (GAUSSIAN_SIGMA_SCALE * span)
    g = np.exp(-0.5 * offsets**2)
    return np.maximum(np.outer(g, g), GAUSSIAN_FLOOR).astype(np.float32)


class ProbabilityMap:
    """Running weighted sums of window probabilities per cell; windows arrive in any order and chunks."""

    def __init__(self, grid: StitchGrid, n_classes: int, blend: str = "average") -> None:
        import numpy as np

        self.grid = grid
        self.n_classes = int(n_classes)
        self.weights = window_weights(grid.span, blend)
        self.blend = blend
        self.total = np.zeros((grid.height, grid.width, self.n_classes), dtype=np.float32)
        self.weight = np.zeros((grid.height, grid.width), dtype=np.float32)
        self.n_windows = 0

    def add(self, coords: np.ndarray, probabilities: np.ndarray, window_weight: np.ndarray | None = None) -> None:
        """Add windows at level-0 `coords` (N, 2) with class `probabilities` (N, K), each weighed
        by `window_weight` (N,) besides the blending weights (e.g. its tissue fraction)."""
        import numpy as np

        probs = np.asarray(probabilities, dtype=np.float32)
        if probs.ndim != 2 or probs.shape[1] != self.n_classes:
            raise PathkitError(f"stitching expects (windows, {self.n_classes}) probabilities, got {probs.shape}")
        cols, rows = self.grid.window_cells(coords)
        if len(cols) != len(probs):
            raise PathkitError(f"stitching got {len(cols)} window positions for {len(probs)} probability rows")
        own = np.ones(len(probs), dtype=np.float32) if window_weight is None else \
            np.asarray(window_weight, dtype=np.float32).reshape(-1)
        if len(own) != len(probs):
            raise PathkitError(f"stitching got {len(own)} window weights for {len(probs)} windows")
        h, w = self.weight.shape
        for dy in range(self.grid.span):
            for dx in range(self.grid.span):
                rr, cc = rows + dy, cols + dx
                ok = (rr >= 0) & (rr < h) & (cc >= 0) & (cc < w)
                wt = self.weights[dy, dx] * own[ok]
                # window positions are distinct, so for one offset no two windows share a cell
                self.total[rr[ok], cc[ok]] += probs[ok] * wt[:, None]
                self.weight[rr[ok], cc[ok]] += wt
        self.n_windows += len(probs)

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(probabilities (H, W, K) float32, covered (H, W) bool); uncovered cells are zero."""
        import numpy as np

        covered = self.weight > 0
        out = np.zeros_like(self.total)
        np.divide(self.total, self.weight[..., None], out=out, where=covered[..., None])
        return out, covered


def tissue_cells(tissue: np.ndarray, mask_downsample: tuple[float, float], grid: StitchGrid,
                 min_fraction: float = 0.5) -> np.ndarray:
    """(H, W) bool: cells whose area is at least `min_fraction` tissue in the tiling's tissue mask
    (exact areas of the cell rectangles on the mask, as tiling measures windows)."""
    import numpy as np

    from pathkit_core.wsi.tiling import tissue_fractions

    mdx, mdy = mask_downsample
    fx, fy = grid.cell0 / mdx, grid.cell0 / mdy
    if fx.is_integer() and fy.is_integer() and fx >= 1 and fy >= 1:
        # cells are whole blocks of mask pixels (e.g. 224 level-0 px cells on a mask of 16):
        # count each block's tissue pixels; the same fractions as the exact areas below
        fx, fy = int(fx), int(fy)
        h, w = min(tissue.shape[0], grid.height * fy), min(tissue.shape[1], grid.width * fx)
        blocks = np.zeros((grid.height * fy, grid.width * fx), dtype=bool)
        blocks[:h, :w] = tissue[:h, :w]
        frac = blocks.reshape(grid.height, fy, grid.width, fx).sum(axis=(1, 3), dtype=np.int64) / float(fx * fy)
        return (frac >= min_fraction - 1e-9) & (frac > 0)
    cols, rows = np.meshgrid(np.arange(grid.width), np.arange(grid.height))
    frac = tissue_fractions(tissue, cols.ravel() * grid.cell0 / mdx, rows.ravel() * grid.cell0 / mdy,
                            grid.cell0 / mdx, grid.cell0 / mdy)
    return (frac >= min_fraction - 1e-9).reshape(grid.height, grid.width) & (frac.reshape(grid.height, grid.width) > 0)


def foreground_mask(probabilities: np.ndarray, covered: np.ndarray, tissue: np.ndarray | None, foreground: int,
                    threshold: float | None = None) -> np.ndarray:
    """Cells of class `foreground`: its probability above `threshold`, or (None) the argmax class,
    within the covered cells and the tissue."""
    import numpy as np

    if threshold is None:
        fg = probabilities.argmax(axis=-1) == foreground
    else:
        fg = probabilities[..., foreground] > float(threshold)
    fg &= covered
    if tissue is not None:
        fg &= tissue
    return np.asarray(fg, dtype=bool)


def class_map(probabilities: np.ndarray, covered: np.ndarray, tissue: np.ndarray | None) -> np.ndarray:
    """(H, W) uint8 labels: 0 where no window covers the cell or outside the tissue, else 1 + the
    argmax class."""
    import numpy as np

    labels = probabilities.argmax(axis=-1).astype(np.uint8) + 1
    keep = covered if tissue is None else covered & tissue
    return np.where(keep, labels, 0).astype(np.uint8)


__all__ = [
    "BLEND_MODES", "GAUSSIAN_SIGMA_SCALE", "GAUSSIAN_FLOOR", "StitchGrid", "window_weights", "ProbabilityMap",
    "tissue_cells", "foreground_mask", "class_map"
]
