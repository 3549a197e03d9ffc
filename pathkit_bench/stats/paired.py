"""Paired comparisons of cells scored on the same test cases.

`pairwise_bootstrap` resamples the test cases jointly for every model (and, with several training
seeds, the seeds too: a two-way bootstrap of the seeds x cases table, Owen 2007), so that each
resample scores every model on the same cases; the difference of two models is read from the same
resamples. The p-value is two-sided normal from the bootstrap standard error of the difference,
2 Phi(-|d| / se*) (Efron & Tibshirani 1993, section 16.4): it keeps its resolution under Holm's
correction over hundreds of pairs. The centred count of Berg-Kirkpatrick, Burkett & Klein (2012),
made two-sided, is kept beside it (`p_empirical`): it assumes no shape, but cannot fall below
1 / (B + 1), so after Holm over m pairs nothing passes unless B > m / alpha.

`sign_flip_test` is the paired permutation (approximate randomisation, Noreen 1989) test for any
statistic: under "no difference" the two models' outputs of a case are exchangeable, so each case's
pair is swapped at random (`scipy.stats.permutation_test`, permutation_type="samples").

`mcnemar_exact` is McNemar's test on the discordant pairs, exact: a two-sided binomial test of
b against b + c at 1/2 (`scipy.stats.binomtest`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pathkit_core.contracts import PathkitError

DEFAULT_RESAMPLES = 2000
# Case-count rows per block: block x n_cases counts stay a few tens of MB whatever the corpus.
_BLOCK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class BootstrapComparison:
    """The difference `a - b` of a statistic on every case, its percentile interval and p-values:
    `p_value` from the bootstrap standard error (normal), `p_empirical` the centred count."""

    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    n_cases: int
    n_seeds: int = 1
    n_resamples: int = DEFAULT_RESAMPLES
    p_empirical: float = math.nan


@dataclass(frozen=True)
class McNemarResult:
    """b: cases only A got right; c: cases only B got right; the exact two-sided p-value."""

    a_only: int
    b_only: int
    p_value: float
    accuracy_a: float
    accuracy_b: float

    @property
    def difference(self) -> float:
        return self.accuracy_a - self.accuracy_b


def _table(scores: Any):
    """(seeds, cases, models) float array from (cases, models) or (seeds, cases, models); cases with
    a NaN anywhere are dropped (a comparison needs every model scored on the same cases)."""
    import numpy as np

    x = np.asarray(scores, dtype=np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3:
        raise PathkitError(f"scores must be (cases, models) or (seeds, cases, models); got shape {x.shape}")
    if np.isinf(x).any():
        raise PathkitError("scores contain an infinite value")
    keep = ~np.isnan(x).any(axis=(0, 2))
    return x[:, keep, :]


def _check(n_resamples: int, level: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise PathkitError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < float(level) < 1.0:
        raise PathkitError(f"level must lie strictly between 0 and 1, got {level!r}")


def two_way_resamples(n_seeds: int, n_cases: int, evaluate: Callable[[Any], Any],
                      n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0):
    """(n_resamples, models) values of a statistic over resamples of a seeds x cases table.

    Each resample draws the cases with replacement (one draw for every seed and model: cases are
    crossed with seeds and models, not nested in them) and, with several seeds, the seeds with
    replacement (Owen 2007's two-way bootstrap). `evaluate(counts)` gets how often each case was
    drawn, shape (rows, cases), and returns the statistic of every seed and model on those weighted
    cases, shape (rows, seeds, models); a resample's value per model is its mean over the drawn
    seeds. With one seed this is the ordinary case bootstrap."""
    import numpy as np

    _check(n_resamples, 0.5)
    rng = np.random.default_rng(seed)
    block = max(1, min(n_resamples, _BLOCK_ELEMENTS // max(n_cases, 1)))
    parts = []
    done = 0
    while done < n_resamples:
        rows = min(block, n_resamples - done)
        draws = rng.integers(0, n_cases, size=(rows, n_cases))
        offsets = (np.arange(rows) * n_cases)[:, None]
        counts = np.bincount((draws + offsets).ravel(), minlength=rows * n_cases).reshape(rows, n_cases)
        per_seed = np.asarray(evaluate(counts), dtype=np.float64)
        if n_seeds > 1:
            picks = rng.integers(0, n_seeds, size=(rows, n_seeds))
            weights = np.stack([np.bincount(p, minlength=n_seeds) for p in picks]) / n_seeds
            parts.append(np.einsum("bs,bsm->bm", weights, per_seed))
        else:
            parts.append(per_seed[:, 0, :])
        done += rows
    return np.concatenate(parts)


def bootstrap_means(scores: Any, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0):
    """(n_resamples, models) resampled means of a (seeds, cases, models) table (or (cases, models)),
    cases and seeds resampled as `two_way_resamples` says."""
    import numpy as np

    x = _table(scores)
    n_seeds, n_cases, n_models = x.shape
    if n_cases == 0:
        return np.full((n_resamples, n_models), np.nan)
    # cases x (seeds*models): one matrix product gives every seed's and model's resampled mean
    flat = np.ascontiguousarray(x.transpose(1, 0, 2).reshape(n_cases, n_seeds * n_models))

    def means(counts):
        return (counts @ flat).reshape(counts.shape[0], n_seeds, n_models) / n_cases

    return two_way_resamples(n_seeds, n_cases, means, n_resamples, seed)


def bootstrap_aurocs(probabilities: Any, labels: Any, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0):
    """(n_resamples, models) resampled AUROCs (binary) or one-vs-rest macro AUROCs of (seeds, cases,
    models, classes) class scores (or (seeds, cases, models) positive-class scores with 0/1 labels),
    recomputed on each resample of cases (and seeds) from the weighted Mann-Whitney count."""
    import numpy as np

    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels)
    if p.ndim == 3:
        p = np.stack([1.0 - p, p], axis=-1)
        classes = [1]
    elif p.ndim == 4:
        classes = [k for k in range(p.shape[3]) if 0 < int((y == k).sum()) < y.size]
    else:
        raise PathkitError(f"class scores must be (seeds, cases, models[, classes]); got shape {p.shape}")
    n_seeds, n_cases, n_models = p.shape[:3]
    if not classes:
        return np.full((n_resamples, n_models), np.nan)
    return two_way_resamples(n_seeds, n_cases, lambda counts: _aurocs(p, y, classes, counts), n_resamples, seed)


def bootstrap_aurocs_on(probabilities: Any, labels: Any, counts: Any):
    """(rows, seeds, models) AUROCs of `bootstrap_aurocs`'s inputs on cases weighted by `counts` (rows, cases)."""
    import numpy as np

    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels)
    if p.ndim == 3:
        p, classes = np.stack([1.0 - p, p], axis=-1), [1]
    else:
        classes = [k for k in range(p.shape[3]) if 0 < int((y == k).sum()) < y.size]
    return _aurocs(p, y, classes, np.asarray(counts, dtype=np.float64))


