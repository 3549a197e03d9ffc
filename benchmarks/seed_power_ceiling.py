"""The most power any valid test can have with S training seeds: the ceiling the seeds x cases
inference (`pathkit_bench.stats.seeds`) is measured against in docs/comparisons.md ("Several training
seeds", power).

Where the per-seed differences carry the variance (seed-dominated, and interaction-dominated: there the
seed x case noise reaches the per-seed means too), the data reduce to the mean difference
d ~ N(delta, v) and the seed term B ~ v chi-square(S - 1) / (S - 1), with v at least the known
interaction share v0 (case and interaction terms rest on hundreds of degrees of freedom: taken as known,
which can only help a test). A test is valid when its level is at most alpha for delta = 0 and every
v >= v0 (every seed-to-seed spread). Printed for a true difference of 3 standard errors (delta = 3 sqrt(v)):

- the power of Student's t-test with S - 1 degrees of freedom (noncentral t, scipy.stats.nct);
- the power of the z-test that knows v (not valid: its level fails once seeds spread);
- the envelope: the most powerful valid test against that one alternative, by linear programming over
  tests constant on a grid of (|d|, B) cells with the level bounded on a grid of v (scipy's HiGHS),
  and its level checked on a finer grid. No valid test has more power at that alternative; the
  envelope's own test needs the unknown v, so no usable test reaches it.

    .venv/bin/python benchmarks/seed_power_ceiling.py [--seeds 5] [--fine]

`v / v0` is 1 in the interaction-dominated case (no seed shift) and 116 in the seed-dominated one (the
seed-dominated scenario of `stats.seed_simulation` with 5 seeds: a variance of 0.4035 of which 0.0035 is
case and interaction terms).
"""

from __future__ import annotations

import argparse
import time

ALPHA = 0.05
EFFECT = 3.0  # standard errors


def cell_probabilities(delta: float, v: float, b_edges, d_edges, dof: int):
    """P(B in bin j, |d| in bin k) for d ~ N(delta, v), B ~ v chi2(dof) / dof, flattened (j, k)."""
    import numpy as np
    from scipy.stats import chi2, norm

    pb = np.diff(chi2.cdf(b_edges * dof / v, dof))
    sd = np.sqrt(v)
    pd = np.diff(norm.cdf((d_edges - delta) / sd) - norm.cdf((-d_edges - delta) / sd))
    return np.outer(pb, pd).ravel()


def envelope(ratio: float, dof: int, fine: bool) -> tuple[float, float]:
    """(most powerful valid test's power, its largest level on a fine grid of v), v0 = 1, v = ratio."""
    import numpy as np
    from scipy.optimize import linprog

    nb, nd = (160, 241) if fine else (90, 121)
    b_edges = np.concatenate([[0.0], np.geomspace(0.005 * ratio, 50 * ratio, nb), [np.inf]])
    d_edges = np.concatenate([np.linspace(0.0, 12 * np.sqrt(ratio), nd), [np.inf]])
    nulls = np.unique(np.concatenate([np.linspace(1, 3, 41), np.geomspace(1, 1e5, 150)]))
    level = np.array([cell_probabilities(0.0, v, b_edges, d_edges, dof) for v in nulls])
    gain = cell_probabilities(EFFECT * np.sqrt(ratio), ratio, b_edges, d_edges, dof)
    found = linprog(-gain, A_ub=level, b_ub=np.full(len(nulls), ALPHA), bounds=(0, 1), method="highs")
    checked = max(cell_probabilities(0.0, v, b_edges, d_edges, dof) @ found.x for v in np.geomspace(1, 1e5, 800))
    return -found.fun, checked


def main(argv: list[str] | None = None) -> int:
    from scipy.stats import nct, norm, t

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--fine", action="store_true", help="a finer grid (about 30 s a row)")
    args = parser.parse_args(argv)
    dof = args.seeds - 1
    crit = t.isf(ALPHA / 2, dof)
    t_power = nct.sf(crit, dof, EFFECT) + nct.cdf(-crit, dof, EFFECT)
    z_power = norm.sf(norm.isf(ALPHA / 2) - EFFECT) + norm.cdf(-norm.isf(ALPHA / 2) - EFFECT)
    print(f"{args.seeds} seeds, alpha {ALPHA}, true difference {EFFECT} standard errors")
    print(f"Student's t ({dof} df, critical value {crit:.3f}): power {t_power:.4f}")
    print(f"z-test knowing the variance (not valid): power {z_power:.4f}\n")
    print("| scenario | v / v0 | envelope (most powerful valid test) | its largest level | s |")
    print("|---|---|---|---|---|")
    for name, ratio in (("interaction-dominated", 1.0), ("seed-dominated", 116.0)):
        start = time.perf_counter()
        power, level = envelope(ratio, dof, args.fine)
        print(f"| {name} | {ratio:g} | {power:.4f} | {level:.4f} | {time.perf_counter() - start:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
