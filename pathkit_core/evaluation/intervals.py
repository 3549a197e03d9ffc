"""Deprecated: moved to `pathkit_sdk.intervals` in pathkit 0.2 (`NOT_ESTIMABLE`, `not_estimable_text` to
`pathkit_core.evaluation.scores`); this path will be removed in pathkit 0.3."""

from pathkit_core._deprecation import moved_module

__getattr__, __dir__ = moved_module(__name__, "pathkit_sdk.intervals", renamed={
    "NOT_ESTIMABLE": "pathkit_core.evaluation.scores", "not_estimable_text": "pathkit_core.evaluation.scores"})
