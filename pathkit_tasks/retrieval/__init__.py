"""Task `retrieval` (plugin module of the entry point): slides queried against the train split."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.retrieval.task import RetrievalTask

    register(RetrievalTask)
