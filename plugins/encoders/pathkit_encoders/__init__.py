"""pathkit's tile encoders: rows of `pathkit_encoders.table` over the builder of `_vit.py`.

The names a plugin needs to write and register an encoder row of its own (docs/encoders.md,
"Adding an encoder"); importing them imports neither torch nor timm. They are loaded on first
use: the package itself stays empty, because resolving any encoder's entry point imports it.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {"ROWS": "pathkit_encoders.table", "EncoderSpec": "pathkit_encoders.table",
            "ViTTileEncoder": "pathkit_encoders._vit", "encoder_class": "pathkit_encoders._vit",
            "registrar": "pathkit_encoders._vit"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pathkit_encoders' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
