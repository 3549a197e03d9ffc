"""Segmentation overlay: the slide thumbnail with the class map blended in and the foreground outlined."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pathkit_core.workspace import atomic_write_with
from pathkit_core.wsi.masks import MaskFrame
from pathkit_sdk.masks import resample

if TYPE_CHECKING:
    import numpy as np

# One colour per class in class order (distinct on H&E; the first is the foreground's red when the
# foreground is the first class, as HepatoBench's TUM).
CLASS_COLOURS: tuple[tuple[int, int, int], ...] = (
    (220, 30, 30), (40, 110, 230), (40, 170, 60), (60, 60, 60), (240, 150, 200), (250, 200, 20),
    (150, 230, 240), (150, 80, 200), (230, 120, 30), (0, 140, 140),
)
OUTLINE = (120, 0, 0)
ALPHA = 0.45


def class_colours(n: int) -> list[tuple[int, int, int]]:
    return [CLASS_COLOURS[i % len(CLASS_COLOURS)] for i in range(n)]


def draw_overlay(thumbnail: np.ndarray, thumb_frame: MaskFrame, labels: np.ndarray, foreground: np.ndarray,
                 cell_frame: MaskFrame, colours: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """RGB uint8 at the thumbnail's size: class colours over the tissue at `ALPHA`, the foreground
    region's outline on top. `labels` and `foreground` lie on `cell_frame`."""
    import numpy as np

    from pathkit_core.wsi.qc import _outline

    lab = resample(labels, cell_frame, thumb_frame)
    # integer blend in 256ths (ALPHA 0.45 -> 115/256, rounded): label 0 keeps the pixel as it is
    alpha = round(ALPHA * 256)
    colour = np.array([(0, 0, 0), *colours], dtype=np.uint16) * alpha + 128
    keep = np.array([256] + [256 - alpha] * len(colours), dtype=np.uint16)
    out = ((thumbnail.astype(np.uint16) * keep[lab][..., None] + colour[lab]) >> 8).astype(np.uint8)
    fg = resample(np.asarray(foreground, dtype=bool), cell_frame, thumb_frame)
    if fg.any():
        out[_outline(fg, max(1, round(max(fg.shape) / 400)))] = OUTLINE
    return out


def write_overlay(path: str | Path, image: np.ndarray) -> Path:
    from PIL import Image

    picture = Image.fromarray(image)
    return atomic_write_with(Path(path), lambda tmp: picture.save(tmp, format="PNG", compress_level=3))
