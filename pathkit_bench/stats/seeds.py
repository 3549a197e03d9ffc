"""Inference over training seeds x test cases: the variance of a (difference of) score(s) averaged over
S seeds and n cases split into a case term and a seed term, and a generalized p-value that carries the
seed term's few degrees of freedom into the reference distribution.

Every seed scores every case, so a per-case contrast d[s, i] (a model's score, or the difference of two
models' scores) is a two-way table without replication: d = mu + c_i + g_s + e_si (case, seed, and seed
x case interaction; the crossed random-effects layout). The variance of its mean over the table is
sigma_c^2 / n + sigma_g^2 / S + sigma_e^2 / (n S). From the mean squares of the table:

- case term  A = var_i(mean_s d) / n  = MS_case / (n S), expectation sigma_c^2 / n + sigma_e^2 / (n S)
- seed term  B = var_s(mean_i d) / S  = MS_seed / (n S), expectation sigma_g^2 / S + sigma_e^2 / (n S)
- interaction C = MS_residual / (n S), expectation sigma_e^2 / (n S)

so V = max(A - C, 0) + B estimates the variance (unbiased while A >= C). A and C rest on n - 1 and
(n - 1)(S - 1) degrees of freedom, B on S - 1 only: B (S - 1) / E[B] ~ chi-square(S - 1). The
p-value is the generalized p-value of Tsui & Weerahandi (1989) for that layout:
p = E_U [2 Phi(-|d| / sqrt(max(A - C, 0) + B (S - 1) / U))], U ~ chi-square(S - 1): Student's t with
S - 1 degrees of freedom when the seeds carry all the variance, the normal when the cases do, and
in between a mixture. Satterthwaite's (1946) t with degrees of freedom estimated from the same terms
was measured too liberal with 2-3 seeds and an intermediate seed share (docs/comparisons.md).

For AUROC the per-case values are DeLong's structural components (DeLong, DeLong & Clarke-Pearson
1988; `stats.delong`): for each true class (binary: positives and negatives) the same two-way
decomposition of that group's components, the case and interaction terms summed over the groups; the
seed term from the per-seed AUROCs.

Arrays in, numbers out; docs/comparisons.md ("Several training seeds") gives the choice and its measured
error rates (`benchmarks/bench_seed_inference.py`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from pathkit_core.contracts import PathkitError


@dataclass(frozen=True)
class SeedCaseVariance:
    """The variance of contrasts of seed-and-case means and its terms, each of shape (..., m, m) for
    every pair (row - column) or (..., m) for every model: `variance` = `cases` + `seeds`, `cases` the
    case term less the interaction (at least 0), `seeds` the term of the per-seed values (which holds
    the interaction's share, estimated apart as `interaction`)."""

    variance: Any
    cases: Any
    seeds: Any
    interaction: Any
    n_seeds: int


@dataclass(frozen=True)
class PairwiseSeeds:
    """Every model against every other over seeds x cases: `difference[i, j]` = mean(i) - mean(j), its
    interval, p-value and standard error; each model's own interval."""

    mean: Any  # (models,) mean over seeds and cases
    seed_sd: Any  # (models,) standard deviation of the per-seed values
    ci_low: Any  # (models,)
    ci_high: Any
    difference: Any  # (models, models)
    diff_low: Any
    diff_high: Any
    p_value: Any  # (models, models), 1 on the diagonal
    se: Any  # (models, models) the estimated standard error of the difference
    var_cases: Any  # (models, models): se**2 = var_cases + var_seeds
    var_seeds: Any
    var_interaction: Any
    n_cases: int
    n_seeds: int


def _cov_over(values: Any, axis: int):
    """(..., m, m) sample covariance (denominator k - 1) over `axis` of (..., k, m) values."""
    import numpy as np

    centred = values - values.mean(axis=axis, keepdims=True)
    k = values.shape[axis]
    return np.einsum("...km,...kl->...ml", centred, centred) / max(k - 1, 1)


def group_terms(components: Any):
    """(case term, interaction term) of one group's (..., S, n, m) components (S >= 2): the (..., m, m)
    matrices whose contrast w'Mw is that term of the contrast's variance: MS_case / (n S) and
    MS_residual / (n S) of the two-way table."""
    import numpy as np

    u = np.asarray(components, dtype=np.float64)
    n_seeds, n = u.shape[-3], u.shape[-2]
    case = _cov_over(u.mean(axis=-3), -2) / n
    resid = (u - u.mean(axis=-3, keepdims=True) - u.mean(axis=-2, keepdims=True)
             + u.mean(axis=(-3, -2), keepdims=True))
    interaction = np.einsum("...sim,...sil->...ml", resid, resid) / ((n - 1) * (n_seeds - 1)) / (n_seeds * n)
    return case, interaction


def _pairs(matrix: Any):
    """Var(row - column) of every pair from a (..., m, m) covariance-like matrix."""
    import numpy as np

    diag = np.diagonal(matrix, axis1=-2, axis2=-1)
    return diag[..., :, None] + diag[..., None, :] - 2.0 * matrix


def _singles(matrix: Any):
    import numpy as np

    return np.diagonal(matrix, axis1=-2, axis2=-1)


def seed_case_variance(per_seed: Any, groups: list[Any], *, pairs: bool = True) -> SeedCaseVariance:
    """The variance terms of every pair's difference (`pairs`) or every model's value (not `pairs`) of
    a statistic averaged over S >= 2 seeds, from the per-seed statistic (..., S, m) and the per-case
    components of each group of cases, each (..., S, n_g, m) (the mean: one group, the scores)."""
    import numpy as np

    ps = np.asarray(per_seed, dtype=np.float64)
    n_seeds = ps.shape[-2]
    if n_seeds < 2:
        raise PathkitError("the seeds x cases inference needs at least two seeds; with one, compare by the "
                           "paired bootstrap or DeLong's test")
    contrast = _pairs if pairs else _singles
    case, inter = 0.0, 0.0
    used = 0
    for u in groups:
        if np.shape(u)[-2] < 2:  # a group of one case has no spread to measure
            continue
        a, c = group_terms(u)
        case, inter, used = case + contrast(a), inter + contrast(c), used + 1
    if not used:
        raise PathkitError("the seeds x cases inference needs at least two cases in a group")
    seeds = np.maximum(contrast(_cov_over(ps, -2) / n_seeds), 0.0)  # >= 0 but for rounding
    inter = np.maximum(inter, 0.0)
    cases = np.maximum(case - inter, 0.0)
    return SeedCaseVariance(cases + seeds, cases, seeds, inter, n_seeds)


_NODES = 256  # Gauss-Legendre nodes over log u: relative error below 1e-12 down to p = 1e-10 (tested)
_TAIL = 1e-20  # the chi-square mass left out at each end


@functools.lru_cache(maxsize=64)
def _chi2_nodes(dof: int):
    """(u, weight) with sum weight * g(u) = E g(U), U ~ chi-square(dof), by Gauss-Legendre over log u."""
    import numpy as np
    from scipy.special import roots_legendre
    from scipy.stats import chi2

    lo, hi = math.log(chi2.ppf(_TAIL, dof)), math.log(chi2.isf(_TAIL, dof))
    x, w = roots_legendre(_NODES)
    u = np.exp(lo + (x + 1.0) / 2.0 * (hi - lo))
    return u, w / 2.0 * (hi - lo) * chi2.pdf(u, dof) * u


def generalized_p(estimate: Any, cases: Any, seeds: Any, n_seeds: int):
    """Two-sided generalized p-value of `estimate` (Tsui & Weerahandi 1989): E over U ~ chi-square(S - 1)
    of 2 Phi(-|d| / sqrt(cases + seeds (S - 1) / U)), the seed term's own sampling law carried into the
    reference. No case term: exactly Student's t with S - 1 df; no seed term: the normal. 1 where the
    estimate is 0, 0 where both terms are 0 and it is not."""
    import numpy as np
    from scipy.stats import norm

    est = np.abs(np.asarray(estimate, dtype=np.float64))[..., None]
    u, w = _chi2_nodes(n_seeds - 1)
    total = np.asarray(cases, dtype=np.float64)[..., None] + np.asarray(seeds, dtype=np.float64)[..., None] * (
        (n_seeds - 1) / u)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(total > 0, est / np.sqrt(np.where(total > 0, total, 1.0)), np.inf)
    p = (w * 2.0 * norm.sf(z)).sum(axis=-1)
    tol = 1e-12 * np.maximum(1.0, est[..., 0])
    return np.clip(np.where(est[..., 0] <= tol, 1.0, p), 0.0, 1.0)


def generalized_interval(estimate: Any, cases: Any, seeds: Any, n_seeds: int, level: float = 0.95):
    """(low, high): estimate -+ h, h the half-width at which `generalized_p` falls to 1 - level
    (bisection between 0 and the union bound z_(1-a/4) sqrt(cases) + t_(S-1, 1-a/4) sqrt(seeds))."""
    import numpy as np
    from scipy.stats import norm, t

    est = np.asarray(estimate, dtype=np.float64)
    a = np.asarray(cases, dtype=np.float64) + 0.0 * est
    b = np.asarray(seeds, dtype=np.float64) + 0.0 * est
    alpha = 1.0 - level
    lo = np.zeros_like(est)
    hi = norm.isf(alpha / 4.0) * np.sqrt(a) + t.isf(alpha / 4.0, n_seeds - 1) * np.sqrt(b)
    for _ in range(60):
        mid = (lo + hi) / 2.0
        above = generalized_p(np.where(mid > 0, mid, 1.0), a, b, n_seeds) > alpha
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    half = (lo + hi) / 2.0
    return est - half, est + half


def mean_tables(scores: Any):
    """(per-seed means (..., S, m), [the scores]) of a (..., S, n, m) table of per-case scores."""
    import numpy as np

    x = np.asarray(scores, dtype=np.float64)
    return x.mean(axis=-2), [x]


def binary_auroc_tables(scores: Any, positive: Any):
    """(per-seed AUROCs (..., S, m), [V10 (..., S, n1, m), V01 (..., S, n0, m)]) of positive-class
    scores (..., S, n, m) on labels shared by every seed and model: DeLong's components."""
    import numpy as np

    from pathkit_bench.stats.delong import _components

    x = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive).astype(bool)
    lead = x.shape[:-2]
    m = x.shape[-1]
    rows = np.moveaxis(x, -1, -2).reshape(-1, x.shape[-2])  # (... * m, n)
    aucs, v10, v01 = _components(rows, pos)

    def back(a, k):
        return np.moveaxis(a.reshape(*lead, m, k), -2, -1)

    return aucs.reshape(*lead, m), [back(v10, v10.shape[1]), back(v01, v01.shape[1])]


