"""Task `report`: slide features in, a pathology report out (plugin module of the entry point)."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.report.task import ReportTask

    register(ReportTask)
