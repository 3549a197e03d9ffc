"""Classification metrics: AUROC with a bootstrap CI, AP, balanced accuracy, F1, ECE, Brier, curves;
for K classes also macro precision/recall/F1 (the HepatoBench seed recipe), per-class scores, the
confusion matrix and bootstrap CIs of the macro scores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_sdk.intervals import PROPORTION_METHODS, SAMPLE_KEY, proportion_ci, sample_facts
from pathkit_tasks import TASK_PATCH_CLASSIFICATION, TASK_SLIDE_CLASSIFICATION, TASK_ZERO_SHOT

if TYPE_CHECKING:
    import numpy as np

# How far a row of class probabilities may sum from 1 (float16 storage and rounding in files).
PROBABILITY_SUM_TOLERANCE = 0.01
DEFAULT_BINS = 10
DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
# Interval of the proportions (accuracy, sensitivity, specificity, per-class recall/precision):
# "wilson" (Brown, Cai & DasGupta 2001) or "exact" (Clopper-Pearson); docs/metrics.md.
DEFAULT_PROPORTION_CI = "wilson"
# Keys a prediction dict may carry its class probabilities under (pathkit generators use "probabilities").
PROBABILITY_KEYS = ("probabilities", "probs", "prob", "scores")


# --------------------------------------------------------------------------- input coercion


def _label_index(value: Any, classes: Sequence[Any] | None, where: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if classes is not None and value in classes:
        return list(classes).index(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise PathkitError(f"classification: {where}: reference {value!r} is not a class index")


def probability_matrix(predictions: Sequence[Any], n_classes: int) -> np.ndarray:
    """(N, C) class probabilities from predictions given as a positive-class probability (binary
    only), a hard class index (one-hot), a probability list, or a dict holding such a list."""
    import numpy as np

    out = np.zeros((len(predictions), n_classes), dtype=np.float64)
    for row, pred in enumerate(predictions):
        value = pred
        if isinstance(value, Mapping):
            key = next((k for k in PROBABILITY_KEYS if k in value), None)
            if key is None:
                if "label" in value:
                    value = int(value["label"])
                else:
                    raise PathkitError(
                        f"classification: prediction {row}: dict without any of {PROBABILITY_KEYS} or 'label'"
                    )
            else:
                value = value[key]
        if isinstance(value, bool) or (isinstance(value, int) and not isinstance(value, float)):
            if not 0 <= int(value) < n_classes:
                raise PathkitError(f"classification: prediction {row}: class {value} outside 0..{n_classes - 1}")
            out[row, int(value)] = 1.0
        elif isinstance(value, float):
            if n_classes != 2 and value.is_integer() and 0 <= value < n_classes:
                out[row, int(value)] = 1.0  # a hard label that went through a float column
                continue
            if n_classes != 2:
                raise PathkitError(
                    f"classification: prediction {row}: a single probability only describes a binary task "
                    f"({n_classes} classes here); give one probability per class"
                )
            out[row] = (1.0 - value, value)
        else:
            probs = np.asarray(value, dtype=np.float64).reshape(-1)
            if probs.size == 1 and n_classes == 2:
                probs = np.array([1.0 - probs[0], probs[0]])
            if probs.size != n_classes:
                raise PathkitError(
                    f"classification: prediction {row}: {probs.size} probabilities for {n_classes} classes"
                )
            out[row] = probs
    if not np.all(np.isfinite(out)):
        bad = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
        raise PathkitError(f"classification: prediction {bad} holds a NaN or infinite probability")
    if (out < -1e-9).any() or (out > 1 + 1e-9).any():
        bad = int(np.flatnonzero(((out < -1e-9) | (out > 1 + 1e-9)).any(axis=1))[0])
        raise PathkitError(f"classification: prediction {bad} holds a probability outside [0, 1]: {out[bad].tolist()}")
    # Scores read a row as a distribution; [0.9, 0.9] or [0, 0, 0] is none, and normalising it
    # would invent one, so such a row is refused (docs/metrics.md).
    off = np.abs(out.sum(axis=1) - 1.0) > PROBABILITY_SUM_TOLERANCE
    if off.any():
        bad = int(np.flatnonzero(off)[0])
        raise PathkitError(f"classification: {int(off.sum())} prediction(s) hold class probabilities that do not sum "
                           f"to 1, e.g. prediction {bad}: {out[bad].tolist()} (sum {out[bad].sum():.4g}); give "
                           "probabilities (softmax outputs) or hard class labels")
    return out


# --------------------------------------------------------------------------- binary statistics


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank (the Mann-Whitney convention)."""
    import numpy as np

    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    boundaries = np.flatnonzero(np.diff(sorted_values)) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [values.size]])
    avg = (starts + ends + 1) / 2.0  # mean of 1-based positions start+1 .. end
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def auroc(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """Area under the ROC curve of binary `labels` (1 = positive) ranked by `scores`; ties count
    one half. NaN when only one class is present."""
    import numpy as np

    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    n_pos = int(y.sum())
    n_neg = int(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = _average_ranks(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


class _WeightedAuroc:
    """AUROC of many bootstrap resamples at once: a resample only reweights the original cases,
    so cases are sorted and tie-grouped once and each resample costs O(n)."""

    def __init__(self, scores: np.ndarray, labels: np.ndarray) -> None:
        import numpy as np

        order = np.argsort(scores, kind="mergesort")
        self.order = order
        sorted_scores = scores[order]
        self.group_starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_scores)) + 1])
        self.positive = labels[order].astype(bool)
        self.n = scores.size

    def __call__(self, block: np.ndarray) -> np.ndarray:
        import numpy as np

        rows = block.shape[0]
        flat = (np.arange(rows)[:, None] * self.n + block).reshape(-1)
        counts = np.bincount(flat, minlength=rows * self.n).reshape(rows, self.n).astype(np.float64)
        counts = counts[:, self.order]
        pos = np.add.reduceat(counts * self.positive, self.group_starts, axis=1)
        neg = np.add.reduceat(counts * ~self.positive, self.group_starts, axis=1)
        neg_below = np.cumsum(neg, axis=1) - neg
        numerator = (pos * (neg_below + 0.5 * neg)).sum(axis=1)
        denominator = pos.sum(axis=1) * neg.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


