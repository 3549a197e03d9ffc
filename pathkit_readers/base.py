"""What every slide reader shares: the OpenSlide-shaped handle (`ReaderHandle`) over a pyramid of
per-level arrays, the one-line error wording and the refusal of a file the library cannot read,
and the mpp found in metadata.

A reader builds a `ReaderHandle` from `Level`s (anything that returns an (h, w, channels) array for
a level-pixel window) plus its metadata; reading, bounds, glass padding and decode errors are
handled here once, so every format answers `read_rgb` the way `pathkit_core.wsi.slide.read_rgb`
answers for OpenSlide: RGB uint8, level-0 location, pixels beyond the slide white.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pathkit_core.contracts import SlideHandle
from pathkit_core.wsi.slide_errors import SlideError

if TYPE_CHECKING:
    import numpy as np

# Micrometres per unit, for the length units OME-XML (UnitsLength) and NGFF (UDUNITS-2 names) use.
MICROMETRES_PER = {
    "m": 1e6, "meter": 1e6, "metre": 1e6,
    "cm": 1e4, "centimeter": 1e4, "centimetre": 1e4,
    "mm": 1e3, "millimeter": 1e3, "millimetre": 1e3,
    "µm": 1.0, "um": 1.0, "μm": 1.0, "micrometer": 1.0, "micrometre": 1.0, "micron": 1.0,
    "nm": 1e-3, "nanometer": 1e-3, "nanometre": 1e-3,
    "å": 1e-4, "angstrom": 1e-4,
}


def to_micrometres(value: Any, unit: str | None) -> float | None:
    """`value` in `unit` as micrometres; None for a missing or non-positive value or an unknown unit."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    factor = MICROMETRES_PER.get(str(unit or "µm").strip().lower())
    if factor is None or not number > 0 or number == float("inf"):
        return None
    return number * factor


def found_mpp(source: str, x: float | None, y: float | None) -> tuple[str, tuple[float, float]] | None:
    """`ReaderHandle.mpp_found` from the metadata's x and y sizes (micrometres): y is x's when missing."""
    return None if x is None else (source, (x, y or x))


def starts_with(path: Path, magic: tuple[bytes, ...], offset: int = 0) -> bool:
    """Whether `path` is a file whose bytes at `offset` are one of `magic` (all of one length)."""
    if not path.is_file():
        return False
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(len(magic[0])) in magic


