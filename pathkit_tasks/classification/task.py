"""Tasks `slide-classification` and `patch-classification`: a class per slide (or patient) or per patch.

Targets are class names from the dataset's declared order (`Dataset.class_names()`); the model
sees the class index, metrics the index and the names (`context["class_names"]`). Predictions
are written with both: `{"label": index, "class": name, "probabilities": [...]}`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import (
    INPUT_FEATURES,
    INPUT_IMAGES,
    INPUT_SLIDES,
    Case,
    Dataset,
    RunFacts,
    Task,
)
from pathkit_tasks import TASK_PATCH_CLASSIFICATION, TASK_SLIDE_CLASSIFICATION
from pathkit_tasks._common import most_frequent
from pathkit_tasks.classification.attention import TileAttentionModel

# A probability vector may miss 1 by rounding (float16 softmax, JSON round trips) but not more.
_SUM_TOLERANCE = 1e-3


class ClassificationTask(Task):
    """What slide and patch classification share: named classes, probability predictions."""

    target_format: ClassVar[str] = "a class name from the dataset's class_names()"
    prediction_format: ClassVar[str] = (
        'a dict {"probabilities": [one per class, summing to 1], "label": class index (optional)}, '
        "or a class index, or a class name; written as {\"label\", \"class\", \"probabilities\"}"
    )
    baselines: ClassVar[tuple[str, ...]] = ("majority-class", "class-prior")
    evaluate_inputs: ClassVar[tuple[str, ...]] = ("probabilities", "label", "score", "text")

    @staticmethod
    def classes(dataset: Dataset) -> tuple[str, ...]:
        return tuple(dataset.class_names())

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        classes = self.classes(dataset)
        if len(classes) < 2:
            return f"dataset {dataset.name!r} declares {len(classes)} class name(s); a classification needs two or more"
        if not isinstance(case.target, str) or case.target not in classes:
            return f"target {case.target!r} is not one of the class names {list(classes)}"
        return None

    def model_target(self, case: Case, dataset: Dataset) -> Any:
        return None if case.target is None else self.classes(dataset).index(case.target)

    # ------------------------------------------------------------------ predictions

    def _parse(self, prediction: Any, n: int, classes: Sequence[str]) -> tuple[int | None, list[float] | None]:
        """(label index, probabilities) of a prediction; ValueError naming what is wrong."""
        probs = None
        label: Any = prediction
        if isinstance(prediction, dict):
            if "probabilities" not in prediction and "label" not in prediction:
                raise ValueError('a dict needs "probabilities" or "label"')
            probs = prediction.get("probabilities")
            label = prediction.get("label")
        if probs is not None:
            try:
                probs = [float(p) for p in probs]
            except (TypeError, ValueError):
                raise ValueError(f"probabilities {probs!r} are not numbers") from None
            if len(probs) != n:
                raise ValueError(f"{len(probs)} probabilities for {n} classes")
            if not all(math.isfinite(p) and -1e-9 <= p <= 1 + 1e-9 for p in probs):
                raise ValueError(f"probabilities {probs} are not all in [0, 1]")
            if abs(sum(probs) - 1.0) > _SUM_TOLERANCE:
                raise ValueError(f"probabilities sum to {sum(probs):.4f}, not 1")
        if label is None:
            return None, probs
        if isinstance(label, str):
            if label not in classes:
                raise ValueError(f"class {label!r} is not one of {list(classes)}")
            return list(classes).index(label), probs
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < n:
            raise ValueError(f"label {label!r} is not a class index 0..{n - 1}")
        return label, probs

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        classes = self.classes(dataset)
        try:
            self._parse(prediction, len(classes), classes)
        except ValueError as exc:
            return str(exc)
        return None

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        classes = self.classes(dataset)
        label, probs = self._parse(prediction, len(classes), classes)
        if label is None:
            label = max(range(len(classes)), key=lambda k: probs[k])  # type: ignore[index]
        out: dict[str, Any] = {"label": label, "class": classes[label]}
        if probs is not None:
            out["probabilities"] = probs
        return out

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        classes = self.classes(dataset)
        labels = [t for t in train_targets if t is not None]
        if not labels:
            return None
        if name == "majority-class":
            top = int(most_frequent(labels))
            probs = [1.0 if k == top else 0.0 for k in range(len(classes))]
        elif name == "class-prior":
            probs = [labels.count(k) / len(labels) for k in range(len(classes))]
            top = max(range(len(classes)), key=lambda k: probs[k])
        else:
            return None
        prediction = {"label": top, "class": classes[top], "probabilities": probs}
        return {case.case_id: dict(prediction) for case in test_cases}

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        return {"class_names": list(self.classes(dataset))}


class SlideClassificationTask(ClassificationTask):
    """A class per slide or patient from its tile features (GOLDMARK biomarkers, user cohorts)."""

    name: ClassVar[str] = TASK_SLIDE_CLASSIFICATION
    description: ClassVar[str] = "a class per slide or patient from its tile-feature bag (GOLDMARK biomarkers)"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES)

    def export_evidence(self, model: Any, items: Any, cases: Sequence[Case], out_dir: Path, facts: RunFacts) -> None:
        """Each test tile's attention (a Parquet/CSV table per slide aligned with its tile manifest
        and a heatmap), when the model is an attention MIL model (`TileAttentionModel`)."""
        if not isinstance(model, TileAttentionModel):
            return
        from pathkit_core.run.features import store_folders
        from pathkit_tasks.classification.attention import export_run_attention

        tile_dir, _ = store_folders(facts.workdir, facts.tile_spec.key(), facts.tiling)
        export_run_attention(model, items, list(cases), out_dir, tile_dir=tile_dir)

    def report_sections(self, run: Any) -> list[Any]:
        """ROC and PR curves, the reliability diagram, the confusion matrix, attention heatmaps of
        the best and worst test slides, every case's prediction."""
        from pathkit_tasks.classification.sections import slide_classification_sections

        return slide_classification_sections(run)


class PatchClassificationTask(ClassificationTask):
    """A class per patch, each patch encoded as one whole image (HepatoBench tissue classes)."""

    name: ClassVar[str] = TASK_PATCH_CLASSIFICATION
    description: ClassVar[str] = "a class per patch image, each encoded whole (HepatoBench liver tissue)"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_IMAGES, INPUT_FEATURES)

    def report_sections(self, run: Any) -> list[Any]:
        """The confusion matrix (counts and row-normalised), per-class F1, example patches of the
        most confused class pairs, every case's prediction."""
        from pathkit_tasks.classification.sections import patch_classification_sections

        return patch_classification_sections(run)
