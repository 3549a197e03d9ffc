"""Task `ordinal` (plugin module of the entry point): grading over ordered classes."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.ordinal.task import OrdinalTask

    register(OrdinalTask)
