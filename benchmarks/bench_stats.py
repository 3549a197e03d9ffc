"""Comparison statistics of a large suite: 10 encoders x 4 generators x 5 seeds x 5 tasks (1,000 cells,
4,000 test cases per task, 20,000 in all) on synthetic per-case scores, target under a minute on 2 cores.

Per task: every pair of the 40 cells by the paired two-way bootstrap (seeds and cases resampled
together, 2,000 resamples), Holm over the task's 780 pairs; across tasks: average ranks, Friedman,
Nemenyi CD and win/tie/loss of encoders (20 blocks) and generators (50 blocks). Measured side by
side in one run on one task's first 10 cells: the shared-resample matrix form against one
`paired_bootstrap` call per pair (the same numbers: same resamples per call). Also shown: one binary
AUROC task whose AUROC is recomputed on every resample, and peak memory.

    .venv/bin/python benchmarks/bench_stats.py [--resamples 2000]
"""

from __future__ import annotations

import argparse
import resource
import time


def synthetic_scores(rng, seeds: int, cases: int, cells: int):
    import numpy as np

    difficulty = rng.random(cases)[None, :, None]
    skill = np.linspace(0.0, 0.05, cells)[None, None, :]
    seed_noise = rng.normal(0, 0.01, (seeds, 1, cells))
    return np.clip(difficulty + skill + seed_noise + rng.normal(0, 0.05, (seeds, cases, cells)), 0, 1)


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from pathkit_bench.stats import (
        adjust_pvalues,
        average_ranks,
        friedman_test,
        nemenyi_cd,
        paired_bootstrap,
        pairwise_bootstrap,
        pairwise_bootstrap_auroc,
        win_tie_loss,
    )

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args(argv)
    n_enc, n_gen, n_seeds, n_tasks, n_cases = 10, 4, 5, 5, 4000
    cells = n_enc * n_gen
    rng = np.random.default_rng(0)
    tasks = [synthetic_scores(rng, n_seeds, n_cases, cells) for _ in range(n_tasks)]

    wall, cpu = time.perf_counter(), time.process_time()
    results, adjusted = [], []
    upper = np.triu_indices(cells, 1)
    for scores in tasks:
        result = pairwise_bootstrap(scores, args.resamples, seed=0)
        adj = np.ones((cells, cells))
        adj[upper] = adjust_pvalues(result.p_value[upper], "holm")
        adj.T[upper] = adj[upper]
        results.append(result)
        adjusted.append(adj)
    means = np.stack([r.mean.reshape(n_enc, n_gen) for r in results])  # tasks x encoders x generators
    for blocks in (means.transpose(0, 2, 1).reshape(-1, n_enc),  # encoders over (task, generator) blocks
                   means.reshape(-1, n_gen)):  # generators over (task, encoder) blocks
        average_ranks(blocks)
        friedman_test(blocks)
        nemenyi_cd(blocks.shape[1], blocks.shape[0])
    diffs, pvals = [], []
    for r, adj in zip(results, adjusted, strict=True):
        for g in range(n_gen):
            idx = [e * n_gen + g for e in range(n_enc)]
            diffs.append(r.difference[np.ix_(idx, idx)])
            pvals.append(adj[np.ix_(idx, idx)])
    win_tie_loss(np.asarray(diffs), np.asarray(pvals))
    suite_wall, suite_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"suite comparisons: {n_tasks} tasks x {cells} cells x {n_seeds} seeds ({n_tasks * cells * n_seeds} cells, "
          f"{n_tasks * n_cases} test cases), {n_tasks * len(upper[0])} paired tests with {args.resamples} resamples: "
          f"{suite_wall:.1f} s wall, {suite_cpu:.1f} s CPU")

    # side by side: the shared-resample matrix form against one paired_bootstrap call per pair
    sub = tasks[0][:, :, :10]
    wall, cpu = time.perf_counter(), time.process_time()
    matrix = pairwise_bootstrap(sub, args.resamples, seed=0)
    matrix_s, matrix_cpu = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    per_pair = np.zeros((10, 10))
    for i in range(10):
        for j in range(i + 1, 10):
            per_pair[i, j] = paired_bootstrap(sub[..., i], sub[..., j], n_resamples=args.resamples, seed=0).p_value
    pair_s, pair_cpu = time.perf_counter() - wall, time.process_time() - cpu
    same = np.allclose(per_pair[np.triu_indices(10, 1)], matrix.p_value[np.triu_indices(10, 1)])
    print(f"10 cells, 45 pairs: matrix form {matrix_s:.2f} s wall ({matrix_cpu:.2f} s CPU), per-pair calls "
          f"{pair_s:.2f} s ({pair_cpu:.2f} s CPU): x{pair_cpu / matrix_cpu:.1f} in CPU time; same p-values: {same}")

    labels = rng.random(n_cases) < 0.3
    probs = np.clip(labels[None, :, None] * np.linspace(0.1, 0.3, cells)[None, None, :]
                    + rng.random((n_seeds, n_cases, cells)), 0, 1)
    wall, cpu = time.perf_counter(), time.process_time()
    pairwise_bootstrap_auroc(probs, labels, args.resamples // 4, seed=0)
    auroc_s, auroc_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"one binary AUROC task ({cells} cells x {n_seeds} seeds x {n_cases} cases), AUROC recomputed per "
          f"resample, {args.resamples // 4} resamples: {auroc_s:.1f} s wall, {auroc_cpu:.1f} s CPU")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
