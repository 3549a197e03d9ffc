"""Few-shot curve metrics (docs/few-shot.md): for each k, the accuracy and balanced accuracy
(scikit-learn) of every episode on the whole test set, their mean over episodes and the episode
interval (the 2.5th and 97.5th percentiles of the episodes' scores).

A prediction is `{"shots": {"k": [class index in each episode]}}`, a reference the case's class
index (or name, with the class names in the context or option `classes`). The per-case column
`acc@<k>shot` is the share of episodes that classified the case right: its mean over the test cases
is the mean episode accuracy, so `pathkit compare` pairs two runs case by case on the same support
sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_tasks import TASK_FEW_SHOT

EPISODE_INTERVAL = (2.5, 97.5)


def shot_key(k: int) -> str:
    return f"acc@{k}shot"


def _labels(references: Sequence[Any], classes: Sequence[str] | None) -> list[int]:
    out = []
    for i, ref in enumerate(references):
        if isinstance(ref, int) and not isinstance(ref, bool):
            out.append(ref)
        elif classes is not None and str(ref) in classes:
            out.append(list(classes).index(str(ref)))
        else:
            raise PathkitError(f"few-shot: reference {i}: {ref!r} is not a class index or class name")
    return out


def episode_table(predictions: Sequence[Any]) -> dict[int, Any]:
    """{k: (cases, episodes) predicted classes}; a PathkitError naming the case whose shots differ."""
    import numpy as np

    rows: dict[int, list[list[int]]] = {}
    for i, pred in enumerate(predictions):
        shots = pred.get("shots") if isinstance(pred, dict) else None
        if not isinstance(shots, dict) or not shots:
            raise PathkitError(f"few-shot: prediction {i}: needs \"shots\": {{\"<k>\": [class per episode]}}")
        if i and set(map(int, shots)) != set(rows):
            raise PathkitError(f"few-shot: prediction {i} has shots {sorted(map(int, shots))}, the first "
                               f"{sorted(rows)}")
        for k, row in shots.items():
            rows.setdefault(int(k), []).append([int(c) for c in row])
    out = {}
    for k, table in sorted(rows.items()):
        if len({len(r) for r in table}) != 1:
            raise PathkitError(f"few-shot: the cases hold different episode counts at k={k}")
        out[k] = np.asarray(table, dtype=np.int64)
    return out


class FewShotMetric(Metric):
    """Per k: mean episode accuracy and balanced accuracy with their episode intervals."""

    name: ClassVar[str] = "few-shot"
    description: ClassVar[str] = "accuracy and balanced accuracy at each k shots, mean and interval over episodes"
    tasks: ClassVar[tuple[str, ...]] = (TASK_FEW_SHOT,)
    headline_scores: ClassVar[tuple[str, ...]] = ("acc@1shot", "acc@4shot", "acc@16shot")
    # every k is compared in a suite, not only the compared score (`pathkit_bench.suite.analysis`)
    curve_scores: ClassVar[tuple[str, ...]] = tuple(shot_key(k) for k in (1, 2, 4, 8, 16, 32))
    score_ranges: ClassVar[dict[str, tuple[float, float]]] = {shot_key(k): (0.0, 1.0) for k in (1, 2, 4, 8, 16, 32)}
    whole_records: ClassVar[bool] = True
    citation: ClassVar[str] = ("Wang Y et al. SimpleShot: revisiting nearest-neighbor classification for few-shot "
                               "learning. arXiv:1911.04623, 2019; Chen RJ et al. Towards a general-purpose "
                               "foundation model for computational pathology (UNI). Nat Med 2024")
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("classes", "any", None, "class names, to read references given by name"),
    )

    def compute(self, predictions, references, *, ids=None, context=None) -> MetricResult:
        import numpy as np
        import polars as pl
        from sklearn.metrics import balanced_accuracy_score

        context = dict(context or {})
        options = self.checked_options(dict(context.get("options") or {}))
        classes = options.get("classes") or context.get("class_names")
        classes = [str(c) for c in (classes.split(",") if isinstance(classes, str) else classes)] if classes else None
        if len(predictions) != len(references) or not references:
            raise PathkitError(f"few-shot: {len(predictions)} predictions for {len(references)} references")
        y = np.asarray(_labels(references, classes))
        columns: dict[str, Any] = {"id": [str(i) for i in ids] if ids is not None else
                                   [str(i) for i in range(y.size)], "target": y}
        summary: dict[str, float] = {}
        curve = []
        for k, table in episode_table(predictions).items():
            right = table == y[:, None]  # (cases, episodes)
            acc = right.mean(axis=0)
            bacc = np.asarray([balanced_accuracy_score(y, table[:, e]) for e in range(table.shape[1])])
            columns[shot_key(k)] = right.mean(axis=1)
            row = {"k": k, "episodes": int(table.shape[1])}
            for name, values in (("acc", acc), ("bacc", bacc)):
                low, high = np.percentile(values, EPISODE_INTERVAL)
                key = f"{name}@{k}shot"
                summary[key], summary[f"{key}_episode_low"], summary[f"{key}_episode_high"] = (
                    float(values.mean()), float(low), float(high))
                row.update({name: float(values.mean()), f"{name}_low": float(low), f"{name}_high": float(high),
                            f"{name}_sd": float(values.std(ddof=1)) if values.size > 1 else None})
            curve.append(row)
        summary["n_cases"] = float(y.size)
        details = {"curve": curve, "classes": classes,
                   "intervals": {"episode": f"{EPISODE_INTERVAL[0]:g}th-{EPISODE_INTERVAL[1]:g}th percentile of the "
                                 "episodes' scores"}}
        return MetricResult(summary, pl.DataFrame(columns), details)


@hookimpl
def register_metrics(register):
    register(FewShotMetric)
