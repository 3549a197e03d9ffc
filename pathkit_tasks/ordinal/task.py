"""Task `ordinal`: a grade per slide or patient from an ordered list (ISUP, Gleason, tumour grade).

The classes are ordered: the dataset's `ordered_classes()` (else its `class_names()`), lowest
grade first. Targets and predictions are those of slide classification (a class name; class
probabilities or a class index); the references the metrics see are the class names, so that
`pathkit score --metric ordinal --option classes=1,2,3,4,5` reads the same files a run writes.
Every slide-classification head solves it (`generator_tasks`), beside the ordinal head `coral`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core.contracts import INPUT_FEATURES, INPUT_SLIDES, Case, Dataset, RunFacts
from pathkit_tasks import TASK_ORDINAL, TASK_SLIDE_CLASSIFICATION
from pathkit_tasks.classification.task import ClassificationTask


class OrdinalTask(ClassificationTask):
    """Grading: classification over ordered classes, scored by how far off a grade is."""

    name: ClassVar[str] = TASK_ORDINAL
    description: ClassVar[str] = "a grade per slide or patient from ordered classes (ISUP, Gleason, tumour grade)"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES)
    target_format: ClassVar[str] = "a class name of the dataset's ordered_classes(), lowest grade first"
    generator_tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_CLASSIFICATION,)

    @staticmethod
    def classes(dataset: Dataset) -> tuple[str, ...]:
        ordered = getattr(dataset, "ordered_classes", None)
        return tuple(ordered() if callable(ordered) else dataset.class_names())

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        classes = self.classes(dataset)
        if len(set(classes)) != len(classes):  # a repeated grade would have two positions in the order
            return f"dataset {dataset.name!r} orders the grades {list(classes)}, which repeat a grade"
        return super().check_target(case, dataset)

    def reference(self, case: Case, dataset: Dataset) -> Any:
        return case.target

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        classes = list(self.classes(dataset))
        return {"class_names": classes}

    def report_sections(self, run: Any) -> list[Any]:
        """The grade confusion matrix (reference rows, predicted columns) with its kappa weights."""
        from pathkit_tasks.ordinal.sections import ordinal_sections

        return ordinal_sections(run)
