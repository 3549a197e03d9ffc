"""Task `zero-shot` (plugin module of the entry point): classes scored by a vision-language model's
text tower, no training (docs/zero-shot.md)."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.zeroshot.task import ZeroShotTask

    register(ZeroShotTask)
