"""Task `survival` (plugin module of the entry point): right-censored time to event."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.survival.task import SurvivalTask

    register(SurvivalTask)
