"""Error rates of the suites' comparison over training seeds: false-positive rate (two equally good
models) and power (a true difference of 3 standard errors) at alpha 0.05, per variance scenario, for
S = 2, 3, 5, 10 seeds and 200 test cases, for mean per-case scores and for AUROC; the seeds x cases
inference (`pathkit_bench.stats.seeds`) and the two-way bootstrap (`pairwise_bootstrap`,
`pairwise_bootstrap_auroc`) side by side on the same simulated tables (`stats.seed_simulation`).

    .venv/bin/python benchmarks/bench_seed_inference.py [--reps 1000] [--bootstrap-reps 150] [--resamples 200]

Prints a Markdown table (docs/comparisons.md quotes it). The bootstrap runs one table at a time, so
it gets fewer repetitions (its rates are given with their own standard error in the header).
"""

from __future__ import annotations

import argparse
import time

SEEDS = (2, 3, 5, 10)
CASES = 200
ALPHA = 0.05


def _mean_rows(scenario, seeds: int, args, rng):
    from pathkit_bench.stats.seed_simulation import bootstrap_p, mean_se, seed_case_p, simulate_mean

    shift = 3 * mean_se(scenario, seeds, CASES)
    null = simulate_mean(scenario, seeds, args.reps, rng, CASES)
    alt = simulate_mean(scenario, seeds, args.reps, rng, CASES, shift)
    b = args.bootstrap_reps
    return ((seed_case_p(null)[0] < ALPHA).mean(), (seed_case_p(alt)[0] < ALPHA).mean(),
            (bootstrap_p(null[:b], None, args.resamples) < ALPHA).mean(),
            (bootstrap_p(alt[:b], None, args.resamples) < ALPHA).mean())


def _auroc_rows(scenario, seeds: int, args, rng):
    from pathkit_bench.stats.seed_simulation import (
        auroc_gain_for,
        auroc_labels,
        bootstrap_p,
        seed_case_p,
        simulate_auroc,
    )

    y = auroc_labels(CASES)
    null = simulate_auroc(scenario, seeds, args.reps, rng, CASES)
    p_null, diff = seed_case_p(null, y)
    gain = auroc_gain_for(scenario, seeds, 3 * float(diff.std()), rng, cases=CASES)
    alt = simulate_auroc(scenario, seeds, args.reps, rng, CASES, gain)
    b = args.bootstrap_reps
    return ((p_null < ALPHA).mean(), (seed_case_p(alt, y)[0] < ALPHA).mean(),
            (bootstrap_p(null[:b], y, args.resamples) < ALPHA).mean(),
            (bootstrap_p(alt[:b], y, args.resamples) < ALPHA).mean())


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from pathkit_bench.stats.seed_simulation import AUROC_SCENARIOS, MEAN_SCENARIOS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="repetitions of the seeds x cases test")
    parser.add_argument("--bootstrap-reps", type=int, default=150, help="repetitions of the bootstrap")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples per table")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    args = parser.parse_args(argv)
    seed_counts = [int(s) for s in args.seeds.split(",")]
    se_new = (ALPHA * (1 - ALPHA) / args.reps) ** 0.5
    se_boot = (ALPHA * (1 - ALPHA) / args.bootstrap_reps) ** 0.5
    print(f"{CASES} cases, alpha {ALPHA}; seeds x cases test over {args.reps} repetitions (se of a 0.05 rate "
          f"{se_new:.3f}), two-way bootstrap ({args.resamples} resamples) over {args.bootstrap_reps} "
          f"(se {se_boot:.3f}); power at a true difference of 3 standard errors\n")
    print("| score | scenario | seeds | FPR, seeds x cases | power, seeds x cases | FPR, bootstrap "
          "| power, bootstrap |")
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for kind, scenarios, rows in (("mean", MEAN_SCENARIOS, _mean_rows), ("AUROC", AUROC_SCENARIOS, _auroc_rows)):
        for scenario in scenarios:
            for seeds in seed_counts:
                rng = np.random.default_rng(100 * seeds + scenarios.index(scenario))
                fpr, power, fpr_b, power_b = rows(scenario, seeds, args, rng)
                print(f"| {kind} | {scenario.name} | {seeds} | {fpr:.3f} | {power:.3f} | {fpr_b:.3f} | {power_b:.3f} |",
                      flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
