"""Tasks `slide-classification` and `patch-classification` (plugin module of the entry point)."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.classification.task import PatchClassificationTask, SlideClassificationTask

    register(SlideClassificationTask)
    register(PatchClassificationTask)
