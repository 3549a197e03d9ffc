"""Ordinal grading metrics: quadratic weighted kappa (scikit-learn's `cohen_kappa_score` with
`weights="quadratic"`) with a bootstrap CI, mean absolute grade error and accuracy (docs/ordinal.md).

Predictions and references are grades named by the ordered classes (option `classes=1,2,3,4,5`,
else the run's class names, lowest first): a class name, or a dict with "class" or "label".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_metrics._intervals import RESAMPLE_OPTIONS, SELECTION_OPTION, add_intervals, case_intervals, n_resamples
from pathkit_tasks import TASK_ORDINAL

if TYPE_CHECKING:
    import numpy as np


def _name(value: Any) -> str:
    """A grade as text: 3, 3.0 and "3" are one grade."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def grade_index(value: Any, classes: Sequence[str], where: str) -> int:
    """The position of a grade among the ordered classes; a PathkitError naming `where` otherwise."""
    if isinstance(value, dict):
        if "class" in value:
            value = value["class"]
        elif "label" in value:
            value = value["label"]
        else:
            raise PathkitError(f"ordinal: {where}: a dict needs \"class\" or \"label\"")
    name = _name(value)
    if name not in classes:
        raise PathkitError(f"ordinal: {where}: grade {name!r} is not one of the ordered classes {list(classes)}")
    return list(classes).index(name)


def class_list(options: dict[str, Any], context: dict[str, Any]) -> list[str]:
    given = options.get("classes") or context.get("class_names")
    if not given:
        raise PathkitError("ordinal: the ordered classes are unknown; give them lowest first, e.g. "
                           "--option classes=1,2,3,4,5")
    values = given.split(",") if isinstance(given, str) else given if isinstance(given, list | tuple) else [given]
    classes = [_name(c) for c in values]
    if len(set(classes)) != len(classes) or len(classes) < 2:
        raise PathkitError(f"ordinal: classes {classes} must name two or more distinct grades")
    return classes


def quadratic_kappa(confusion: np.ndarray) -> float:
    """Cohen's kappa with quadratic weights from a K x K confusion matrix (reference rows): the same
    number as `sklearn.metrics.cohen_kappa_score(..., weights="quadratic")`; NaN when undefined."""
    import numpy as np

    k = confusion.shape[0]
    weights = (np.arange(k)[:, None] - np.arange(k)[None, :]) ** 2 / float((k - 1) ** 2)
    total = confusion.sum()
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / total
    denominator = (weights * expected).sum()
    return float(1.0 - (weights * confusion).sum() / denominator) if denominator > 0 else math.nan


def kappa_statistic(block: np.ndarray) -> np.ndarray:
    """Quadratic kappa of resampled rows (resamples, cases, 2: reference, predicted grade index):
    `pathkit compare`'s paired bootstrap of the kappa difference (`OrdinalMetric.paired_statistic`)."""
    import numpy as np

    k = int(block.max()) + 1
    out = []
    for rows in block:
        confusion = np.zeros((k, k))
        np.add.at(confusion, (rows[:, 0].astype(int), rows[:, 1].astype(int)), 1)
        out.append(quadratic_kappa(confusion))
    return np.asarray(out)


class OrdinalMetric(Metric):
    """Quadratic weighted kappa (PANDA's metric), mean absolute grade error and accuracy."""

    name: ClassVar[str] = "ordinal"
    description: ClassVar[str] = "quadratic weighted kappa (scikit-learn) with a bootstrap CI, grade error, accuracy"
    tasks: ClassVar[tuple[str, ...]] = (TASK_ORDINAL,)
    headline_scores: ClassVar[tuple[str, ...]] = ("qwk", "mean_abs_grade_error", "accuracy")
    lower_is_better: ClassVar[tuple[str, ...]] = ("mean_abs_grade_error",)
    score_ranges: ClassVar[dict[str, tuple[float, float]]] = {"qwk": (-1.0, 1.0), "accuracy": (0.0, 1.0)}
    whole_records: ClassVar[bool] = True
    paired_scores: ClassVar[dict[str, tuple[str, str]]] = {"qwk": ("statistic", "target,predicted"),
                                                           "accuracy": ("correct", "correct")}
    citation: ClassVar[str] = ("Cohen J. Weighted kappa. Psychol Bull 1968; Bulten W et al. Artificial "
                               "intelligence for diagnosis and Gleason grading of prostate cancer: the PANDA "
                               "challenge. Nat Med 2022")
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("classes", "any", None, "the ordered classes, lowest first, comma-separated (default: the "
                      "run's class names)"),
        *RESAMPLE_OPTIONS, SELECTION_OPTION,
    )

    @staticmethod
    def paired_statistic(key: str) -> Any:
        return kappa_statistic if key == "qwk" else None

    def compute(self, predictions, references, *, ids=None, context=None) -> MetricResult:
        import numpy as np
        import polars as pl

        context = dict(context or {})
        options = self.checked_options(dict(context.get("options") or {}))
        classes = class_list(options, context)
        if len(predictions) != len(references) or not references:
            raise PathkitError(f"ordinal: {len(predictions)} predictions for {len(references)} references")
        y = np.array([grade_index(r, classes, f"reference {i}") for i, r in enumerate(references)])
        p = np.array([grade_index(v, classes, f"prediction {i}") for i, v in enumerate(predictions)])
        k = len(classes)
        confusion = np.zeros((k, k))
        np.add.at(confusion, (y, p), 1)
        summary = {"qwk": quadratic_kappa(confusion), "mean_abs_grade_error": float(np.abs(y - p).mean()),
                   "accuracy": float((y == p).mean()), "n_cases": float(y.size)}
        details: dict[str, Any] = {"classes": classes, "confusion_matrix": confusion.astype(int).tolist(),
                                   "confusion_axes": ["reference", "prediction"]}
        n = n_resamples(options)
        if n > 0:
            self._intervals(summary, details, y, p, k, n, options)
        case_ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(y.size)]
        per_case = pl.DataFrame({"id": case_ids, "target": y, "predicted": p, "target_class": [classes[i] for i in y],
                                 "predicted_class": [classes[i] for i in p], "correct": (y == p).astype(float),
                                 "mean_abs_grade_error": np.abs(y - p).astype(float)})
        return MetricResult(summary, per_case, details)

    @staticmethod
    def _intervals(summary: dict[str, float], details: dict[str, Any], y: np.ndarray, p: np.ndarray, k: int,
                   n: int, options: dict[str, Any]) -> None:
        """Percentile bootstrap CIs of the three scores over one set of resamples of the cases."""
        import numpy as np

        cell = y * k + p

        def statistics(block: np.ndarray) -> dict[str, np.ndarray]:
            kappas = []
            for row in block:
                kappas.append(quadratic_kappa(np.bincount(cell[row], minlength=k * k).reshape(k, k).astype(float)))
            return {"qwk": np.asarray(kappas), "mean_abs_grade_error": np.abs(y[block] - p[block]).mean(axis=1),
                    "accuracy": (y[block] == p[block]).mean(axis=1)}

        add_intervals(summary, details, case_intervals(statistics, int(y.size), options, n),
                      ("qwk", "mean_abs_grade_error", "accuracy"), n, "cases")


@hookimpl
def register_metrics(register):
    register(OrdinalMetric)
