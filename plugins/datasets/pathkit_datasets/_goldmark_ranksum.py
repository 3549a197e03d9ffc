"""Encoder rank-sums across tasks (GOLDMARK Table 2): rank encoders per task by AUROC, sum the ranks."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any


def _average_ranks(scores: Mapping[str, float]) -> dict[str, float]:
    """Rank 1 = highest score; tied encoders share the mean of their ranks."""
    ordered = sorted(scores.items(), key=lambda kv: -kv[1])
    ranks: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1][1] == ordered[i][1]:
            j += 1
        for k in range(i, j + 1):
            ranks[ordered[k][0]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def top_tasks(rows: Sequence[Mapping[str, Any]], k: int, *, score: str = "value") -> list[str]:
    """The `k` tasks with the highest median score over every encoder and setting (Figure 3's selection)."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        value = float(r[score])
        if math.isfinite(value):
            by_task[str(r["task"])].append(value)
    medians = {task: statistics.median(values) for task, values in by_task.items() if values}
    return [task for task, _ in sorted(medians.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def encoder_rank_sums(
    rows: Sequence[Mapping[str, Any]],
    *,
    score: str = "value",
    tasks: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Per setting and encoder: mean score across tasks and the Borda rank-sum (lower is better).

    `rows` hold "setting", "task", "encoder" and the score (e.g. the mean AUROC over the five
    splits). As in the paper, only tasks that every encoder of the setting has a score for
    ("complete coverage") enter; `n_tasks` says how many did.
    """
    grid: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        value = float(r[score])
        if tasks is not None and str(r["task"]) not in tasks:
            continue
        if math.isfinite(value):
            grid[str(r["setting"])][str(r["task"])][str(r["encoder"])] = value
    out = []
    for setting, by_task in grid.items():
        encoders = sorted({e for per in by_task.values() for e in per})
        complete = {t: per for t, per in by_task.items() if set(per) == set(encoders)}
        sums = dict.fromkeys(encoders, 0.0)
        totals = dict.fromkeys(encoders, 0.0)
        for per in complete.values():
            for encoder, rank in _average_ranks(per).items():
                sums[encoder] += rank
                totals[encoder] += per[encoder]
        n = len(complete)
        for encoder in encoders:
            out.append({"setting": setting, "encoder": encoder, "rank_sum": sums[encoder] if n else math.nan,
                        "mean_score": totals[encoder] / n if n else math.nan, "n_tasks": n})
    out.sort(key=lambda r: (r["setting"], r["rank_sum"], r["encoder"]))
    return out


__all__ = ["encoder_rank_sums", "top_tasks"]
