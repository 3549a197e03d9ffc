"""Two models scored on the same test cases by S training seeds, simulated so that the error rates of a
seeds x cases test can be measured (tests/bench/stats/test_seed_error_rates.py,
benchmarks/bench_seed_inference.py; the table in docs/comparisons.md).

A model's score on case i with seed s is its own error on the case (fixed over seeds, sd `case_sd`)
+ a seed-to-seed shift of its mean (sd `seed_sd`) + per-seed case noise (the seed x case interaction,
sd `noise_sd`); for AUROC the seed shift moves the model's separation of the classes instead. Arrays
carry a leading axis of repetitions, so a whole simulation is a few numpy calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scenario:
    name: str
    case_sd: float  # each model's own error on a case, the same for every seed
    seed_sd: float  # seed-to-seed shift of a model's mean score (AUROC: of its class separation)
    noise_sd: float  # per-seed case noise: the seed x case interaction


MEAN_SCENARIOS = (
    Scenario("no seed shift (case-dominated)", 0.5, 0.0, 0.7),
    Scenario("seed sd 0.1", 0.5, 0.1, 0.7),
    Scenario("seed sd 0.2", 0.5, 0.2, 0.7),
    Scenario("seed sd 1.0 (seed-dominated)", 0.5, 1.0, 0.7),
    Scenario("interaction-dominated", 0.1, 0.0, 3.0),
)
AUROC_SCENARIOS = (
    Scenario("no seed shift (case-dominated)", 0.7, 0.0, 0.7),
    Scenario("separation sd 0.1", 0.7, 0.1, 0.7),
    Scenario("separation sd 0.3", 0.7, 0.3, 0.7),
    Scenario("separation sd 0.5 (seed-dominated)", 0.7, 0.5, 0.7),
    Scenario("interaction-dominated", 0.1, 0.0, 2.0),
)
SEPARATION = 1.0  # AUROC scenarios: a model's score is SEPARATION * label + noise (AUROC about 0.76)


def mean_se(scenario: Scenario, seeds: int, cases: int) -> float:
    """The true standard error of the difference of two models' means over seeds and cases."""
    return (2 * scenario.case_sd**2 / cases + 2 * scenario.seed_sd**2 / seeds
            + 2 * scenario.noise_sd**2 / (cases * seeds)) ** 0.5


def simulate_mean(scenario: Scenario, seeds: int, reps: int, rng: Any, cases: int = 200,
                  difference: float = 0.0):
    """(reps, seeds, cases, 2) per-case scores; model 0 is better by `difference` on average."""
    import numpy as np

    own = rng.normal(0.0, scenario.case_sd, (reps, 1, cases, 2))
    shift = rng.normal(0.0, scenario.seed_sd, (reps, seeds, 1, 2))
    noise = rng.normal(0.0, scenario.noise_sd, (reps, seeds, cases, 2))
    difficulty = rng.normal(0.0, 1.0, (reps, 1, cases, 1))  # shared by both models: cancels when paired
    return difficulty + own + shift + noise + np.array([difference, 0.0])


def auroc_labels(cases: int = 200):
    import numpy as np

    return (np.arange(cases) % 2).astype(np.int64)


def simulate_auroc(scenario: Scenario, seeds: int, reps: int, rng: Any, cases: int = 200,
                   separation_gain: float = 0.0):
    """(reps, seeds, cases, 2) positive-class scores on `auroc_labels(cases)`; model 0's separation is
    larger by `separation_gain`."""
    import numpy as np

    y = auroc_labels(cases)[None, None, :, None].astype(np.float64)
    separation = SEPARATION + np.array([separation_gain, 0.0]) + rng.normal(0.0, scenario.seed_sd, (reps, seeds, 1, 2))
    own = rng.normal(0.0, scenario.case_sd, (reps, 1, cases, 2))
    noise = rng.normal(0.0, scenario.noise_sd, (reps, seeds, cases, 2))
    return separation * y + own + noise


def auroc_gain_for(scenario: Scenario, seeds: int, target: float, rng: Any, reps: int = 1000,
                   cases: int = 200, steps: int = 2) -> float:
    """The separation gain that raises the mean AUROC difference to `target`: a first guess from
    AUROC = Phi(separation / sqrt(2 (case_sd^2 + noise_sd^2))), then rescaled by the difference
    that gain gives in `steps` pilot simulations (AUROC bends towards 1)."""
    from scipy.stats import norm

    scale = (2 * (scenario.case_sd**2 + scenario.noise_sd**2)) ** 0.5
    guess = target * scale / float(norm.pdf(SEPARATION / scale))
    for _ in range(steps):
        _, diff = seed_case_p(simulate_auroc(scenario, seeds, reps, rng, cases, guess), auroc_labels(cases))
        guess *= target / float(diff.mean())
    return guess


def seed_case_p(scores: Any, labels: Any = None):
    """(reps,) two-sided p of model 0 against model 1 by the seeds x cases t (`stats.seeds`) for a
    (reps, seeds, cases, 2) table: mean scores, or AUROC when `labels` are given; and the differences."""
    from pathkit_bench.stats.seeds import binary_auroc_tables, generalized_p, mean_tables, seed_case_variance

    per_seed, groups = mean_tables(scores) if labels is None else binary_auroc_tables(scores, labels == 1)
    v = seed_case_variance(per_seed, groups)
    mean = per_seed.mean(axis=-2)
    diff = mean[..., 0] - mean[..., 1]
    return generalized_p(diff, v.cases[..., 0, 1], v.seeds[..., 0, 1], v.n_seeds), diff


def bootstrap_p(scores: Any, labels: Any = None, resamples: int = 200):
    """(reps,) p of the two-way bootstrap (`pairwise_bootstrap`, `pairwise_bootstrap_auroc`), one rep at a time."""
    import numpy as np

    from pathkit_bench.stats.paired import pairwise_bootstrap, pairwise_bootstrap_auroc

    out = np.empty(scores.shape[0])
    for r in range(scores.shape[0]):
        if labels is None:
            out[r] = pairwise_bootstrap(scores[r], resamples, seed=r).p_value[0, 1]
        else:
            out[r] = pairwise_bootstrap_auroc(scores[r], labels, resamples, seed=r).p_value[0, 1]
    return out


__all__ = ["AUROC_SCENARIOS", "MEAN_SCENARIOS", "SEPARATION", "Scenario", "auroc_gain_for", "auroc_labels",
           "bootstrap_p", "mean_se", "seed_case_p", "simulate_auroc", "simulate_mean"]
