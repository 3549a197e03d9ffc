"""A new task type, `slide-regression`, and its metric `regression`: a number per slide.

Tumour purity (the fraction of tumour cells, here of tumour tissue) is the example: a continuous
target per slide that none of pathkit's built-in tasks expresses. The task says what a target
and a prediction look like, which baseline to score beside a model, and nothing else: tiling,
extraction, training, prediction files and results come from pathkit's defaults.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, Dataset, Metric, MetricResult, PathkitError, Task

TASK_SLIDE_REGRESSION = "slide-regression"


def _number(value: Any) -> float | None:
    """A finite float from a number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


class SlideRegressionTask(Task):
    """A continuous value per slide or patient from its tile features (e.g. tumour purity)."""

    name: ClassVar[str] = TASK_SLIDE_REGRESSION
    description: ClassVar[str] = "a number per slide from its tile features (e.g. tumour purity)"
    target_format: ClassVar[str] = "a finite number"
    prediction_format: ClassVar[str] = 'a finite number, or {"value": number}; written as {"value": number}'
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

    def report_sections(self, run: Any) -> list[Any]:
        """The run report's part of this task: predicted against reference value per test slide.

        `run` is a `pathkit_core.report.RunFolder` (predictions, references, per-case table);
        `run.figures.figure` embeds a matplotlib figure and writes its data beside the report."""
        from pathkit_core.report import Section
        from pathkit_core.report.figures import new_figure

        references = run.references()
        cases = [cid for cid in run.predictions if _number(references.get(cid)) is not None]
        points = [(references[cid], run.predictions[cid]["value"]) for cid in cases]
        if not points:
            return []
        fig, axes = new_figure(4.6, 4.4)
        ax = axes[0][0]
        ax.scatter([p[0] for p in points], [p[1] for p in points], color="#0072B2")
        low, high = min(min(p) for p in points), max(max(p) for p in points)
        ax.plot([low, high], [low, high], color="#999999", linestyle="--", label="prediction = reference")
        ax.set_xlabel("reference value")
        ax.set_ylabel("predicted value")
        ax.legend(fontsize="small")
        data = {"id": cases, "reference": [p[0] for p in points], "predicted": [p[1] for p in points]}
        body = run.figures.figure("predicted_vs_reference", fig, "Predicted against reference value per test slide",
                                  data)
        return [Section("Predicted against reference", body, key="regression", order=100)]


class RegressionMetric(Metric):
    """Mean absolute error, root mean squared error and Pearson's r."""

    name: ClassVar[str] = "regression"
    description: ClassVar[str] = "MAE, RMSE and Pearson r of a continuous prediction"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_REGRESSION,)
    headline_scores: ClassVar[tuple[str, ...]] = ("MAE", "pearson_r")
    lower_is_better: ClassVar[tuple[str, ...]] = ("MAE", "RMSE")

    def compute(self, predictions, references, *, ids=None, context=None) -> MetricResult:
        import numpy as np
        import polars as pl

        if len(predictions) != len(references) or not references:
            raise PathkitError(f"regression: {len(predictions)} predictions for {len(references)} references")
        pred = np.array([p["value"] if isinstance(p, dict) else p for p in predictions], dtype=np.float64)
        ref = np.array(references, dtype=np.float64)
        error = pred - ref
        # Pearson's r is undefined when either side is constant (a constant baseline): NaN, not 0.
        r = float(np.corrcoef(pred, ref)[0, 1]) if pred.std() > 0 and ref.std() > 0 else math.nan
        summary = {"MAE": float(np.abs(error).mean()), "RMSE": float(np.sqrt((error ** 2).mean())),
                   "pearson_r": r, "n_cases": float(len(ref))}
        case_ids = list(ids) if ids is not None else [str(i) for i in range(len(ref))]
        return MetricResult(summary, pl.DataFrame({"id": case_ids, "abs_error": np.abs(error)}))


@hookimpl
def register_tasks(register):
    register(SlideRegressionTask)


@hookimpl
def register_metrics(register):
    register(RegressionMetric)