def _aurocs(p, y, classes, counts):
    import numpy as np

    from pathkit_bench.stats.delong import weighted_auroc

    n_seeds, _, n_models = p.shape[:3]
    out = np.empty((counts.shape[0], n_seeds, n_models))
    for s in range(n_seeds):
        for m in range(n_models):
            per_class = np.stack([weighted_auroc(p[s, :, m, k], y == k, counts) for k in classes])
            with warnings.catch_warnings():  # a resample without a class's positives: that class left out
                warnings.simplefilter("ignore", RuntimeWarning)
                out[:, s, m] = np.nanmean(per_class, axis=0) if len(classes) > 1 else per_class[0]
    return out


def _normal_p(observed, distribution):
    """Two-sided p of each observed difference from the bootstrap standard error of the difference
    (axis 0): 2 Phi(-|d| / se*). Exactly 1 where d = 0; 0 where se* = 0 and d != 0."""
    import numpy as np
    from scipy.stats import norm

    se = np.nanstd(distribution, axis=0, ddof=1) if distribution.shape[0] > 1 else np.zeros(np.shape(observed))
    tol = 1e-12 * np.maximum(1.0, np.abs(observed))
    zero = np.abs(observed) <= tol
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, np.abs(observed) / np.where(se > 0, se, 1.0), np.inf)
    return np.where(zero, 1.0, 2.0 * norm.sf(z))


