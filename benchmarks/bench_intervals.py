"""Cost of honest intervals: the classification metric with and without its Wilson intervals of
proportions and small-sample facts, and the realised split statement, measured side by side.

The Wilson intervals (accuracy, sensitivity/specificity, each class's recall and precision) are
scipy binomial intervals, a few per class; the metric's bootstrap (1000 resamples) dominates. This
prints the seconds of `ClassificationMetric.compute` on `--cases` test cases of `--classes` classes
with and without the proportions' intervals (everything else, bootstrap included, the same), best
of `--repeat`, and the time of `split_statement` over a 10,000-case, 2,000-patient split:

    .venv/bin/python benchmarks/bench_intervals.py [--cases 2000] [--classes 7] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time


def best_of(repeat: int, call) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--classes", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    import numpy as np
    import pathkit_metrics.classification as C

    from pathkit_sdk.splits import split_statement

    rng = np.random.default_rng(0)
    labels = rng.integers(0, args.classes, args.cases)
    logits = rng.normal(size=(args.cases, args.classes))
    logits[np.arange(args.cases), labels] += 1.5
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    preds, refs = probs.tolist(), labels.tolist()
    metric = C.ClassificationMetric()

    def compute(proportions: bool) -> None:
        options = {"n_resamples": 1000}
        if not proportions:
            original = C._proportion
            C._proportion = lambda *a, **k: None  # the same metric without the proportions' intervals
            try:
                metric.compute(preds, refs, context={"options": options})
            finally:
                C._proportion = original
            return
        metric.compute(preds, refs, context={"options": options})

    with_ci = best_of(args.repeat, lambda: compute(True))
    without = best_of(args.repeat, lambda: compute(False))
    n_props = 1 + 2 * args.classes if args.classes > 2 else 3
    print(f"classification metric, {args.cases} cases x {args.classes} classes, 1000 bootstrap resamples, "
          f"best of {args.repeat}")
    print(f"  without proportion intervals  {without:.4f} s")
    print(f"  with {n_props} Wilson intervals     {with_ci:.4f} s  (ratio {with_ci / without:.3f})")

    parts = {"train": [], "val": [], "test": []}
    patients = {}
    for i in range(10000):
        part = "train" if i % 10 < 7 else "val" if i % 10 < 8 else "test"
        parts[part].append(f"c{i}")
        patients[f"c{i}"] = f"{part}-p{i % 2000}"
    statement = best_of(args.repeat, lambda: split_statement(parts, patients, unit="patient"))
    print(f"split statement of 10,000 cases / 2,000 patients: {statement * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
