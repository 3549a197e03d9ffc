"""`legacy-slide-score`: a number per slide (here the share of dense tissue), and its metric `legacy-mae`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, Dataset, Metric, MetricResult, PathkitError, Task

TASK_SLIDE_SCORE = "legacy-slide-score"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


class SlideScoreTask(Task):
    """A continuous score per slide from its tile features."""

    name: ClassVar[str] = TASK_SLIDE_SCORE
    description: ClassVar[str] = "a number per slide from its tile features (0.1.0-era test plugin)"
    target_format: ClassVar[str] = "a finite number"
    prediction_format: ClassVar[str] = '{"value": number}'
    baselines: ClassVar[tuple[str, ...]] = ("train-mean",)

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        return None if _number(case.target) is not None else f"target {case.target!r} is not a finite number"

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        value = prediction.get("value") if isinstance(prediction, dict) else prediction
        return None if _number(value) is not None else f"prediction {prediction!r} is not a finite number"

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        value = prediction.get("value") if isinstance(prediction, dict) else prediction
        return {"value": float(value)}

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        values = [float(t) for t in train_targets if t is not None]
        if not values:
            return None
        mean = sum(values) / len(values)
        return {case.case_id: {"value": mean} for case in test_cases}


class MeanAbsoluteError(Metric):
    """Mean absolute error of the score."""

    name: ClassVar[str] = "legacy-mae"
    description: ClassVar[str] = "mean absolute error of a slide score"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_SCORE,)
    headline_scores: ClassVar[tuple[str, ...]] = ("MAE",)
    lower_is_better: ClassVar[tuple[str, ...]] = ("MAE",)

    def compute(self, predictions, references, *, ids=None, context=None) -> MetricResult:
        import polars as pl

        if len(predictions) != len(references) or not references:
            raise PathkitError(f"legacy-mae: {len(predictions)} predictions for {len(references)} references")
        errors = [abs((p["value"] if isinstance(p, dict) else p) - float(r)) for p, r in zip(predictions, references,
                                                                                            strict=True)]
        case_ids = list(ids) if ids is not None else [str(i) for i in range(len(errors))]
        return MetricResult({"MAE": sum(errors) / len(errors), "n_cases": float(len(errors))},
                            pl.DataFrame({"id": case_ids, "abs_error": errors}))


@hookimpl
def register_tasks(register):
    register(SlideScoreTask)


@hookimpl
def register_metrics(register):
    register(MeanAbsoluteError)