def _centred_p(observed, distribution):
    """Two-sided p of each observed difference from its bootstrap distribution (axis 0):
    (1 + #{|d* - d| >= |d|}) / (B + 1); exactly 1 where d = 0."""
    import numpy as np

    b = distribution.shape[0]
    # a relative tolerance so that a difference the arithmetic made non-zero by rounding counts as 0
    tol = 1e-12 * np.maximum(1.0, np.abs(observed))
    extreme = (np.abs(distribution - observed) >= np.abs(observed) - tol).sum(axis=0)
    return (1.0 + extreme) / (b + 1.0)


@dataclass(frozen=True)
class PairwiseBootstrap:
    """Every model against every other: `difference[i, j]` = mean(i) - mean(j), its interval and p."""

    mean: Any  # (models,) mean over seeds and cases
    seed_sd: Any  # (models,) standard deviation of the per-seed means (NaN with one seed)
    ci_low: Any  # (models,) interval of each model's mean
    ci_high: Any
    difference: Any  # (models, models)
    diff_low: Any
    diff_high: Any
    p_value: Any  # (models, models) from the bootstrap standard error, 1 on the diagonal
    n_cases: int
    n_seeds: int
    n_resamples: int
    p_empirical: Any = None  # (models, models) centred count, never below 1 / (n_resamples + 1)

    def comparison(self, i: int, j: int) -> BootstrapComparison:
        return BootstrapComparison(float(self.difference[i, j]), float(self.diff_low[i, j]),
                                   float(self.diff_high[i, j]), float(self.p_value[i, j]), self.n_cases,
                                   self.n_seeds, self.n_resamples, float(self.p_empirical[i, j]))


def pairwise_from(per_seed: Any, distribution: Any, n_cases: int, level: float = 0.95) -> PairwiseBootstrap:
    """Every pair's difference, interval and centred p from each model's statistic per seed on all
    cases (seeds, models) and its joint bootstrap distribution (resamples, models)."""
    import numpy as np

    per_seed = np.atleast_2d(np.asarray(per_seed, dtype=np.float64))
    dist = np.asarray(distribution, dtype=np.float64)
    n_seeds = per_seed.shape[0]
    mean = per_seed.mean(axis=0)
    sd = per_seed.std(axis=0, ddof=1) if n_seeds > 1 else np.full(mean.shape, np.nan)
    alpha = (1.0 - level) / 2.0
    low, high = np.nanquantile(dist, [alpha, 1.0 - alpha], axis=0)
    diff = mean[:, None] - mean[None, :]
    diffs = dist[:, :, None] - dist[:, None, :]
    dlow, dhigh = np.nanquantile(diffs, [alpha, 1.0 - alpha], axis=0)
    return PairwiseBootstrap(mean, sd, low, high, diff, dlow, dhigh, _normal_p(diff, diffs), n_cases, n_seeds,
                             dist.shape[0], _centred_p(diff, diffs))


def pairwise_bootstrap(scores: Any, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                       level: float = 0.95) -> PairwiseBootstrap:
    """Paired bootstrap of every pair of models in a (cases, models) or (seeds, cases, models) table of
    per-case scores (the statistic is the mean; see `paired_bootstrap` for another)."""
    _check(n_resamples, level)
    x = _table(scores)
    return pairwise_from(x.mean(axis=1), bootstrap_means(x, n_resamples, seed), x.shape[1], level)


def pairwise_bootstrap_auroc(probabilities: Any, labels: Any, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                             level: float = 0.95) -> PairwiseBootstrap:
    """`pairwise_bootstrap` of (macro one-vs-rest) AUROC recomputed on every resample (`bootstrap_aurocs`)."""
    import numpy as np

    _check(n_resamples, level)
    p = np.asarray(probabilities, dtype=np.float64)
    ones = np.ones((1, p.shape[1]))
    observed = bootstrap_aurocs_on(p, labels, ones)[0]
    return pairwise_from(observed, bootstrap_aurocs(p, labels, n_resamples, seed), p.shape[1], level)


