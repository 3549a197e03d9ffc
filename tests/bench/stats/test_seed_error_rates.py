"""Error rates of the seeds x cases test on simulated pairs of models (`stats.seed_simulation`): two
equally good models are called different at most about 5 % of the time with 2, 3 and 5 seeds whatever
carries the variance, and a true difference of 3 standard errors is found with 5 seeds. 800
repetitions per scenario: the rate's standard error at 0.05 is 0.008, so the 0.075 bound passes a
valid test and fails one whose rate is 0.10 (P < 0.01). The full table: benchmarks/bench_seed_inference.py."""

from __future__ import annotations

import numpy as np
import pytest

from pathkit_bench.stats.seed_simulation import (
    AUROC_SCENARIOS,
    MEAN_SCENARIOS,
    auroc_labels,
    mean_se,
    seed_case_p,
    simulate_auroc,
    simulate_mean,
)

REPS, BOUND = 800, 0.075


@pytest.mark.parametrize(("scenario", "seeds"), [(s, k) for k in (2, 3) for s in MEAN_SCENARIOS]
                         + [(MEAN_SCENARIOS[3], 5), (MEAN_SCENARIOS[4], 5)],
                         ids=lambda v: v.name if hasattr(v, "name") else str(v))
def test_mean_scores_keep_the_level(scenario, seeds):
    p, _ = seed_case_p(simulate_mean(scenario, seeds, REPS, np.random.default_rng(seeds), cases=100))
    assert (p < 0.05).mean() <= BOUND


@pytest.mark.parametrize("seeds", [3])
@pytest.mark.parametrize("scenario", [AUROC_SCENARIOS[0], AUROC_SCENARIOS[2], AUROC_SCENARIOS[4]],
                         ids=lambda s: s.name)
def test_auroc_keeps_the_level(scenario, seeds):
    y = auroc_labels(100)
    p, _ = seed_case_p(simulate_auroc(scenario, seeds, 400, np.random.default_rng(seeds), cases=100), y)
    assert (p < 0.05).mean() <= 0.085  # 400 repetitions: se 0.011 at 0.05; a 0.10 rate passes with P < 0.1


@pytest.mark.parametrize("scenario", MEAN_SCENARIOS[:2], ids=lambda s: s.name)
def test_five_seeds_find_three_standard_errors(scenario):
    """Where the seeds carry most of the variance no test can: the exact t with 4 degrees of freedom
    finds 3 standard errors 62 % of the time (docs/comparisons.md)."""
    shift = 3 * mean_se(scenario, 5, 100)
    p, _ = seed_case_p(simulate_mean(scenario, 5, REPS, np.random.default_rng(9), cases=100, difference=shift))
    assert (p < 0.05).mean() >= 0.65


def test_the_bound_catches_a_normal_reference_with_three_seeds():
    """The same variance with a normal reference (what a bootstrap standard error does) is too liberal
    when the seeds carry the variance: the bound of these tests fails it."""
    from scipy.stats import norm

    from pathkit_bench.stats.seeds import mean_tables, seed_case_variance

    per_seed, groups = mean_tables(simulate_mean(MEAN_SCENARIOS[3], 3, REPS, np.random.default_rng(3), cases=100))
    v = seed_case_variance(per_seed, groups)
    diff = per_seed.mean(axis=-2) @ np.array([1.0, -1.0])
    naive = 2 * norm.sf(np.abs(diff) / np.sqrt(v.variance[:, 0, 1]))
    assert (naive < 0.05).mean() > 0.1
