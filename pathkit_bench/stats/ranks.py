"""Comparing k models over N tasks (Demšar 2006, "Statistical comparisons of classifiers over
multiple data sets", JMLR 7): average ranks, Friedman's test with the Iman-Davenport F, the Nemenyi
critical difference CD = q_alpha sqrt(k (k + 1) / (6 N)) with q_alpha the studentized range
quantile (infinite degrees of freedom) over sqrt(2) (Demšar's table 5a), the groups of models the CD
does not separate (the bars of a CD diagram), and win/tie/loss counts from per-task tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pathkit_core.contracts import PathkitError


@dataclass(frozen=True)
class FriedmanResult:
    statistic: float  # Friedman's chi-square (scipy: with the correction for ties)
    p_value: float
    iman_davenport: float  # F_F = (N - 1) chi2 / (N (k - 1) - chi2), Demšar 2006 eq. after (2)
    p_value_f: float
    average_ranks: Any
    n_tasks: int
    n_models: int


def _matrix(scores: Any):
    import numpy as np

    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise PathkitError(f"scores must be (tasks, models); got shape {x.shape}")
    if np.isnan(x).any():
        raise PathkitError("scores hold NaN: rank only models scored on every task")
    return x


def rank_rows(scores: Any, higher_is_better: bool = True):
    """Rank of each model within each task (1 = best; ties share their mean rank), shape (tasks, models)."""
    from scipy.stats import rankdata

    x = _matrix(scores)
    return rankdata(-x if higher_is_better else x, axis=1)


def average_ranks(scores: Any, higher_is_better: bool = True):
    """Mean over tasks of each model's rank (1 = best), shape (models,)."""
    return rank_rows(scores, higher_is_better).mean(axis=0)


def friedman_test(scores: Any, higher_is_better: bool = True) -> FriedmanResult:
    """Friedman's test that all models rank alike over the tasks (scipy.stats.friedmanchisquare;
    needs at least 3 models), with Iman and Davenport's F statistic."""
    import numpy as np
    from scipy.stats import f as f_dist
    from scipy.stats import friedmanchisquare

    x = _matrix(scores)
    n, k = x.shape
    ranks = average_ranks(x, higher_is_better)
    if k < 3 or n < 2:
        return FriedmanResult(math.nan, math.nan, math.nan, math.nan, ranks, n, k)
    if np.all(x == x[:, :1]):  # every task a tie among all models: no evidence of a difference
        return FriedmanResult(0.0, 1.0, 0.0, 1.0, ranks, n, k)
    result = friedmanchisquare(*x.T)
    chi2 = float(result.statistic)
    denom = n * (k - 1) - chi2
    ff = (n - 1) * chi2 / denom if denom > 0 else math.inf
    pf = float(f_dist.sf(ff, k - 1, (k - 1) * (n - 1))) if math.isfinite(ff) else 0.0
    return FriedmanResult(chi2, float(result.pvalue), float(ff), pf, ranks, n, k)


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """q_alpha of the Nemenyi test for k models: the studentized range quantile at 1 - alpha with k
    groups and infinite degrees of freedom, divided by sqrt(2)."""
    from scipy.stats import studentized_range

    if k < 2:
        raise PathkitError(f"the Nemenyi test compares at least 2 models, got {k}")
    return float(studentized_range.ppf(1.0 - alpha, k, math.inf)) / math.sqrt(2.0)


def nemenyi_cd(k: int, n_tasks: int, alpha: float = 0.05) -> float:
    """Critical difference of average ranks for k models over n_tasks tasks (Demšar 2006, section 3.2.2)."""
    if n_tasks < 1:
        raise PathkitError(f"the critical difference needs at least one task, got {n_tasks}")
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n_tasks))


def cd_cliques(ranks: Any, cd: float) -> list[list[int]]:
    """Maximal groups (indices, best rank first) of two or more models whose average ranks all lie
    within less than `cd` of each other: the bars of a critical-difference diagram."""
    import numpy as np

    r = np.asarray(ranks, dtype=np.float64)
    order = list(np.argsort(r, kind="stable"))
    groups: list[list[int]] = []
    last_end = -1
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and r[order[end + 1]] - r[order[start]] < cd:
            end += 1
        if end > start and end > last_end:
            groups.append([int(i) for i in order[start:end + 1]])
            last_end = end
    return groups


def win_tie_loss(differences: Any, p_adjusted: Any, alpha: float = 0.05):
    """(wins, ties, losses), each (models, models): over tasks, how often row beat column
    significantly (difference > 0 and adjusted p < alpha), lost significantly, or neither.
    `differences` and `p_adjusted` are (tasks, models, models), differences oriented so that
    positive means the row model is better."""
    import numpy as np

    d = np.asarray(differences, dtype=np.float64)
    p = np.asarray(p_adjusted, dtype=np.float64)
    if d.shape != p.shape or d.ndim != 3:
        raise PathkitError(f"differences and p-values must both be (tasks, models, models); got {d.shape}, {p.shape}")
    significant = np.nan_to_num(p, nan=1.0) < alpha
    wins = (significant & (d > 0)).sum(axis=0)
    losses = (significant & (d < 0)).sum(axis=0)
    counted = (~np.isnan(d)).sum(axis=0)
    ties = counted - wins - losses
    k = d.shape[1]
    eye = np.eye(k, dtype=bool)
    for m in (wins, ties, losses):
        m[eye] = 0
    return wins, ties, losses


__all__ = ["FriedmanResult", "average_ranks", "cd_cliques", "friedman_test", "nemenyi_cd", "nemenyi_q",
           "rank_rows", "win_tie_loss"]
