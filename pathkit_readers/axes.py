"""A pyramid level stored as an n-dimensional array with named axes (OME-TIFF's "YXS", "CYX",
"TCZYX"; NGFF's t, c, z, y, x), read as (h, w, channels) windows: time and focus at their first
plane, channels last."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# Axis letters for samples (RGB interleaved) and channels.
CHANNEL_AXES = frozenset("SC")


@dataclass
class AxesLevel:
    """`array` (zarr-like: `.shape`, numpy indexing) whose axes are the letters of `axes`."""

    array: Any
    axes: str

    def __post_init__(self) -> None:
        self.axes = self.axes.upper()
        if "Y" not in self.axes or "X" not in self.axes or len(self.axes) != len(self.array.shape):
            raise ValueError(f"axes {self.axes!r} do not describe an image of shape {tuple(self.array.shape)}")

    @property
    def width(self) -> int:
        return int(self.array.shape[self.axes.index("X")])

    @property
    def height(self) -> int:
        return int(self.array.shape[self.axes.index("Y")])

    def window(self, x: int, y: int, w: int, h: int) -> np.ndarray:
        import numpy as np

        index: list[Any] = []
        kept: list[str] = []
        for axis in self.axes:
            if axis == "Y":
                index.append(slice(y, y + h))
            elif axis == "X":
                index.append(slice(x, x + w))
            elif axis in CHANNEL_AXES:
                index.append(slice(None))
            else:
                index.append(0)  # the first time point and focal plane
                continue
            kept.append(axis)
        pixels = np.asarray(self.array[tuple(index)])
        channels = [a for a in kept if a in CHANNEL_AXES]
        order = [kept.index("Y"), kept.index("X"), *(kept.index(a) for a in channels)]
        pixels = np.transpose(pixels, order)
        if len(channels) > 1:  # planar channels of interleaved samples: flatten into one channel axis
            pixels = pixels.reshape(pixels.shape[0], pixels.shape[1], -1)
        return pixels if channels else pixels[..., None]