def ovr_auroc_tables(probabilities: Any, labels: Any):
    """(per-seed one-vs-rest macro AUROCs (S, m), one (S, n_g, m) table per true class g of n_g times
    each case's influence) from (S, n, m, K) class scores (`delong.ovr_influences`)."""
    import numpy as np

    from pathkit_bench.stats.delong import ovr_influences

    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels)
    n_seeds, n, m = p.shape[:3]
    aucs = np.empty((n_seeds, m))
    influence = np.empty((n_seeds, n, m))
    for s in range(n_seeds):
        for j in range(m):
            aucs[s, j], influence[s, :, j], _ = ovr_influences(p[s, :, j, :], y)
    groups = [influence[:, y == g, :] * int((y == g).sum()) for g in np.unique(y)]
    return aucs, groups


def _table(scores: Any):
    from pathkit_bench.stats.paired import _table as paired_table

    return paired_table(scores)


def _check_level(level: float) -> None:
    if not 0.0 < float(level) < 1.0:
        raise PathkitError(f"level must lie strictly between 0 and 1, got {level!r}")


def pairwise_from_tables(per_seed: Any, groups: list[Any], n_cases: int, level: float = 0.95) -> PairwiseSeeds:
    """Every pair's difference, interval and generalized p, and every model's interval, from the
    per-seed statistic (S, m) and the components of each group of cases (S, n_g, m)."""
    import numpy as np

    ps = np.atleast_2d(np.asarray(per_seed, dtype=np.float64))
    mean = ps.mean(axis=0)
    own = seed_case_variance(ps, groups, pairs=False)
    low, high = generalized_interval(mean, own.cases, own.seeds, own.n_seeds, level)
    pair = seed_case_variance(ps, groups, pairs=True)
    diff = mean[:, None] - mean[None, :]
    p = generalized_p(diff, pair.cases, pair.seeds, pair.n_seeds)
    np.fill_diagonal(p, 1.0)
    dlow, dhigh = generalized_interval(diff, pair.cases, pair.seeds, pair.n_seeds, level)
    return PairwiseSeeds(mean, ps.std(axis=0, ddof=1), low, high, diff, dlow, dhigh, p, np.sqrt(pair.variance),
                         pair.cases, pair.seeds, pair.interaction, int(n_cases), int(ps.shape[0]))


