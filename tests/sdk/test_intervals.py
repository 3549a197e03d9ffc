"""Intervals of small test sets (pathkit_sdk.intervals): Wilson and exact intervals
against scipy's beta quantiles and the closed form, the small-sample threshold at its edges."""

from __future__ import annotations

import math

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_core.evaluation.scores import not_estimable_text
from pathkit_sdk.intervals import (
    MIN_CASES,
    MIN_CASES_PER_CLASS,
    proportion_ci,
    sample_facts,
    small_sample_warning,
)

Z95 = 1.959963984540054


def wilson_by_hand(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


@pytest.mark.parametrize("k, n", [(0, 3), (1, 3), (3, 3), (7, 10), (45, 50)])
def test_wilson_matches_the_closed_form(k, n):
    assert proportion_ci(k, n) == pytest.approx(wilson_by_hand(k, n), abs=1e-12)


@pytest.mark.parametrize("k, n", [(0, 3), (1, 3), (3, 3), (7, 10)])
def test_exact_is_clopper_pearson_from_beta_quantiles(k, n):
    from scipy.stats import beta

    low = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
    high = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
    assert proportion_ci(k, n, method="exact") == pytest.approx((low, high), abs=1e-9)
    assert proportion_ci(k, n, method="clopper-pearson") == proportion_ci(k, n, method="exact")


def test_one_case_still_gets_a_wide_interval_and_none_gets_none():
    low, high = proportion_ci(1, 1)
    assert 0.0 < low < 0.25 and high == pytest.approx(1.0)  # never [1, 1]
    assert all(math.isnan(v) for v in proportion_ci(0, 0))


def test_bad_arguments_are_refused():
    with pytest.raises(PathkitError, match="unknown method 'agresti'"):
        proportion_ci(1, 2, method="agresti")
    with pytest.raises(PathkitError, match="3 successes out of 2"):
        proportion_ci(3, 2)
    with pytest.raises(PathkitError, match="level"):
        proportion_ci(1, 2, level=1.0)


def test_small_sample_threshold_at_its_edges():
    assert small_sample_warning(MIN_CASES, {"a": MIN_CASES_PER_CLASS, "b": MIN_CASES_PER_CLASS}) == ""
    assert "19 test case(s) (fewer than 20)" in small_sample_warning(MIN_CASES - 1)
    text = small_sample_warning(100, {"a": 91, "b": 9})
    assert "class(es) with fewer than 10 test cases (b: 9)" in text and "fewer than 20)" not in text
    facts = sample_facts(3, {"neg": 1, "pos": 2})
    assert facts["small"] and facts["class_counts"] == {"neg": 1, "pos": 2} and "warning" in facts
    assert not sample_facts(50)["small"] and "warning" not in sample_facts(50)
    assert not_estimable_text(3) == "not estimable (n=3)" and not_estimable_text() == "not estimable"
