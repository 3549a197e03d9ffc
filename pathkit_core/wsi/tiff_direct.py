"""Deprecated: moved to `pathkit_readers.tiff_direct` in pathkit 0.2 (`direct_enabled` to `pathkit_core.wsi.reader`);
these names will be removed from here in pathkit 0.3."""

from typing import Any

from pathkit_core._deprecation import moved_attribute

_MOVED = {"DirectTiffLevels": "pathkit_readers.tiff_direct", "DIRECT_VENDORS": "pathkit_readers.tiff_direct",
          "log": "pathkit_readers.tiff_direct", "direct_enabled": "pathkit_core.wsi.reader"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return moved_attribute(__name__, name, _MOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
