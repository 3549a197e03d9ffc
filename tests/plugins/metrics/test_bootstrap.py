"""Bootstrap confidence intervals: means of per-case values and corpus-level statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pathkit_core.contracts import PathkitError
from pathkit_sdk.bootstrap import (
    bootstrap_ci,
    bootstrap_distribution,
    bootstrap_statistic_ci,
    bootstrap_statistics_ci,
    resample_indices,
)


def test_interval_matches_the_normal_approximation():
    rng = np.random.default_rng(1)
    values = rng.normal(0.6, 0.2, size=2000)
    low, high = bootstrap_ci(values, n_resamples=2000, seed=0)
    standard_error = values.std(ddof=1) / math.sqrt(values.size)
    assert low < values.mean() < high
    assert low == pytest.approx(values.mean() - 1.96 * standard_error, abs=0.3 * standard_error)
    assert high == pytest.approx(values.mean() + 1.96 * standard_error, abs=0.3 * standard_error)
    # a lower level gives a narrower interval inside the wider one
    low90, high90 = bootstrap_ci(values, n_resamples=2000, seed=0, level=0.9)
    assert low < low90 < high90 < high


def test_percentiles_of_the_resampled_means_by_hand():
    values = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    means = bootstrap_distribution(values, n_resamples=500, seed=3)
    assert means.shape == (500,)
    # every resampled mean is a multiple of 1/5
    assert np.allclose(means * 5, np.round(means * 5))
    assert bootstrap_ci(values, 500, 3) == tuple(np.quantile(means, [0.025, 0.975]))


def test_seeded_and_deterministic():
    values = np.arange(50, dtype=float)
    assert bootstrap_ci(values, 300, seed=7) == bootstrap_ci(values, 300, seed=7)
    assert bootstrap_ci(values, 300, seed=7) != bootstrap_ci(values, 300, seed=8)


def test_degenerate_inputs():
    # a bootstrap that cannot vary (one value, or all values equal) is no interval: (nan, nan), never [x, x]
    assert all(math.isnan(v) for v in bootstrap_ci([0.25]))
    assert all(math.isnan(v) for v in bootstrap_ci([1.0] * 40))
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([float("nan")] * 3))


def test_nan_values_are_left_out_or_refused():
    with_nan = [1.0, float("nan"), 0.0, 1.0]
    assert bootstrap_ci(with_nan, 200, 0) == bootstrap_ci([1.0, 0.0, 1.0], 200, 0)
    with pytest.raises(PathkitError, match="NaN"):
        bootstrap_ci(with_nan, nan_policy="raise")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"values": [1.0, float("inf")]}, "infinite"),
        ({"values": [[1.0, 2.0]]}, "one-dimensional"),
        ({"values": ["a", "b"]}, "must be numbers"),
        ({"values": [1.0], "n_resamples": 0}, "positive integer"),
        ({"values": [1.0], "level": 1.0}, "strictly between"),
        ({"values": [1.0], "nan_policy": "zero"}, "nan_policy"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(PathkitError, match=message):
        bootstrap_ci(**kwargs)


def test_statistic_version_agrees_with_the_mean_version():
    values = np.random.default_rng(2).random(300)
    expected = bootstrap_ci(values, 400, seed=5)
    assert bootstrap_statistic_ci(lambda idx: values[idx].mean(), 300, 400, seed=5) == expected
    vectorized = bootstrap_statistic_ci(lambda block: values[block].mean(axis=1), 300, 400, 5, vectorized=True)
    assert vectorized == pytest.approx(expected, abs=1e-12)


def test_corpus_statistic_ratio_of_sums():
    # a corpus-level ratio (matches / words, like BLEU-1 without penalty) is not a mean of ratios
    matches = np.array([1, 9, 2, 8, 5])
    words = np.array([10, 10, 4, 10, 10])

    def ratio(block):
        return matches[block].sum(axis=1) / words[block].sum(axis=1)

    low, high = bootstrap_statistic_ci(ratio, 5, 1000, seed=0, vectorized=True)
    assert low < matches.sum() / words.sum() < high
    assert 0 <= low and high <= 1


def test_statistic_nan_resamples_are_ignored():
    labels = np.array([0, 1, 1, 1, 1, 1])

    def needs_both_classes(idx):
        chosen = labels[idx]
        return float("nan") if chosen.min() == chosen.max() else chosen.mean()

    low, high = bootstrap_statistic_ci(needs_both_classes, 6, 300, seed=1)
    assert math.isfinite(low) and math.isfinite(high)


def test_statistic_shape_and_size_errors():
    with pytest.raises(PathkitError, match="one value per resample"):
        bootstrap_statistic_ci(lambda block: np.zeros(3), 10, 50, vectorized=True)
    with pytest.raises(PathkitError, match="n_cases"):
        bootstrap_statistic_ci(lambda idx: 0.0, -1)
    assert all(math.isnan(v) for v in bootstrap_statistic_ci(lambda idx: 0.0, 0))


def test_resample_blocks_cover_the_requested_count():
    blocks = list(resample_indices(3_000_000, n_resamples=5, seed=0))
    assert sum(b.shape[0] for b in blocks) == 5 and len(blocks) == 5  # 1 row per block at this size
    assert all(b.shape[1] == 3_000_000 and b.max() < 3_000_000 for b in blocks)


def test_several_statistics_on_one_set_of_resamples_match_each_alone():
    rng = np.random.default_rng(3)
    hits, totals = rng.integers(0, 5, 40).astype(float), rng.integers(5, 9, 40).astype(float)
    one = {"ratio": lambda b: hits[b].sum(axis=1) / totals[b].sum(axis=1),
           "nan_if_small": lambda b: np.where(hits[b].sum(axis=1) > 85, np.nan, hits[b].mean(axis=1))}
    together = bootstrap_statistics_ci(lambda b: {k: f(b) for k, f in one.items()}, 40, 500, 7, 0.9)
    for key, f in one.items():
        assert together[key] == bootstrap_statistic_ci(f, 40, 500, 7, 0.9, vectorized=True)
    assert bootstrap_statistics_ci(lambda b: {"x": b.mean(axis=1)}, 0, 100) == {}
    with pytest.raises(PathkitError, match="statistic 'x' must return one value per resample"):
        bootstrap_statistics_ci(lambda b: {"x": np.zeros(1)}, 10, 100)
    with pytest.raises(PathkitError, match="n_cases must be a non-negative integer"):
        bootstrap_statistics_ci(lambda b: {}, -1, 100)


def test_a_statistic_whose_resamples_all_agree_is_not_estimable():
    """3 perfectly ranked cases: every resample with both classes has AUROC 1, the others are NaN;
    the percentile interval would be [1, 1] and is reported as not estimable (nan, nan) instead."""
    from pathkit_metrics.classification import auroc

    from pathkit_sdk.bootstrap import bootstrap_statistic_ci, bootstrap_statistics_ci

    scores, labels = np.array([0.9, 0.2, 0.8]), np.array([1, 0, 1])
    low, high = bootstrap_statistic_ci(lambda idx: auroc(scores[idx], labels[idx]), 3, 300, seed=0)
    assert math.isnan(low) and math.isnan(high)
    found = bootstrap_statistics_ci(lambda block: {"const": np.ones(block.shape[0]),
                                                   "mean": scores[block].mean(axis=1)}, 3, 300, seed=0)
    assert all(math.isnan(v) for v in found["const"])
    assert found["mean"][0] < found["mean"][1]  # a statistic that varies keeps its interval
