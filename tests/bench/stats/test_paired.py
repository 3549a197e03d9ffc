"""Paired bootstrap, the sign-flip test, the seed-aware interval and McNemar's exact test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from pathkit_bench.stats import (
    mcnemar_exact,
    paired_bootstrap,
    pairwise_bootstrap,
    seed_bootstrap_ci,
    sign_flip_test,
)
from pathkit_core.contracts import PathkitError
from pathkit_sdk.bootstrap import bootstrap_ci


def constructed_pair():
    """200 cases of very different difficulty; A beats B by 0.02 on 180 of them and loses by 0.01 on 20."""
    rng = np.random.default_rng(0)
    b = rng.random(200)
    a = b + np.where(np.arange(200) % 10 == 0, -0.01, 0.02)
    return a, b


def test_paired_test_finds_what_unpaired_intervals_miss():
    a, b = constructed_pair()
    low_a, high_a = bootstrap_ci(a, 2000, seed=1)
    low_b, high_b = bootstrap_ci(b, 2000, seed=2)
    assert low_a < high_b and low_b < high_a  # the unpaired intervals overlap
    paired = paired_bootstrap(a, b)
    assert paired.difference == pytest.approx(0.017)
    assert paired.p_value < 0.01 and paired.ci_low > 0
    assert paired.p_empirical == pytest.approx(1 / 2001)  # no resample comes near 0: the count's floor
    diff, p = sign_flip_test(a, b)
    assert diff == pytest.approx(0.017) and p < 0.01


def test_identical_cells_differ_by_zero_with_p_one():
    a, _ = constructed_pair()
    got = paired_bootstrap(a, a.copy())
    assert (got.difference, got.ci_low, got.ci_high, got.p_value, got.p_empirical) == (0.0, 0.0, 0.0, 1.0, 1.0)
    assert sign_flip_test(a, a.copy()) == (0.0, 1.0)
    result = pairwise_bootstrap(np.stack([a, a, a + 0.1], axis=1))
    assert result.p_value[0, 1] == 1.0 and result.difference[0, 1] == 0.0


def test_pairwise_is_antisymmetric_and_matches_two_model_calls():
    rng = np.random.default_rng(5)
    scores = rng.random((50, 3))
    result = pairwise_bootstrap(scores, 500, seed=3)
    assert result.difference == pytest.approx(-result.difference.T)
    assert result.p_value == pytest.approx(result.p_value.T)
    assert np.diag(result.p_value) == pytest.approx(1.0)
    assert result.mean == pytest.approx(scores.mean(axis=0))
    # the interval of one model is the plain bootstrap of its mean (same resamples, same numbers)
    assert (result.ci_low[0], result.ci_high[0]) == pytest.approx(
        np.quantile(np.stack([scores[np.random.default_rng(3).integers(0, 50, (500, 50)), 0]]).mean(-1)[0],
                    [0.025, 0.975]))


def test_corpus_statistic_recomputed_per_resample():
    # a corpus-level ratio (sum of hits / sum of totals), per-case components (hits, total)
    rng = np.random.default_rng(6)
    total = rng.integers(1, 20, 100).astype(float)
    a = np.stack([np.minimum(total, rng.integers(0, 15, 100)), total], axis=1)
    b = np.stack([np.minimum(total, rng.integers(0, 12, 100)), total], axis=1)

    def ratio(rows):
        return rows[..., 0].sum(-1) / rows[..., 1].sum(-1)

    got = paired_bootstrap(a, b, statistic=ratio, n_resamples=500)
    assert got.difference == pytest.approx(a[:, 0].sum() / total.sum() - b[:, 0].sum() / total.sum())
    assert got.ci_low < got.difference < got.ci_high
    assert paired_bootstrap(a, a, statistic=ratio, n_resamples=200).p_value == 1.0


def test_seeds_widen_the_interval():
    rng = np.random.default_rng(7)
    cases = rng.random(300)
    seeds = np.stack([cases + shift for shift in (-0.05, 0.0, 0.05, 0.02, -0.02)])  # training noise
    mean, sd, low, high = seed_bootstrap_ci(seeds, 2000)
    assert mean == pytest.approx(seeds.mean()) and sd == pytest.approx(seeds.mean(axis=1).std(ddof=1))
    one_low, one_high = bootstrap_ci(seeds.mean(axis=0), 2000)
    assert high - low > (one_high - one_low) * 1.2  # the seed variation is in the interval
    m1, sd1, l1, h1 = seed_bootstrap_ci(cases, 500)
    assert math.isnan(sd1) and l1 < m1 < h1


def test_nan_cases_are_dropped_jointly_and_shapes_checked():
    a, b = constructed_pair()
    a2 = a.copy()
    a2[:10] = np.nan
    assert paired_bootstrap(a2, b).n_cases == 190
    with pytest.raises(PathkitError, match="one shape"):
        paired_bootstrap(a, b[:5])
    with pytest.raises(PathkitError, match="positive integer"):
        paired_bootstrap(a, b, n_resamples=0)


def test_mcnemar_against_exact_binomial_by_hand():
    # 10 cases only A got right, 2 only B: p = 2 * sum_{i<=2} C(12, i) / 2^12 = 158 / 4096
    ca = np.array([True] * 10 + [False] * 2 + [True] * 30 + [False] * 8)
    cb = np.array([False] * 10 + [True] * 2 + [True] * 30 + [False] * 8)
    got = mcnemar_exact(ca, cb)
    assert (got.a_only, got.b_only) == (10, 2)
    assert got.p_value == pytest.approx(158 / 4096, abs=1e-12)
    assert got.p_value == pytest.approx(2 * binom.cdf(2, 12, 0.5), abs=1e-12)
    assert got.difference == pytest.approx(8 / 50)
    assert mcnemar_exact(ca, ca).p_value == 1.0
    assert mcnemar_exact([True, False], [False, True]).p_value == 1.0


def test_normal_p_keeps_its_resolution_under_holm():
    """40 models (780 pairs): the count p cannot pass Holm with 2,000 resamples; the normal one can."""
    from pathkit_bench.stats import holm

    rng = np.random.default_rng(11)
    base = rng.random((400, 1))
    scores = base + np.linspace(0, 0.2, 40)[None, :] + rng.normal(0, 0.02, (400, 40))
    result = pairwise_bootstrap(scores, 2000)
    upper = np.triu_indices(40, 1)
    assert holm(result.p_empirical[upper]).min() >= 780 / 2001 * 0.999
    assert holm(result.p_value[upper])[np.argmax(np.abs(result.difference[upper]))] < 1e-6
    # and the normal p is that of the bootstrap standard error
    d = result.difference[0, 39]
    se = (result.diff_high[0, 39] - result.diff_low[0, 39]) / (2 * 1.96)
    from scipy.stats import norm

    assert result.p_value[0, 39] == pytest.approx(2 * norm.sf(abs(d) / se), rel=0.5)
