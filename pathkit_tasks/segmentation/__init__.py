"""Task `segmentation`: stitched sliding-window slide segmentation (plugin module of the entry point)."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_tasks.segmentation.task import SegmentationTask

    register(SegmentationTask)
