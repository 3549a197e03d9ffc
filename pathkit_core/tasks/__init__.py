"""The built-in task types, registered through `register_tasks` like any plugin's task.

Each module holds one task protocol (DESIGN.md section 4): report generation, slide and patch
classification, stitched slide segmentation and budgeted multiple-choice VQA. A third-party
plugin adds a task type the same way (see docs/plugin-authors.md).
"""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_tasks(register):
    from pathkit_core.tasks.classification import PatchClassificationTask, SlideClassificationTask
    from pathkit_core.tasks.report import ReportTask
    from pathkit_core.tasks.segmentation import SegmentationTask
    from pathkit_core.tasks.vqa import MultipleChoiceVQATask

    for task in (ReportTask, SlideClassificationTask, PatchClassificationTask, SegmentationTask,
                 MultipleChoiceVQATask):
        register(task)
