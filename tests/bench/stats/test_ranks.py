"""Average ranks, Friedman, the Nemenyi critical difference against Demšar 2006 (table 5a and the
worked example of section 3.2.4) and win/tie/loss counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pathkit_bench.stats import average_ranks, cd_cliques, friedman_test, nemenyi_cd, nemenyi_q, win_tie_loss
from pathkit_core.contracts import PathkitError

# Demšar (2006), table 5(a): q_0.05 of the two-tailed Nemenyi test, k = 2..10 (three decimals).
DEMSAR_Q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]


@pytest.mark.parametrize("k, expected", list(zip(range(2, 11), DEMSAR_Q05, strict=True)))
def test_nemenyi_q_matches_demsar_table(k, expected):
    assert nemenyi_q(k, 0.05) == pytest.approx(expected, abs=1e-3)


def test_critical_difference_of_demsars_example():
    # section 3.2.4: four classifiers over 14 data sets, CD = 2.569 sqrt(4*5/(6*14)) = 1.25
    assert nemenyi_cd(4, 14) == pytest.approx(1.25, abs=5e-3)
    assert nemenyi_cd(4, 14) == pytest.approx(nemenyi_q(4) * math.sqrt(20 / 84))


def test_average_ranks_share_ties():
    scores = [[0.9, 0.8, 0.8], [0.7, 0.9, 0.1]]
    assert average_ranks(scores) == pytest.approx([(1 + 2) / 2, (2.5 + 1) / 2, (2.5 + 3) / 2])
    assert average_ranks(scores, higher_is_better=False) == pytest.approx([(3 + 2) / 2, (1.5 + 3) / 2, (1.5 + 1) / 2])


def test_friedman_against_the_formula():
    rng = np.random.default_rng(0)
    scores = rng.random((8, 4)) + np.array([0.3, 0.2, 0.0, 0.0])
    got = friedman_test(scores)
    n, k = scores.shape
    r = got.average_ranks
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(r ** 2) - k * (k + 1) ** 2 / 4)  # Demšar eq. (2), no ties here
    assert got.statistic == pytest.approx(chi2)
    assert got.iman_davenport == pytest.approx((n - 1) * chi2 / (n * (k - 1) - chi2))
    assert 0 < got.p_value < 1 and 0 < got.p_value_f < 1


def test_friedman_of_all_ties_and_of_two_models():
    assert friedman_test(np.ones((5, 3))).p_value == 1.0
    assert math.isnan(friedman_test(np.random.default_rng(0).random((5, 2))).p_value)


def test_nan_is_refused():
    with pytest.raises(PathkitError, match="NaN"):
        average_ranks([[0.1, np.nan]])


def test_cliques():
    assert cd_cliques([1.0, 1.5, 2.3, 3.9], 1.25) == [[0, 1], [1, 2]]
    assert cd_cliques([1.0, 3.0], 1.0) == []


def test_win_tie_loss():
    d = np.zeros((3, 2, 2))
    p = np.ones((3, 2, 2))
    d[:, 0, 1], d[:, 1, 0] = [0.1, 0.1, -0.1], [-0.1, -0.1, 0.1]
    p[:, 0, 1] = p[:, 1, 0] = [0.01, 0.2, 0.01]
    wins, ties, losses = win_tie_loss(d, p)
    assert (wins[0, 1], ties[0, 1], losses[0, 1]) == (1, 1, 1)
    assert (wins[1, 0], ties[1, 0], losses[1, 0]) == (1, 1, 1)
    assert wins[0, 0] == ties[0, 0] == losses[0, 0] == 0