def pairwise_bootstrap_statistic(rows: Any, statistic: Callable[[Any], Any], n_resamples: int = DEFAULT_RESAMPLES,
                                 seed: int = 0, level: float = 0.95) -> PairwiseBootstrap:
    """`pairwise_bootstrap` of a corpus statistic (the C-index, quadratic kappa) recomputed on every
    resample from per-case components: `rows` is (seeds, cases, models, columns) (or (cases, models,
    columns)) and `statistic(block)` maps resampled rows (resamples, cases, columns) of one model and
    seed to one value per resample, as for `paired_bootstrap`. The cases (and seeds) are drawn as
    `two_way_resamples` says, once for every model; cases with a NaN anywhere are left out."""
    import numpy as np

    _check(n_resamples, level)
    x = np.asarray(rows, dtype=np.float64)
    if x.ndim == 3:
        x = x[None]
    if x.ndim != 4:
        raise PathkitError(f"rows must be (cases, models, columns) or (seeds, cases, models, columns); got {x.shape}")
    x = x[:, ~np.isnan(x).any(axis=(0, 2, 3))]
    n_seeds, n_cases, n_models = x.shape[:3]
    if n_cases == 0:
        raise PathkitError("no case has a value in every model and seed: nothing to compare")

    def evaluate(counts: Any) -> Any:
        # each resample's counts as case indices (a resample draws n_cases rows)
        idx = np.repeat(np.tile(np.arange(n_cases), counts.shape[0]), counts.ravel()).reshape(-1, n_cases)
        return np.stack([np.stack([np.asarray(statistic(x[s, :, m][idx]), dtype=np.float64)
                                   for m in range(n_models)], axis=-1) for s in range(n_seeds)], axis=1)

    observed = evaluate(np.ones((1, n_cases), dtype=np.int64))[0]
    return pairwise_from(observed, two_way_resamples(n_seeds, n_cases, evaluate, n_resamples, seed), n_cases, level)


def seed_bootstrap_ci(scores: Any, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float, float, float]:
    """(mean, sd over seeds, CI low, CI high) of one cell from its (seeds, cases) per-case scores:
    the interval resamples seeds and cases (`bootstrap_means`), so it holds both sources of noise."""
    import numpy as np

    x = np.asarray(scores, dtype=np.float64)
    if x.ndim == 1:
        x = x[None]
    result = pairwise_bootstrap(x[:, :, None], n_resamples, seed, level)
    return float(result.mean[0]), float(result.seed_sd[0]), float(result.ci_low[0]), float(result.ci_high[0])


