"""False-positive rates of pathkit's paired comparisons for two equally good models, simulated.

Each repetition draws n test cases (binary labels) and two models that are equally good by
construction: each model's score is the label plus a shared case difficulty (so the two models are
correlated, as two encoders on the same slides are) plus its own noise of the same size. The two
are then compared as `pathkit compare` compares one-seed runs:

- DeLong's paired AUROC test (`pathkit_bench.stats.delong_test`);
- the paired bootstrap of a per-case score (`pathkit_bench.stats.pairwise_bootstrap`, normal p
  from the bootstrap standard error; the per-case score is minus the squared error).

A test that holds its level calls them different in about 5 % of the repetitions at alpha 0.05; the
binomial standard error of that share is printed beside it. `tests/bench/stats/test_references.py`
runs the same simulation with 400 repetitions in the default suite.

    .venv/bin/python benchmarks/bench_error_rates.py [--repetitions 1000] [--cases 50,150,300]
"""

from __future__ import annotations

import argparse
import math
import time


def equal_models(rng, n: int):
    """(labels, scores of A, scores of B): two equally good, correlated models on the same n cases."""
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    shared = rng.normal(size=n)
    a = y * 1.0 + 0.7 * shared + 0.7 * rng.normal(size=n)
    b = y * 1.0 + 0.7 * shared + 0.7 * rng.normal(size=n)
    return y, a, b


def false_positive_rates(repetitions: int, n: int = 150, resamples: int = 500, seed: int = 0,
                         alpha: float = 0.05) -> dict[str, float]:
    """Share of the repetitions in which DeLong's test and the paired bootstrap give p < alpha."""
    import numpy as np

    from pathkit_bench.stats import delong_test, pairwise_bootstrap

    rng = np.random.default_rng(seed)
    delong_hits = bootstrap_hits = 0
    for r in range(repetitions):
        y, a, b = equal_models(rng, n)
        delong_hits += delong_test(a, b, y).p_value < alpha
        scores = np.stack([-(a - y) ** 2, -(b - y) ** 2], axis=1)
        bootstrap_hits += pairwise_bootstrap(scores, n_resamples=resamples, seed=r).p_value[0, 1] < alpha
    return {"delong": delong_hits / repetitions, "paired_bootstrap": bootstrap_hits / repetitions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--cases", default="50,150,300", help="comma-separated numbers of test cases")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)
    se = math.sqrt(0.05 * 0.95 / args.repetitions)
    print(f"two equally good models, alpha 0.05, {args.repetitions} repetitions "
          f"(binomial standard error of a 5 % rate: {se:.3f}); bootstrap with {args.resamples} resamples")
    print(f"{'cases':>6}  {'DeLong':>7}  {'paired bootstrap':>16}  {'seconds':>7}")
    for n in (int(x) for x in args.cases.split(",")):
        start = time.perf_counter()
        rates = false_positive_rates(args.repetitions, n, args.resamples, seed=n)
        seconds = time.perf_counter() - start
        print(f"{n:>6}  {rates['delong']:>7.3f}  {rates['paired_bootstrap']:>16.3f}  {seconds:>7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
