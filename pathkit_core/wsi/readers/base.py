"""Deprecated: moved to `pathkit_readers.base` in pathkit 0.2 (`content_identity` to `pathkit_core.wsi.scenes`);
this path will be removed in pathkit 0.3."""

from pathkit_core._deprecation import moved_module

__getattr__, __dir__ = moved_module(__name__, "pathkit_readers.base",
                                    renamed={"content_identity": "pathkit_core.wsi.scenes"})
