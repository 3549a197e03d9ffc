"""Task `few-shot` (plugin module of the entry point): accuracy curves over k shots per class."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.fewshot.task import FewShotTask

    register(FewShotTask)