def one_line(exc: BaseException) -> str:
    """An exception's first line (libraries put tracebacks or C++ context after it)."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def cannot_open(path: Path, reader: str, exc: BaseException | str) -> SlideError:
    """The `unopenable` error of reader `reader` for `path`, in one line."""
    why = exc if isinstance(exc, str) else one_line(exc)
    return SlideError("unopenable", path, f"the {reader} reader cannot open it: {why}")


@contextmanager
def refusing(path: Path, reader: str, close: Callable[[], None] | None = None, hint: str = "") -> Iterator[None]:
    """Any error inside (a library raises many kinds on a damaged file) leaves as the reader's one-line
    `unopenable` error for `path`, `hint` appended; a SlideError leaves as it is. `close` (the
    library's open file) runs first."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - whatever the library raises
        if close is not None:
            close()
        if isinstance(exc, SlideError):
            raise
        raise cannot_open(path, reader, f"{one_line(exc)}{hint}") from None


class Level(Protocol):
    """One pyramid level: `width`, `height` and a window of it as an (h, w, c) array."""

    width: int
    height: int

    def window(self, x: int, y: int, w: int, h: int) -> np.ndarray: ...


def as_rgb(pixels: np.ndarray) -> np.ndarray:
    """(h, w, c) uint8 pixels as RGB: grey repeated, RGBA composited on white, BGR left to the reader."""
    import numpy as np

    if pixels.ndim == 2:
        pixels = pixels[..., None]
    c = pixels.shape[2]
    if c == 1:
        return np.repeat(pixels, 3, axis=2)
    if c == 4:
        a = pixels[..., 3:4].astype(np.uint16)
        return ((pixels[..., :3].astype(np.uint16) * a + 255 * (255 - a)) // 255).astype(np.uint8)
    return pixels[..., :3]


@dataclass
class ReaderHandle(SlideHandle):
    """The `SlideHandle` of a pyramid of `levels` (`mpp_found` and `associated` as that contract says;
    `pathkit_core.wsi.slide.mpp_from` checks the mpp like OpenSlide's)."""

    path: Path
    reader: str
    levels: list[Level]
    mpp_found: tuple[str, tuple[float, float]] | None
    vendor: str
    properties: dict[str, str] = field(default_factory=dict)
    associated: Mapping[str, Callable[[], np.ndarray]] = field(default_factory=dict)
    on_close: Callable[[], None] | None = None
    # Pixel values as stored, per channel, need no reordering when False; CZI stores BGR.
    bgr: bool = False

    def __post_init__(self) -> None:
        if not self.levels:
            raise cannot_open(self.path, self.reader, "no image levels")
        base = self.levels[0]
        if base.width <= 0 or base.height <= 0:
            raise cannot_open(self.path, self.reader, f"an empty image of {base.width}x{base.height} px")

    @property
    def dimensions(self) -> tuple[int, int]:
        return self.level_dimensions[0]

    @property
    def level_count(self) -> int:
        return len(self.levels)

    @property
    def level_dimensions(self) -> list[tuple[int, int]]:
        return [(lv.width, lv.height) for lv in self.levels]

    @property
    def level_downsamples(self) -> list[float]:
        """Level-0 pixels per level pixel: the mean of the two axes' ratios, as OpenSlide gives it."""
        w0, h0 = self.dimensions
        return [((w0 / lv.width) + (h0 / lv.height)) / 2.0 for lv in self.levels]

    @property
    def associated_images(self) -> dict[str, np.ndarray]:
        """Each associated image as RGB uint8, read when asked for."""
        return {name: self.associated_image(name) for name in self.associated}

    def associated_image(self, name: str) -> np.ndarray:
        try:
            return as_rgb(self.associated[name]())
        except Exception as exc:  # noqa: BLE001 - a codec error of any library
            raise SlideError("unreadable", self.path,
                             f"associated image {name!r} cannot be decoded ({self.reader}: {one_line(exc)})") from None

    def read_rgb(
        self, location: tuple[int, int], level: int, size: tuple[int, int], out: np.ndarray | None = None
    ) -> np.ndarray:
        """RGB uint8 (h, w, 3) of the `size` region of `level` whose top left is `location` in
        level-0 pixels; what lies beyond the slide is white glass, as OpenSlide composites it."""
        import numpy as np

        if not 0 <= level < len(self.levels):
            raise SlideError("unreadable", self.path, f"level {level} does not exist ({self.level_count} levels)")
        w, h = int(size[0]), int(size[1])
        if out is None:
            out = np.empty((h, w, 3), dtype=np.uint8)
        out[...] = 255
        lv = self.levels[level]
        ds = self.level_downsamples[level]
        x0, y0 = int(location[0] // ds), int(location[1] // ds)
        cx0, cy0 = max(x0, 0), max(y0, 0)
        cx1, cy1 = min(x0 + w, lv.width), min(y0 + h, lv.height)
        if cx1 <= cx0 or cy1 <= cy0:
            return out
        try:
            pixels = lv.window(cx0, cy0, cx1 - cx0, cy1 - cy0)
        except Exception as exc:  # noqa: BLE001 - a codec error of any library
            raise SlideError("unreadable", self.path,
                             f"tiles cannot be decoded ({self.reader} reader: {one_line(exc)})") from None
        if pixels.dtype != np.uint8:
            raise SlideError("unreadable", self.path, f"{pixels.dtype} pixels; the {self.reader} reader reads "
                             "8-bit brightfield (RGB or grey) slides")
        rgb = as_rgb(pixels)
        if self.bgr:
            rgb = rgb[..., ::-1]
        out[cy0 - y0: cy1 - y0, cx0 - x0: cx1 - x0] = rgb
        return out

    def close(self) -> None:
        if self.on_close is not None:
            self.on_close()
            self.on_close = None