def roc_points(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> dict[str, list[float]]:
    """ROC curve: one point per distinct score used as threshold (predict positive when
    score >= threshold), from (0, 0) at threshold +inf to (1, 1)."""
    import numpy as np

    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    last_of_group = np.concatenate([np.flatnonzero(np.diff(s_sorted)), [s.size - 1]]) if s.size else np.array([], int)
    tp = np.cumsum(y_sorted)[last_of_group]
    fp = np.cumsum(~y_sorted)[last_of_group]
    fpr = np.concatenate([[0.0], fp / n_neg if n_neg else np.full(fp.shape, np.nan)])
    tpr = np.concatenate([[0.0], tp / n_pos if n_pos else np.full(tp.shape, np.nan)])
    thresholds = np.concatenate([[np.inf], s_sorted[last_of_group]])
    return {"fpr": fpr.tolist(), "tpr": tpr.tolist(), "threshold": thresholds.tolist()}


def pr_points(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> dict[str, list[float]]:
    """Precision-recall curve at every distinct score threshold, highest threshold first."""
    import numpy as np

    roc = roc_points(scores, labels)
    y = np.asarray(labels).astype(bool)
    n_pos = int(y.sum())
    tpr = np.asarray(roc["tpr"][1:])
    fpr = np.asarray(roc["fpr"][1:])
    tp = tpr * n_pos
    fp = fpr * int((~y).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1.0), 1.0)
    return {"recall": tpr.tolist(), "precision": precision.tolist(), "threshold": roc["threshold"][1:]}


def average_precision(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """AP = sum over thresholds of (R_k - R_{k-1}) * P_k (step interpolation, no trapezoids)."""
    import numpy as np

    y = np.asarray(labels).astype(bool)
    if y.sum() == 0:
        return math.nan
    pr = pr_points(scores, labels)
    recall = np.concatenate([[0.0], np.asarray(pr["recall"])])
    precision = np.asarray(pr["precision"])
    return float(np.sum(np.diff(recall) * precision))


def calibration_bins(probabilities: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-width bin index of each probability; a value on an edge goes to the upper bin, 1.0 to the last."""
    import numpy as np

    # The small offset keeps 0.3 * 10 = 2.9999... in bin 3, as the decimal value says.
    return np.clip(np.floor(np.asarray(probabilities) * n_bins + 1e-9).astype(int), 0, n_bins - 1)


def reliability_table(
    probabilities: Sequence[float] | np.ndarray, outcomes: Sequence[float] | np.ndarray, n_bins: int = DEFAULT_BINS
) -> list[dict[str, float]]:
    """Reliability-diagram data: per equal-width bin, its edges, case count, mean predicted
    probability and observed event rate (NaN for an empty bin)."""
    import numpy as np

    p = np.asarray(probabilities, dtype=np.float64)
    o = np.asarray(outcomes, dtype=np.float64)
    bins = calibration_bins(p, n_bins)
    rows = []
    for b in range(n_bins):
        inside = bins == b
        count = int(inside.sum())
        rows.append({
            "bin": b,
            "lower": b / n_bins,
            "upper": (b + 1) / n_bins,
            "count": count,
            "mean_predicted": float(p[inside].mean()) if count else math.nan,
            "observed_rate": float(o[inside].mean()) if count else math.nan,
        })
    return rows


def expected_calibration_error(
    probabilities: Sequence[float] | np.ndarray, outcomes: Sequence[float] | np.ndarray, n_bins: int = DEFAULT_BINS
) -> float:
    """ECE = sum over bins of (n_b / N) * |mean predicted - observed rate|."""
    table = reliability_table(probabilities, outcomes, n_bins)
    total = sum(r["count"] for r in table)
    if total == 0:
        return math.nan
    return float(sum(r["count"] / total * abs(r["mean_predicted"] - r["observed_rate"]) for r in table if r["count"]))


def curve_details(by_class: Mapping[str, tuple[Any, Any]], confidence: Any, outcome: Any, n_bins: int,
                  calibrated: str) -> dict[str, Any]:
    """`MetricResult.details` the run report draws: ROC and PR points of each class against the
    rest (binary: the positive class; "roc", "pr": {class: points}), each curve's AUROC/AP, and
    the reliability table of `confidence` against `outcome` ("reliability", "reliability_of")."""
    def plain(points: dict[str, list[float]]) -> dict[str, list[float]]:
        # thresholds start at +inf, which strict JSON cannot hold; the curves do not need them
        return {k: v for k, v in points.items() if k != "threshold"}

    def finite(value: float) -> float | None:
        return value if math.isfinite(value) else None

    roc, pr, areas = {}, {}, {}
    for name, (scores, positive) in by_class.items():
        roc[name] = plain(roc_points(scores, positive))
        pr[name] = plain(pr_points(scores, positive))
        areas[name] = {"AUROC": finite(auroc(scores, positive)), "AP": finite(average_precision(scores, positive)),
                       "prevalence": float(positive.mean())}
    bins = [{k: finite(v) if isinstance(v, float) else v for k, v in row.items()}
            for row in reliability_table(confidence, outcome, n_bins)]
    return {"roc": roc, "pr": pr, "curve_areas": areas, "reliability": bins, "reliability_of": calibrated}


def binary_curves(scores: Sequence[float], labels: Sequence[int], n_bins: int = DEFAULT_BINS) -> dict[str, Any]:
    """Everything a ROC, PR and reliability plot needs, as JSON-ready lists."""
    return {
        "roc": roc_points(scores, labels),
        "pr": pr_points(scores, labels),
        "reliability": reliability_table(scores, labels, n_bins),
    }


# --------------------------------------------------------------------------- K-class counts


def confusion_matrix(labels: Sequence[int] | np.ndarray, predicted: Sequence[int] | np.ndarray,
                     n_classes: int) -> np.ndarray:
    """(K, K) counts: row = reference class, column = predicted class."""
    import numpy as np

    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(predicted, dtype=np.int64)
    return np.bincount(y * n_classes + p, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def per_class_scores(confusion: np.ndarray) -> dict[str, np.ndarray]:
    """Per-class precision, recall and F1 of confusion matrices (..., K, K), as the HepatoBench seed's
    scoring recipe: a class never predicted has precision 0, a class never present recall 0, and
    F1 is 0 when precision + recall is 0 (no NaN, no warning)."""
    import numpy as np

    c = np.asarray(confusion, dtype=np.float64)
    tp = np.diagonal(c, axis1=-2, axis2=-1)
    predicted = c.sum(axis=-2)
    present = c.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(predicted > 0, tp / np.where(predicted > 0, predicted, 1.0), 0.0)
        recall = np.where(present > 0, tp / np.where(present > 0, present, 1.0), 0.0)
        both = precision + recall
        f1 = np.where(both > 0, 2 * precision * recall / np.where(both > 0, both, 1.0), 0.0)
    return {"precision": precision, "recall": recall, "F1": f1, "support": present}


def macro_scores(confusion: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy, balanced accuracy and macro precision/recall/F1 of confusion matrices (..., K, K).

    Macro scores average over all K declared classes (the seed recipe loops over the seven class
    names, so a class absent from both references and predictions counts as 0); balanced accuracy
    is the mean recall over the classes present in the references (scikit-learn's definition)."""
    import numpy as np

    c = np.asarray(confusion, dtype=np.float64)
    scores = per_class_scores(c)
    total = c.sum(axis=(-2, -1))
    present = scores["support"] > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        balanced = (scores["recall"] * present).sum(axis=-1) / present.sum(axis=-1)
        accuracy = np.diagonal(c, axis1=-2, axis2=-1).sum(axis=-1) / total
    return {"accuracy": accuracy, "balanced_accuracy": balanced,
            "macro_precision": scores["precision"].mean(axis=-1), "macro_recall": scores["recall"].mean(axis=-1),
            "macro_F1": scores["F1"].mean(axis=-1)}


MACRO_KEYS = ("accuracy", "balanced_accuracy", "macro_precision", "macro_recall", "macro_F1")


def _macro_cis(labels: np.ndarray, predicted: np.ndarray, n_classes: int, n_resamples: int, level: float,
               seed: int) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of the macro scores (cases resampled with replacement; every
    score sees the same resamples)."""
    import numpy as np

    from pathkit_sdk.bootstrap import bootstrap_statistics_ci

    cell = labels.astype(np.int64) * n_classes + predicted.astype(np.int64)
    kk = n_classes * n_classes

    def on_block(block: np.ndarray) -> dict[str, np.ndarray]:
        rows = block.shape[0]
        flat = (np.arange(rows)[:, None] * kk + cell[block]).reshape(-1)
        confusions = np.bincount(flat, minlength=rows * kk).reshape(rows, n_classes, n_classes)
        scores = macro_scores(confusions)
        return {key: scores[key] for key in MACRO_KEYS}

    found = bootstrap_statistics_ci(on_block, int(labels.size), n_resamples, seed, level)
    return {key: found.get(key, (math.nan, math.nan)) for key in MACRO_KEYS}


def _class_list(references: Sequence[Any], predictions: Sequence[Any], context: Mapping[str, Any],
                options: Mapping[str, Any]) -> list[str] | None:
    """The ordered class names: the task's (`context["class_names"]`), the `classes` option, or,
    for references given as names, the sorted names seen (then probabilities cannot be placed)."""
    given = context.get("class_names") or options.get("classes")
    if given:
        return [str(c) for c in given]
    if not any(isinstance(r, str) and not r.strip().lstrip("-").isdigit() for r in references):
        return None
    names = {r for r in references if isinstance(r, str)}
    for pred in predictions:
        label = pred.get("class", pred.get("label")) if isinstance(pred, Mapping) else pred
        if not isinstance(label, str):
            return None  # numbers against names: the references are then reported as not indices
        if isinstance(pred, Mapping) and any(k in pred for k in PROBABILITY_KEYS):
            raise PathkitError(
                "classification: predictions carry probabilities but no class order is known; pass "
                "--dataset NAME or --option classes='[\"A\", \"B\", ...]'"
            )
        names.add(label)
    return sorted(names)


def _indexed_prediction(pred: Any, classes: Sequence[str] | None, row: int) -> Any:
    """A prediction with a class name (a string, or a dict's "label"/"class") turned into its index."""
    def index_of(name: str) -> int:
        if classes is None or name not in classes:
            raise PathkitError(f"classification: prediction {row}: class {name!r} is not one of {list(classes or [])}")
        return list(classes).index(name)

    if isinstance(pred, str):
        return index_of(pred)
    if isinstance(pred, Mapping):
        label = pred.get("label", pred.get("class"))
        if isinstance(label, str):
            return {**pred, "label": index_of(label)}
    return pred


# --------------------------------------------------------------------------- the metric


class _EvaluateFeatures:
    """Input types for the Hugging Face `evaluate` wrapper, built on access so that `datasets`
    is imported only when a module is made. Order matters: `evaluate` casts a batch with the
    first type that accepts it, so scores (float64) must come before labels (int64), or
    0.35 would be cast to class 0."""

    def __get__(self, obj: Any, owner: type) -> list[dict[str, Any]]:
        from datasets import Sequence as HFSequence
        from datasets import Value

        return [
            {"predictions": HFSequence(Value("float64")), "references": Value("int64")},
            {"predictions": Value("float64"), "references": Value("int64")},
            {"predictions": Value("int64"), "references": Value("int64")},
        ]


def _check_cases(predictions: Sequence[Any], references: Sequence[Any], n_bins: int) -> None:
    if len(predictions) != len(references):
        raise PathkitError(
            f"classification: {len(predictions)} predictions for {len(references)} references"
        )
    if not references:
        raise PathkitError("classification: no cases to score")
    if n_bins < 1:
        raise PathkitError(f"classification: n_bins must be at least 1, got {n_bins}")


def _class_proportions(summary: dict[str, float], intervals: dict[str, str], confusion: Any, names: Sequence[str],
                       level: float, method: str) -> None:
    """Each class's recall and precision with their proportion intervals (K classes)."""
    for k, name in enumerate(names):
        tp = int(confusion[k, k])
        _proportion(summary, intervals, f"recall_{name}", tp, int(confusion[k].sum()), level, method)
        _proportion(summary, intervals, f"precision_{name}", tp, int(confusion[:, k].sum()), level, method)


class ClassificationMetric(Metric):
    """Discrimination and calibration for slide-level (or patch-level) classification.

    Predictions: per case a positive-class probability (binary), a list of class
    probabilities, a dict with "probabilities" (and/or "label"), a hard class index or a class
    name. References: class indices or class names. The class order comes from
    `context["class_names"]` (a run's task), the `classes` option (a dataset's metric options),
    or the sorted names seen. Binary tasks are scored on the probability of class 1 (the
    biomarker-positive class); tasks with more classes use macro one-vs-rest AUROC/AP (AUPR),
    top-label ECE, the multi-class Brier score, and macro precision/recall/F1 over all K
    classes as the HepatoBench seed's recipe, each class's precision/recall/F1 and bootstrap
    CIs of the macro scores. Proportions (accuracy, sensitivity, specificity, per-class recall and
    precision) get Wilson score intervals (or exact Clopper-Pearson ones), never a bootstrap. The
    confusion matrix, the test set's size ("sample": a small-sample warning when it is too small
    for the bootstrap) and each interval's method ("intervals") are in `details`. Options
    (context["options"]): `n_bins` (10), `n_resamples` (1000, 0 = no bootstrap CI), `ci_level`
    (0.95), `proportion_ci` ("wilson" or "exact"), `seed` (0), `classes`, `n_classes`;
    `selection=True` skips every CI.
    """

    name: ClassVar[str] = "classification"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("n_bins", "int", DEFAULT_BINS, "calibration bins (ECE, reliability)"),
        DatasetOption("n_resamples", "int", DEFAULT_RESAMPLES, "bootstrap resamples (0: no CI)"),
        DatasetOption("ci_level", "float", DEFAULT_LEVEL, "confidence level of the CIs"),
        DatasetOption("seed", "int", 0, "bootstrap seed"),
        DatasetOption("proportion_ci", "str", DEFAULT_PROPORTION_CI,
                      "interval of proportions (accuracy, sensitivity, ...): wilson, or exact (Clopper-Pearson)"),
        DatasetOption("classes", "any", None, "class order (a list of names)"),
        DatasetOption("n_classes", "int", None, "number of classes, when no names are known"),
        DatasetOption("selection", "bool", False, "true: the per-epoch selection score, without CIs"),
    )
    description: ClassVar[str] = ("AUROC (+ bootstrap CI), AP, balanced accuracy, F1, ECE, Brier, ROC/PR/reliability; "
                                  "K classes: macro/per-class precision, recall, F1, confusion matrix")
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_CLASSIFICATION, TASK_PATCH_CLASSIFICATION, TASK_ZERO_SHOT)
    higher_is_better: ClassVar[bool] = True
    headline_scores: ClassVar[tuple[str, ...]] = ("AUROC", "macro_F1")
    lower_is_better: ClassVar[tuple[str, ...]] = ("ECE", "Brier")
    informational: ClassVar[tuple[str, ...]] = ("n_cases", "n_positive", "prevalence")
    evaluate_features: ClassVar[Any] = _EvaluateFeatures()
    # balanced accuracy is the mean of `balanced_accuracy_term`: a case's correctness weighted by
    # N / (K n_class), K the classes present, so paired tests and suites compare it case by case
    # (eva's leaderboard score); the weights are the test set's, fixed under resampling.
    paired_scores: ClassVar[dict[str, tuple[str, str]]] = {"AUROC": ("auroc", "probabilities"),
                                                           "accuracy": ("correct", "correct"),
                                                           "balanced_accuracy": ("mean", "balanced_accuracy_term")}

    def compute(self, predictions: Sequence[Any], references: Sequence[Any], *, ids: Sequence[str] | None = None,
                context: Mapping[str, Any] | None = None) -> MetricResult:
        import numpy as np
        import polars as pl

        # checked here too (idempotent), for calls that do not come through the metric runner
        options = self.checked_options(dict((context or {}).get("options") or {}))
        n_bins = int(options.get("n_bins", DEFAULT_BINS))
        n_resamples = int(options.get("n_resamples", DEFAULT_RESAMPLES))
        level = float(options.get("ci_level", DEFAULT_LEVEL))
        seed = int(options.get("seed", 0))
        method = str(options.get("proportion_ci", DEFAULT_PROPORTION_CI))
        if options.get("selection"):
            n_resamples = 0
            method = ""
        _check_cases(predictions, references, n_bins)
        classes = _class_list(references, predictions, context or {}, options)
        predictions = [_indexed_prediction(p, classes, i) for i, p in enumerate(predictions)]
        labels = np.array([_label_index(r, classes, f"case {i}") for i, r in enumerate(references)])
        if (labels < 0).any():
            raise PathkitError(f"classification: negative class index {int(labels.min())} in the references")
        n_classes = int(options.get("n_classes") or (len(classes) if classes else 0)
                        or max(2, int(labels.max()) + 1, _width(predictions)))
        if int(labels.max()) >= n_classes:
            raise PathkitError(f"classification: reference class {int(labels.max())} outside 0..{n_classes - 1}")
        probs = probability_matrix(predictions, n_classes)
        predicted = probs.argmax(axis=1)
        names = list(classes) if classes and len(classes) == n_classes else [str(k) for k in range(n_classes)]
        confusion = confusion_matrix(labels, predicted, n_classes)
        details: dict[str, Any] = {"classes": names, "confusion_matrix": confusion.tolist(),
                                   "confusion_axes": ["reference", "prediction"]}
        summary: dict[str, float] = {"n_cases": float(labels.size)}
        per_case: dict[str, Any] = {"target": labels.tolist(), "predicted": predicted.tolist(),
                                    "correct": (predicted == labels).tolist(), "probabilities": probs.tolist()}
        if ids is not None:
            per_case = {"id": [str(i) for i in ids], **per_case}
        recalls = [float((predicted[labels == k] == k).mean()) for k in range(n_classes) if (labels == k).any()]
        summary["accuracy"] = float((predicted == labels).mean())
        summary["balanced_accuracy"] = float(np.mean(recalls))
        class_sizes = np.bincount(labels, minlength=n_classes)
        per_case["balanced_accuracy_term"] = ((predicted == labels) * labels.size
                                              / (len(recalls) * class_sizes[labels])).tolist()
        details[SAMPLE_KEY] = sample_facts(int(labels.size), {names[k]: int((labels == k).sum())
                                                              for k in range(n_classes)})
        intervals: dict[str, str] = {}
        if method:
            _proportion(summary, intervals, "accuracy", int((predicted == labels).sum()), int(labels.size), level,
                        method)
        if n_resamples > 0:
            intervals["AUROC"] = f"percentile bootstrap ({n_resamples} resamples of the test cases)"
        if n_classes == 2:
            self._binary(summary, per_case, probs[:, 1], labels, predicted, n_bins, n_resamples, level, seed)
            if method:
                positive = labels == 1
                _proportion(summary, intervals, "sensitivity", int((predicted[positive] == 1).sum()),
                            int(positive.sum()), level, method)
                _proportion(summary, intervals, "specificity", int((predicted[~positive] == 0).sum()),
                            int((~positive).sum()), level, method)
            if not options.get("selection"):
                details.update(curve_details({names[1]: (probs[:, 1], labels == 1)}, probs[:, 1], labels == 1,
                                             n_bins, f"probability of {names[1]}"))
        else:
            self._multiclass(summary, per_case, probs, labels, predicted, n_classes, n_bins, n_resamples,
                             level, seed)
            self._per_class(summary, details, confusion, labels, predicted, names, n_resamples, level, seed)
            if n_resamples > 0:
                intervals.update({k: intervals["AUROC"] for k in MACRO_KEYS[1:]})
            if method:
                _class_proportions(summary, intervals, confusion, names, level, method)
            per_case["target_class"] = [names[k] for k in labels]
            per_case["predicted_class"] = [names[k] for k in predicted]
            if not options.get("selection"):
                present = {names[k]: (probs[:, k], labels == k) for k in range(n_classes)
                           if (labels == k).any() and (labels != k).any()}
                details.update(curve_details(present, probs.max(axis=1), predicted == labels, n_bins,
                                             "top-label confidence"))
        if intervals:
            details["intervals"] = intervals
        return MetricResult(summary, pl.DataFrame(per_case), details)

    @staticmethod
    def _per_class(summary: dict[str, float], details: dict[str, Any], confusion: np.ndarray, labels: np.ndarray,
                   predicted: np.ndarray, names: Sequence[str], n_resamples: int, level: float, seed: int) -> None:
        """Macro precision/recall/F1 over the K declared classes, each class's scores, CIs."""
        macro = macro_scores(confusion)
        for key in MACRO_KEYS[2:]:
            summary[key] = float(macro[key])
        summary["F1"] = summary["macro_F1"]
        if n_resamples > 0:
            for key, (low, high) in _macro_cis(labels, predicted, len(names), n_resamples, level, seed).items():
                if key != "accuracy":  # a proportion: its interval is Wilson's (or exact), not the bootstrap's
                    summary[f"{key}_ci_low"], summary[f"{key}_ci_high"] = low, high
        scores = per_class_scores(confusion)
        rows = []
        for k, name in enumerate(names):
            row = {"class": name, "support": int(scores["support"][k]), "predicted": int(confusion[:, k].sum())}
            for key in ("precision", "recall", "F1"):
                summary[f"{key}_{name}"] = row[key] = float(scores[key][k])
            rows.append(row)
        details["per_class"] = rows

    @staticmethod
    def _binary(summary: dict[str, float], per_case: dict[str, Any], p: np.ndarray, y: np.ndarray,
                predicted: np.ndarray, n_bins: int, n_resamples: int, level: float, seed: int) -> None:
        import numpy as np

        positive = y == 1
        tp = int((predicted[positive] == 1).sum())
        fp = int((predicted[~positive] == 1).sum())
        fn = int(positive.sum()) - tp
        summary["n_positive"] = float(positive.sum())
        summary["prevalence"] = float(positive.mean())
        summary["AUROC"] = auroc(p, y)
        if n_resamples > 0:
            summary["AUROC_ci_low"], summary["AUROC_ci_high"] = _auroc_ci([p], [y], n_resamples, level, seed)
        summary["AP"] = average_precision(p, y)
        summary["sensitivity"] = tp / int(positive.sum()) if positive.any() else math.nan
        summary["specificity"] = float((predicted[~positive] == 0).mean()) if (~positive).any() else math.nan
        summary["F1"] = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0
        summary["ECE"] = expected_calibration_error(p, y, n_bins)
        summary["Brier"] = float(np.mean((p - y) ** 2))
        # Per-case ROC/PR coordinates at that case's own score as threshold: sorting the rows by
        # `prob_positive` rebuilds both curves without a side file.
        n_pos, n_neg = int(positive.sum()), int((~positive).sum())
        tp_at = n_pos - np.searchsorted(np.sort(p[positive]), p, side="left")
        fp_at = n_neg - np.searchsorted(np.sort(p[~positive]), p, side="left")
        per_case["prob_positive"] = p.tolist()
        per_case["calibration_bin"] = calibration_bins(p, n_bins).tolist()
        per_case["roc_fpr"] = (fp_at / n_neg).tolist() if n_neg else [math.nan] * p.size
        per_case["roc_tpr"] = (tp_at / n_pos).tolist() if n_pos else [math.nan] * p.size
        per_case["pr_precision"] = (tp_at / (tp_at + fp_at)).tolist()
        per_case["pr_recall"] = per_case["roc_tpr"]

    @staticmethod
    def _multiclass(summary: dict[str, float], per_case: dict[str, Any], probs: np.ndarray, y: np.ndarray,
                    predicted: np.ndarray, n_classes: int, n_bins: int, n_resamples: int, level: float,
                    seed: int) -> None:
        import numpy as np

        present = [k for k in range(n_classes) if (y == k).any() and (y != k).any()]
        summary["AUROC"] = float(np.mean([auroc(probs[:, k], y == k) for k in present])) if present else math.nan
        if n_resamples > 0:
            summary["AUROC_ci_low"], summary["AUROC_ci_high"] = _auroc_ci(
                [probs[:, k] for k in present], [y == k for k in present], n_resamples, level, seed)
        summary["AP"] = (float(np.mean([average_precision(probs[:, k], y == k) for k in present]))
                         if present else math.nan)
        summary["AUPR"] = summary["AP"]  # macro one-vs-rest area under the PR curve (step interpolation)
        confidence = probs.max(axis=1)
        summary["ECE"] = expected_calibration_error(confidence, predicted == y, n_bins)
        onehot = np.eye(n_classes)[y]
        summary["Brier"] = float(np.mean(((probs - onehot) ** 2).sum(axis=1)))
        per_case["confidence"] = confidence.tolist()
        per_case["prob_target"] = probs[np.arange(y.size), y].tolist()
        per_case["calibration_bin"] = calibration_bins(confidence, n_bins).tolist()


def _proportion(summary: dict[str, float], intervals: dict[str, str], key: str, successes: int, n: int,
                level: float, method: str) -> None:
    """`<key>_ci_low`/`_ci_high` of a proportion (Wilson score or exact Clopper-Pearson; none when
    n is 0), and the method's name under details["intervals"]."""
    if n == 0:
        return
    summary[f"{key}_ci_low"], summary[f"{key}_ci_high"] = proportion_ci(successes, n, level, method)
    name = "Clopper-Pearson exact" if PROPORTION_METHODS[method.lower()] == "exact" else "Wilson score"
    intervals[key] = f"{name} ({successes}/{n})"


def _width(predictions: Sequence[Any]) -> int:
    for pred in predictions:
        value = pred
        if isinstance(value, Mapping):
            value = next((value[k] for k in PROBABILITY_KEYS if k in value), None)
        if isinstance(value, list | tuple):
            return len(value)
        if hasattr(value, "shape") and getattr(value, "ndim", 0) == 1:
            return int(value.shape[0])
    return 0


def _auroc_ci(scores: list[np.ndarray], labels: list[np.ndarray], n_resamples: int, level: float,
              seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of the (macro) AUROC, resampling cases with replacement."""
    import numpy as np

    if n_resamples <= 0 or not scores:
        return (math.nan, math.nan)
    from pathkit_sdk.bootstrap import bootstrap_statistic_ci

    stats = [_WeightedAuroc(np.asarray(s, np.float64), np.asarray(y).astype(bool)) for s, y in zip(scores, labels,
                                                                                                  strict=True)]

    def statistic(block: np.ndarray) -> np.ndarray:
        return np.mean([stat(block) for stat in stats], axis=0)

    return bootstrap_statistic_ci(statistic, int(scores[0].size), n_resamples, seed, level, vectorized=True)


@hookimpl
def register_metrics(register):
    register(ClassificationMetric)
