"""DeLong's test for the difference of two correlated AUROCs (DeLong, DeLong & Clarke-Pearson 1988),
computed with the fast algorithm of Sun & Xu (2014): midranks instead of the O(n1 n0) comparisons.

For scores X of the n1 positives and Y of the n0 negatives, the structural components are
V10(X_i) = share of negatives scored below X_i (ties count 1/2) and V01(Y_j) = share of positives
scored above Y_j; AUROC = mean V10 = mean V01, and the covariance of the AUROCs of several models on
the same cases is S10 / n1 + S01 / n0, S10 and S01 the sample covariances (n - 1) of the components
(DeLong 1988, equations 4-5). Sun & Xu (2014, section 3) obtain the components from midranks:
V10_i = (T_Z(i) - T_X(i)) / n0 and V01_j = 1 - (T_Z(n1 + j) - T_Y(j)) / n1.

One-vs-rest macro AUROC (`delong_test_ovr`): the mean over classes of each class's AUROC against
the rest. Its difference between two models is a linear combination of AUROCs whose positive and
negative groups differ by class, so DeLong's two-sample variance is taken over the true classes:
each case's influence on the macro difference is sum over classes k of [V10 or V01 of the case for
class k] / [its group's size] / K, and the variance is the sum over true classes g of n_g times the
sample variance of the influences of the cases of class g. With two classes this is exactly the
binary DeLong variance (docs/comparisons.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pathkit_core.contracts import PathkitError


@dataclass(frozen=True)
class DeLongResult:
    auc_a: float
    auc_b: float
    difference: float
    se: float
    z: float
    p_value: float
    ci_low: float
    ci_high: float
    n_positive: int = 0  # binary only
    n_negative: int = 0


def _components(scores: Any, positive: Any):
    """(aucs (m,), V10 (m, n1), V01 (m, n0)) of m score rows on one set of cases (Sun & Xu 2014)."""
    import numpy as np
    from scipy.stats import rankdata

    x = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    pos = np.asarray(positive, dtype=bool)
    if x.shape[1] != pos.size:
        raise PathkitError(f"DeLong: {x.shape[1]} scores for {pos.size} labels")
    if not np.isfinite(x).all():
        raise PathkitError("DeLong: scores must be finite numbers")
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if n1 == 0 or n0 == 0:
        raise PathkitError(f"DeLong: AUROC needs positives and negatives; got {n1} and {n0}")
    xs, ys = x[:, pos], x[:, ~pos]
    tx = rankdata(xs, axis=1)
    ty = rankdata(ys, axis=1)
    tz = rankdata(np.concatenate([xs, ys], axis=1), axis=1)
    v10 = (tz[:, :n1] - tx) / n0
    v01 = 1.0 - (tz[:, n1:] - ty) / n1
    aucs = v10.mean(axis=1)
    return aucs, v10, v01


def auroc_covariance(scores: Any, positive: Any):
    """(AUROCs (m,), their DeLong covariance (m, m)) of m models' scores (m, cases) on binary labels."""
    import numpy as np

    aucs, v10, v01 = _components(scores, positive)
    n1, n0 = v10.shape[1], v01.shape[1]
    s10 = np.atleast_2d(np.cov(v10)) if n1 > 1 else np.zeros((aucs.size, aucs.size))
    s01 = np.atleast_2d(np.cov(v01)) if n0 > 1 else np.zeros((aucs.size, aucs.size))
    return aucs, s10 / n1 + s01 / n0


def _z_test(auc_a: float, auc_b: float, variance: float, level: float, n1: int, n0: int) -> DeLongResult:
    from scipy.stats import norm

    diff = auc_a - auc_b
    se = math.sqrt(max(variance, 0.0))
    if se == 0.0:
        z = 0.0 if diff == 0 else math.copysign(math.inf, diff)
        p = 1.0 if diff == 0 else 0.0
    else:
        z = diff / se
        p = float(2.0 * norm.sf(abs(z)))
    half = float(norm.ppf(0.5 + level / 2.0)) * se
    return DeLongResult(float(auc_a), float(auc_b), float(diff), se, float(z), min(1.0, p), diff - half, diff + half,
                        n1, n0)


