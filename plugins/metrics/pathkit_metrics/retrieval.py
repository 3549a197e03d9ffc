"""Retrieval metrics by Patho-Bench's definitions (docs/retrieval.md): top-k accuracy, majority-vote
accuracy at k and mAP@k of ranked retrieved classes, each a mean over queries with a bootstrap CI.

A prediction is `{"retrieved": [class index, ...]}` (most similar first), a reference the query's
class index (or name, with the class names in the context or option `classes`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_metrics._intervals import DEFAULT_LEVEL, RESAMPLE_OPTIONS, SELECTION_OPTION, add_intervals, n_resamples
from pathkit_tasks import TASK_RETRIEVAL

if TYPE_CHECKING:
    pass

DEFAULT_KS = (1, 3, 5)


def query_scores(ranked: Sequence[int], label: int, k: int) -> tuple[float, float, float]:
    """(top-k hit, majority-vote hit, average precision at k) of one query.

    - top-k: 1 when any of the first k retrieved classes is the query's;
    - majority vote: 1 when the query's class is among the most frequent classes of the first k
      (every class tied for most frequent counts: Patho-Bench's `mv_acc_at_k`);
    - AP@k: the sum of the precision at each rank j <= k where the class matches, divided by k
      (not by the number of matches), 0 without a match (Patho-Bench's `map_at_k`).
    """
    from collections import Counter

    top = list(ranked[:k])
    hit = float(label in top)
    counts = Counter(top)
    most = max(counts.values()) if counts else 0
    vote = float(counts.get(label, 0) == most and most > 0)
    found, precision = 0, 0.0
    for j, c in enumerate(top):
        if c == label:
            found += 1
            precision += found / (j + 1)
    return hit, vote, precision / k if found else 0.0


def _listed(value: Any) -> list[Any]:
    """An option's values: "1,3,5", [1, 3, 5] or a single value."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",")]
    return list(value) if isinstance(value, list | tuple) else [value]


def _ks(option: Any) -> list[int]:
    values = option if option is not None else DEFAULT_KS
    try:
        ks = sorted({int(v) for v in _listed(values) if not isinstance(v, bool)})
    except (TypeError, ValueError):
        ks = []
    if not ks or ks[0] < 1:
        raise PathkitError(f"retrieval: ks {values!r} must be positive whole numbers, e.g. 1,3,5")
    return ks


def _index(value: Any, classes: Sequence[str] | None, where: str) -> int:
    """A class as its index: a class name of `classes`, or a whole number 0..K-1 (any whole
    number >= 0 when the classes are not named); a PathkitError naming `where` otherwise."""
    if classes is not None and isinstance(value, str) and value in classes:
        return list(classes).index(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (
            classes is not None and value >= len(classes)):
        span = f"0..{len(classes) - 1}" if classes is not None else "0 or more"
        raise PathkitError(f"retrieval: {where}: {value!r} is not a class index ({span}) or class name")
    return value


def _labels(references: Sequence[Any], classes: Sequence[str] | None) -> list[int]:
    out = []
    for i, ref in enumerate(references):
        if isinstance(ref, dict):
            ref = ref.get("label", ref.get("class"))
        out.append(_index(ref, classes, f"reference {i}"))
    return out


class RetrievalMetric(Metric):
    """Top-k accuracy, majority-vote accuracy at k and mAP@k (Patho-Bench), with bootstrap CIs."""

    name: ClassVar[str] = "retrieval"
    description: ClassVar[str] = "top-k and majority-vote accuracy, mAP@k of retrieved classes (Patho-Bench), CIs"
    tasks: ClassVar[tuple[str, ...]] = (TASK_RETRIEVAL,)
    headline_scores: ClassVar[tuple[str, ...]] = ("top1_acc", "mv@5_acc", "mAP@5")
    whole_records: ClassVar[bool] = True
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("ks", "any", None, "the k of each score, comma-separated (default 1,3,5)"),
        DatasetOption("classes", "any", None, "class names, to read references given by name"),
        *RESAMPLE_OPTIONS, SELECTION_OPTION,
    )

    def compute(self, predictions, references, *, ids=None, context=None) -> MetricResult:
        import numpy as np
        import polars as pl

        context = dict(context or {})
        options = self.checked_options(dict(context.get("options") or {}))
        ks = _ks(options.get("ks"))
        classes = options.get("classes") or context.get("class_names")
        classes = [str(c) for c in _listed(classes)] if classes else None
        if len(predictions) != len(references) or not references:
            raise PathkitError(f"retrieval: {len(predictions)} predictions for {len(references)} references")
        labels = _labels(references, classes)
        ranked = []
        for i, pred in enumerate(predictions):
            row = pred.get("retrieved") if isinstance(pred, dict) else None
            if not isinstance(row, list) or not row:
                raise PathkitError(f"retrieval: prediction {i}: needs \"retrieved\", a non-empty list of classes")
            ranked.append([_index(c, classes, f"prediction {i}") for c in row])
        columns: dict[str, Any] = {"id": [str(i) for i in ids] if ids is not None else
                                   [str(i) for i in range(len(labels))], "target": labels}
        for k in ks:
            scores = np.asarray([query_scores(r, y, k) for r, y in zip(ranked, labels, strict=True)])
            columns[f"top{k}_acc"], columns[f"mv@{k}_acc"], columns[f"mAP@{k}"] = scores.T
        keys = [c for c in columns if c not in ("id", "target")]
        summary = {key: float(np.mean(columns[key])) for key in keys}
        summary["n_cases"] = float(len(labels))
        details: dict[str, Any] = {"ks": ks, "classes": classes,
                                   "per_class_retrieval": self._per_class(columns, keys, labels, classes)}
        n = n_resamples(options)
        if n > 0:
            from pathkit_sdk.bootstrap import bootstrap_ci

            seed, level = int(options.get("seed", 0)), float(options.get("ci_level", DEFAULT_LEVEL))
            intervals = {key: bootstrap_ci(np.asarray(columns[key]), n, seed, level) for key in keys}
            add_intervals(summary, details, intervals, keys, n, "queries")
        return MetricResult(summary, pl.DataFrame(columns), details)

    @staticmethod
    def _per_class(columns: dict[str, Any], keys: list[str], labels: list[int],
                   classes: Sequence[str] | None) -> list[dict[str, Any]]:
        import numpy as np

        y = np.asarray(labels)
        rows = []
        for c in sorted(set(labels)):
            mask = y == c
            name = classes[c] if classes is not None and c < len(classes) else str(c)
            rows.append({"class": name, "support": int(mask.sum()),
                         **{key: float(np.asarray(columns[key])[mask].mean()) for key in keys}})
        return rows


@hookimpl
def register_metrics(register):
    register(RetrievalMetric)