def pairwise_seeds(scores: Any, level: float = 0.95) -> PairwiseSeeds:
    """Every pair of models of a (seeds, cases, models) table of per-case scores (the statistic is the
    mean over seeds and cases), by the variance terms and the generalized p-value; cases with a NaN anywhere
    are dropped, as `pairwise_bootstrap` drops them."""
    _check_level(level)
    x = _table(scores)
    per_seed, groups = mean_tables(x)
    return pairwise_from_tables(per_seed, groups, x.shape[1], level)


def pairwise_seeds_auroc(probabilities: Any, labels: Any, level: float = 0.95) -> PairwiseSeeds:
    """`pairwise_seeds` of the AUROC (the mean over seeds of each seed's AUROC) of (seeds, cases,
    models) positive-class scores with 0/1 labels, or of the one-vs-rest macro AUROC of (seeds, cases,
    models, classes) class scores with class-index labels, from DeLong's components."""
    import numpy as np

    _check_level(level)
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels)
    if p.ndim == 3:
        per_seed, groups = binary_auroc_tables(p, y == 1)
    elif p.ndim == 4:
        per_seed, groups = ovr_auroc_tables(p, y)
    else:
        raise PathkitError(f"class scores must be (seeds, cases, models[, classes]); got shape {p.shape}")
    return pairwise_from_tables(per_seed, groups, p.shape[1], level)


__all__ = ["PairwiseSeeds", "SeedCaseVariance", "binary_auroc_tables", "generalized_interval", "generalized_p",
           "group_terms", "mean_tables", "ovr_auroc_tables", "pairwise_from_tables", "pairwise_seeds",
           "pairwise_seeds_auroc", "seed_case_variance"]
