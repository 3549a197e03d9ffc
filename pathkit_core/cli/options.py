"""Deprecated: moved to `pathkit_sdk.commands` in pathkit 0.2; this path will be removed in pathkit 0.3."""

from pathkit_core._deprecation import moved_module

__getattr__, __dir__ = moved_module(__name__, "pathkit_sdk.commands")
