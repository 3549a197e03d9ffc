"""How the datasets of one task are scored and their checkpoint selected, declared once: a mixin
put before a dataset's base class."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_tasks import TASK_PATCH_CLASSIFICATION, TASK_SLIDE_CLASSIFICATION


class SlideClassification:
    """Mixin put before the base of a slide classification dataset: scored by the classification
    metric, its checkpoint selected on the validation AUROC (the epoch's value, not its interval)."""

    task: ClassVar[str] = TASK_SLIDE_CLASSIFICATION
    default_metrics: ClassVar[tuple[str, ...]] = ("classification",)
    selection_metric: ClassVar[str | None] = "classification:AUROC"
    selection_options: ClassVar[dict[str, Any]] = {"n_resamples": 0}


class PatchClassification:
    """Patch classification: scored by the classification metric, the checkpoint selected on the
    validation balanced accuracy; the run's workspace is passed in (the image checks' cache)."""

    task: ClassVar[str] = TASK_PATCH_CLASSIFICATION
    default_metrics: ClassVar[tuple[str, ...]] = ("classification",)
    selection_metric: ClassVar[str | None] = "classification:balanced_accuracy"
    selection_options: ClassVar[dict[str, Any]] = {"selection": True}
    run_options: ClassVar[tuple[str, ...]] = ("workdir",)
