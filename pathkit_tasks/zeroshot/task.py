"""Task `zero-shot`: each class is a prompt ensemble embedded by a vision-language model's text
tower; a patch (one feature row) or a slide (its tiles, pooled by MI-Zero top-k) is given the class
whose prototype its image features are most similar to. Nothing is trained: the train split is only
read by the trivial baselines.

Targets and predictions are those of classification (`{"label", "class", "probabilities"}`), so the
`classification` metric scores them (accuracy, balanced accuracy, AUROC) and `pathkit compare`
pairs them case by case with another run or a baseline.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core.contracts import INPUT_FEATURES, INPUT_IMAGES, INPUT_SLIDES
from pathkit_tasks import TASK_ZERO_SHOT
from pathkit_tasks.classification.task import ClassificationTask


class ZeroShotTask(ClassificationTask):
    """Zero-shot classification of patches or slides with CONCH's text tower (docs/zero-shot.md)."""

    name: ClassVar[str] = TASK_ZERO_SHOT
    description: ClassVar[str] = "classes scored by a text tower's prompt embeddings; slides by MI-Zero top-k pooling"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES, INPUT_IMAGES)  # images: patch-level

    def report_sections(self, run: Any) -> list[Any]:
        """Slide classification's sections: ROC and PR curves, calibration, the confusion matrix,
        the per-class table, every test case (no attention heatmaps: nothing attends)."""
        from pathkit_tasks.classification.sections import slide_classification_sections

        return slide_classification_sections(run)
