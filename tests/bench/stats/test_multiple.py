"""Holm and Benjamini-Hochberg against hand-computed values; adjusted p-values never below the raw ones."""

from __future__ import annotations

import numpy as np
import pytest

from pathkit_bench.stats import adjust_pvalues, benjamini_hochberg, holm
from pathkit_core.contracts import PathkitError


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.04 -> 4*0.01, 3*0.02, 2*0.03, 1*0.04 = 0.04, 0.06, 0.06, 0.06 (monotone)
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_bh_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.2 -> min over j >= i of m p_(j) / j: 0.04, 0.04, 0.04, 0.2
    assert benjamini_hochberg([0.2, 0.02, 0.01, 0.03]) == pytest.approx([0.2, 0.04, 0.04, 0.04])


@pytest.mark.parametrize("method", ["holm", "bh", "none"])
def test_adjusted_never_below_raw_and_nan_kept(method):
    rng = np.random.default_rng(0)
    p = rng.random((6, 6)) ** 3
    p[2, 3] = np.nan
    adj = adjust_pvalues(p, method)
    assert adj.shape == p.shape and np.isnan(adj[2, 3])
    ok = ~np.isnan(p)
    assert (adj[ok] >= p[ok] - 1e-15).all() and (adj[ok] <= 1).all()


def test_nan_does_not_count_in_the_family():
    assert holm([0.01, np.nan]) == pytest.approx([0.01, np.nan], nan_ok=True)


def test_bad_input_is_refused():
    with pytest.raises(PathkitError, match="unknown p-value correction"):
        adjust_pvalues([0.1], "bonferroni-ish")
    with pytest.raises(PathkitError, match=r"lie in \[0, 1\]"):
        holm([1.5])
