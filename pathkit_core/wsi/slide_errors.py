"""The leaf the slide module and the slide readers (`pathkit_readers`) share: `SlideError` (every bad-input case with a
stable code) and the reading of TIFF resolution tags. Imported by `pathkit_core.wsi.slide`, which
is where a caller finds `SlideError`; it imports nothing of the slide code, so no cycle."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError


class SlideError(PathkitError):
    """A slide that cannot be used, with a stable `code` recorded in tiling status files.

    Codes: not-found, symlink-loop, not-a-file, not-a-slide, unopenable, unreadable, no-mpp,
    implausible-mpp, anisotropic-mpp, duplicate-slide-id, bad-slide-id, stale-manifest, reader-missing (the
    library of the slide's format is not installed: docs/formats.md); tiling adds cannot-write
    (the output filesystem refused a write: full, read-only).
    """

    def __init__(self, code: str, path: str | Path | None, message: str) -> None:
        self.code = code
        self.path = str(path) if path is not None else None
        self.detail = message
        super().__init__(f"{path}: {message}" if path is not None else message)


def as_float(value: Any) -> float | None:
    """`value` as a positive finite float, else None."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) and out > 0 else None


def tiff_resolution_mpp(props: Mapping[str, str]) -> tuple[float, float] | None:
    """(mpp_x, mpp_y) from OpenSlide-style `tiff.ResolutionUnit` / `tiff.XResolution` / `tiff.YResolution`
    properties (pixels per centimetre or inch), else None."""
    unit = str(props.get("tiff.ResolutionUnit", "")).strip().lower()
    per_unit = {"centimeter": 1e4, "centimetre": 1e4, "cm": 1e4, "inch": 25400.0, "in": 25400.0}
    if unit not in per_unit:
        return None
    xres, yres = as_float(props.get("tiff.XResolution")), as_float(props.get("tiff.YResolution"))
    if xres is None:
        return None
    yres = yres or xres
    return per_unit[unit] / xres, per_unit[unit] / yres