def delong_test(scores_a: Any, scores_b: Any, positive: Any, level: float = 0.95) -> DeLongResult:
    """DeLong's two-sided z-test of AUROC(a) - AUROC(b) on the same cases (binary labels: True or 1
    is the positive class), with the normal interval of the difference."""
    import numpy as np

    pos = np.asarray(positive).astype(bool)
    aucs, cov = auroc_covariance(np.stack([np.asarray(scores_a, float), np.asarray(scores_b, float)]), pos)
    variance = cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1]
    return _z_test(aucs[0], aucs[1], variance, level, int(pos.sum()), int((~pos).sum()))


def ovr_influences(probabilities: Any, labels: Any):
    """(macro AUROC, per-case influence (cases,), classes used) of one model's (cases, K) class scores:
    the influence of case i is sum_k c_k(i) / K', c_k(i) its V10 / n_k when it is of class k and its
    V01 / (n - n_k) otherwise, over the K' classes that have both positives and negatives."""
    import numpy as np

    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels)
    if p.ndim != 2 or p.shape[0] != y.size:
        raise PathkitError(f"DeLong one-vs-rest: probabilities must be (cases, classes); got {p.shape} "
                           f"for {y.size} labels")
    used = [k for k in range(p.shape[1]) if 0 < int((y == k).sum()) < y.size]
    if not used:
        raise PathkitError("DeLong one-vs-rest: no class has both positive and negative cases")
    influence = np.zeros(y.size)
    total = 0.0
    for k in used:
        pos = y == k
        auc, v10, v01 = _components(p[:, k], pos)
        influence[pos] += v10[0] / pos.sum()
        influence[~pos] += v01[0] / (~pos).sum()
        total += float(auc[0])
    return total / len(used), influence / len(used), used


def delong_test_ovr(probabilities_a: Any, probabilities_b: Any, labels: Any, level: float = 0.95) -> DeLongResult:
    """DeLong's test of the difference of one-vs-rest macro AUROCs of two models' (cases, K) class
    scores on the same cases; `labels` are class indices 0..K-1. With K = 2 it is `delong_test`."""
    import numpy as np

    y = np.asarray(labels)
    auc_a, infl_a, used_a = ovr_influences(probabilities_a, y)
    auc_b, infl_b, used_b = ovr_influences(probabilities_b, y)
    if used_a != used_b:
        raise PathkitError(f"DeLong one-vs-rest: the two models score different classes ({used_a} vs {used_b})")
    phi = infl_a - infl_b
    variance = 0.0
    for g in np.unique(y):
        members = phi[y == g]
        if members.size > 1:
            variance += members.size * float(np.var(members, ddof=1))
    return _z_test(auc_a, auc_b, variance, level, 0, 0)  # no single positive class: counts left 0


def weighted_auroc(scores: Any, positive: Any, weights: Any):
    """AUROC of one score vector with case weights, one row of weights per resample (rows, cases):
    sum over positive-negative pairs of w_i w_j psi(x_i, x_j) / (W_pos W_neg), psi = 1, 1/2 on ties,
    0 (the Mann-Whitney count of DeLong 1988, eq. 2, with each case repeated `weight` times);
    from one sort: the negative weight below each positive is a cumulative sum read at the start
    of its tie group, the tied negative weight the sum over the group. NaN where a side has no weight."""
    import numpy as np

    x = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    order = np.argsort(x, kind="stable")
    xs, ps = x[order], pos[order]
    new = np.r_[True, xs[1:] != xs[:-1]]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], xs.size]
    group = np.cumsum(new) - 1
    ws = w[:, order]
    cum = np.zeros((w.shape[0], xs.size + 1))
    np.cumsum(np.where(ps, 0.0, ws), axis=1, out=cum[:, 1:])
    cols = np.flatnonzero(ps)
    first, last = starts[group[cols]], ends[group[cols]]
    below = cum[:, first]
    tied = cum[:, last] - below
    pos_w = ws[:, cols]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (pos_w * (below + 0.5 * tied)).sum(axis=1) / (pos_w.sum(axis=1) * cum[:, -1])


__all__ = ["DeLongResult", "weighted_auroc", "auroc_covariance", "delong_test", "delong_test_ovr", "ovr_influences"]
