"""`pairwise_bootstrap_statistic`: a corpus statistic (the C-index, quadratic kappa) recomputed per
resample for every pair of cells, the suite's comparison of the survival and ordinal tasks."""

from __future__ import annotations

import numpy as np
import pytest


def _mean_of_first(block):
    return block[..., 0].mean(axis=-1)


def test_the_mean_as_a_statistic_is_the_mean_bootstrap_to_rounding():
    # the same seed draws the same case counts: the statistic path must give pairwise_bootstrap's numbers
    from pathkit_bench.stats import pairwise_bootstrap, pairwise_bootstrap_statistic

    rng = np.random.default_rng(3)
    scores = rng.random((2, 25, 3))  # seeds, cases, models
    by_mean = pairwise_bootstrap(scores, 200, seed=7)
    by_stat = pairwise_bootstrap_statistic(scores[..., None], _mean_of_first, 200, seed=7)
    for field in ("mean", "ci_low", "ci_high", "difference", "diff_low", "diff_high", "p_value"):
        np.testing.assert_allclose(getattr(by_stat, field), getattr(by_mean, field), atol=1e-12, err_msg=field)
    assert by_stat.n_seeds == 2 and by_stat.n_cases == 25


def test_c_index_differences_are_lifelines_and_a_clear_winner_is_significant():
    from lifelines.utils import concordance_index
    from pathkit_metrics.survival import c_index_statistic

    from pathkit_bench.stats import pairwise_bootstrap_statistic

    rng = np.random.default_rng(0)
    n = 80
    time = np.round(rng.exponential(10, n))  # rounded: tied times
    event = (rng.random(n) < 0.7).astype(float)
    good = -time + rng.normal(0, 2, n)  # higher risk = earlier event
    noise = rng.normal(0, 1, n)
    rows = np.stack([np.stack([good, time, event], axis=-1), np.stack([noise, time, event], axis=-1)], axis=1)
    result = pairwise_bootstrap_statistic(rows, c_index_statistic, 400, seed=1)
    expected = [concordance_index(time, -r, event) for r in (good, noise)]
    np.testing.assert_allclose(result.mean, expected, atol=1e-12)
    assert result.difference[0, 1] == pytest.approx(expected[0] - expected[1], abs=1e-12)
    assert result.p_value[0, 1] < 0.001 and result.diff_low[0, 1] > 0
    assert result.p_value[0, 1] == result.p_value[1, 0]


def test_nan_cases_are_left_out_and_no_case_is_refused():
    from pathkit_bench.stats import pairwise_bootstrap_statistic
    from pathkit_core.contracts import PathkitError

    rows = np.random.default_rng(2).random((10, 2, 1))
    rows[3, 1, 0] = np.nan
    assert pairwise_bootstrap_statistic(rows, _mean_of_first, 50).n_cases == 9
    with pytest.raises(PathkitError, match="no case"):
        pairwise_bootstrap_statistic(np.full((4, 2, 1), np.nan), _mean_of_first, 50)