def paired_bootstrap(a: Any, b: Any, *, statistic: Callable[[Any], Any] | None = None,
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = 0.95) -> BootstrapComparison:
    """Paired bootstrap of statistic(a) - statistic(b), resampling the cases jointly.

    `a` and `b` hold one row per case: per-case scores (cases,) or (seeds, cases) for the mean, or,
    with `statistic`, any per-case components (cases, ...) from which `statistic(block)` computes a
    corpus-level score per resample: it receives the resampled rows, shape (resamples, cases, ...),
    and returns one value per resample (e.g. corpus BLEU from per-case n-gram counts)."""
    import numpy as np

    _check(n_resamples, level)
    if statistic is None:
        xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if xa.shape != xb.shape:
            raise PathkitError(f"paired scores must have one shape; got {xa.shape} and {xb.shape}")
        result = pairwise_bootstrap(np.stack([xa, xb], axis=-1), n_resamples, seed, level)
        return result.comparison(0, 1)
    xa, xb = np.asarray(a), np.asarray(b)
    if xa.shape[0] != xb.shape[0]:
        raise PathkitError(f"paired inputs must have one row per case each; got {xa.shape[0]} and {xb.shape[0]}")
    n = xa.shape[0]
    if n == 0:
        return BootstrapComparison(math.nan, math.nan, math.nan, math.nan, 0, 1, n_resamples)
    whole = np.arange(n)[None]
    observed = float(np.asarray(statistic(xa[whole]))[0] - np.asarray(statistic(xb[whole]))[0])
    rng = np.random.default_rng(seed)
    block = max(1, min(n_resamples, _BLOCK_ELEMENTS // n))
    parts = []
    done = 0
    while done < n_resamples:
        idx = rng.integers(0, n, size=(min(block, n_resamples - done), n))
        parts.append(np.asarray(statistic(xa[idx]), dtype=np.float64) - np.asarray(statistic(xb[idx]),
                                                                                   dtype=np.float64))
        done += idx.shape[0]
    dist = np.concatenate(parts)
    dist = dist[np.isfinite(dist)]
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(dist, [alpha, 1.0 - alpha]) if dist.size else (math.nan, math.nan)
    if not dist.size:
        return BootstrapComparison(observed, math.nan, math.nan, math.nan, n, 1, n_resamples)
    p = float(_normal_p(np.asarray([observed]), dist[:, None])[0])
    p_count = float(_centred_p(np.asarray([observed]), dist[:, None])[0])
    return BootstrapComparison(observed, float(low), float(high), p, n, 1, n_resamples, p_count)


def sign_flip_test(a: Any, b: Any, *, statistic: Callable[..., Any] | None = None,
                   n_resamples: int = 9999, seed: int = 0) -> tuple[float, float]:
    """(observed difference, two-sided p) of the paired permutation test: each case's two values
    swapped at random. `statistic(x, y, axis)` defaults to mean(x) - mean(y) (the sign-flip test of
    the mean difference); any corpus-level statistic of per-case components works. Exact (every
    swap pattern) when 2**cases <= n_resamples."""
    import numpy as np
    from scipy.stats import permutation_test

    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape:
        raise PathkitError(f"paired scores must have one shape; got {xa.shape} and {xb.shape}")
    keep = ~(np.isnan(xa) | np.isnan(xb))
    if xa.ndim == 1:
        xa, xb = xa[keep], xb[keep]
    if xa.shape[0] == 0:
        return math.nan, math.nan

    def mean_difference(x, y, axis):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    stat = statistic or mean_difference
    observed = float(stat(xa, xb, axis=0))
    if np.array_equal(xa, xb):
        return observed, 1.0
    result = permutation_test((xa, xb), stat, permutation_type="samples", vectorized=True,
                              n_resamples=n_resamples, alternative="two-sided", rng=np.random.default_rng(seed))
    return observed, float(result.pvalue)


def mcnemar_exact(correct_a: Any, correct_b: Any) -> McNemarResult:
    """McNemar's exact test of two classifiers' per-case correctness (booleans, paired by case)."""
    import numpy as np
    from scipy.stats import binomtest

    ca, cb = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if ca.shape != cb.shape or ca.ndim != 1:
        raise PathkitError(f"McNemar: correctness must be two vectors of one length; got {ca.shape} and {cb.shape}")
    a_only = int((ca & ~cb).sum())
    b_only = int((~ca & cb).sum())
    n = a_only + b_only
    p = 1.0 if n == 0 else float(binomtest(min(a_only, b_only), n, 0.5).pvalue)
    acc_a = float(ca.mean()) if ca.size else math.nan
    acc_b = float(cb.mean()) if cb.size else math.nan
    return McNemarResult(a_only, b_only, min(1.0, p), acc_a, acc_b)


__all__ = ["BootstrapComparison", "McNemarResult", "PairwiseBootstrap", "bootstrap_aurocs", "bootstrap_aurocs_on",
           "bootstrap_means", "mcnemar_exact", "paired_bootstrap", "pairwise_bootstrap", "pairwise_bootstrap_auroc",
           "pairwise_bootstrap_statistic",
           "pairwise_from", "seed_bootstrap_ci", "sign_flip_test", "two_way_resamples"]
