"""`pathkit compare` of multi-seed runs: several run folders per side, one per training seed, paired
with the other side's by the seed each recorded, compared by the seeds x cases inference the suites
use (`pathkit_bench.stats.seeds`; docs/comparisons.md, "Several training seeds").

Every run of both sides must have scored the same test cases; each score is compared on the
(seeds, cases, 2) table of its per-case values: mean per-case scores (and per-case correctness for
accuracy) by the variance terms of the mean, AUROC by those of DeLong's components, both with the
generalized p-value. With one run per side `compare_runs` is used unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pathkit_bench.compare import Comparison, compare_each, compare_runs, default_keys, paired_values, same_test_cases
from pathkit_core.contracts import PathkitError


def recorded_seed(run: Any) -> int:
    """The training seed a run folder recorded (metrics.json's `run.seed`, else its config's)."""
    seed = run.metrics.get("run", {}).get("seed")
    if seed is None:
        seed = run.config.get("seed")
    if seed is None or isinstance(seed, bool) or not isinstance(seed, int | float) or int(seed) != seed:
        raise PathkitError(f"{run.path}: records no training seed (metrics.json run.seed), so it cannot be "
                           "paired with the other side's run of the same seed")
    return int(seed)


def pair_by_seed(runs_a: Sequence[Any], runs_b: Sequence[Any]) -> list[tuple[int, Any, Any]]:
    """(seed, run of A, run of B) for every seed, in increasing seed order; a PathkitError when a side
    holds a seed twice or the two sides' seeds differ."""
    sides = {}
    for name, runs in (("A", runs_a), ("B", runs_b)):
        by_seed: dict[int, Any] = {}
        for run in runs:
            seed = recorded_seed(run)
            if seed in by_seed:
                raise PathkitError(f"{name} holds two runs of seed {seed}: {by_seed[seed].path} and {run.path}")
            by_seed[seed] = run
        sides[name] = by_seed
    only_a = sorted(set(sides["A"]) - set(sides["B"]))
    only_b = sorted(set(sides["B"]) - set(sides["A"]))
    if only_a or only_b:
        parts = [f"seed(s) {', '.join(map(str, s))} only in {n}" for n, s in (("A", only_a), ("B", only_b)) if s]
        raise PathkitError(f"the two sides were trained with different seeds ({'; '.join(parts)}); each seed "
                           "of A is compared with the same seed of B")
    return [(s, sides["A"][s], sides["B"][s]) for s in sorted(sides["A"])]


def two_seeds_note(what: str) -> str:
    """What a comparison over two seeds can show (the suites' and `pathkit compare`'s note)."""
    return ("two seeds: the seed-to-seed spread of a difference rests on one degree of freedom, so where the "
            "seeds disagree a difference must be about 13 times its seed standard error to be significant "
            f"(Student's t, 1 df); a 'no significant winner' here says little; 3-5 seeds tell {what} apart "
            "(docs/comparisons.md)")


def _stack(values: list[Any]) -> Any:
    """(seeds, cases, 2[, classes]) from per seed [A's values, B's values], each (cases[, classes])."""
    import numpy as np

    return np.moveaxis(np.asarray(values, dtype=np.float64), 1, 2)


def _seed_comparison(key: str, paired: list[tuple[Any, Any]], level: float) -> Comparison:
    """One key over the seeds: `paired` holds (A's, B's) PairedValues per seed."""
    import numpy as np

    from pathkit_bench.stats.seeds import pairwise_seeds, pairwise_seeds_auroc

    first = paired[0][0]
    if first.test == "statistic":
        raise PathkitError(f"{key}: a corpus statistic ({first.column}) has no per-case values to split into "
                           "seed and case terms; compare it one seed at a time")
    table = _stack([[va.values, vb.values] for va, vb in paired])
    n_seeds = len(paired)
    if first.test == "auroc":
        labels = first.labels
        if any(not np.array_equal(va.labels, labels) or not np.array_equal(vb.labels, labels) for va, vb in paired):
            raise PathkitError(f"{key}: the runs' per-case classes differ between seeds")
        if table.ndim == 4 and table.shape[-1] > 2:
            res, words = pairwise_seeds_auroc(table, labels, level), "DeLong components, one-vs-rest macro"
        else:
            scores = table[..., 1] if table.ndim == 4 else table
            res, words = pairwise_seeds_auroc(scores, (labels == 1).astype(np.int64), level), "DeLong components"
        test = "seeds x cases (AUROC)"
    else:
        res, words = pairwise_seeds(table, level), f"mean per-case {first.column}"
        test = "seeds x cases"
    summaries = [[va.summary, vb.summary] for va, vb in paired]
    a, b = (float(np.mean(side)) if all(math.isfinite(v) for v in side) else math.nan for side in zip(*summaries,
                                                                                                     strict=True))
    notes = [f"{n_seeds} seeds, {words}, generalized p; seed sd A {res.seed_sd[0]:.4f}, B {res.seed_sd[1]:.4f}"]
    dropped = first.values.shape[0] - res.n_cases
    if dropped:
        notes.append(f"{dropped} case(s) without a value in some run left out")
    if n_seeds == 2:
        notes.append(two_seeds_note("runs"))
    return Comparison(key, first.metric, test, a, b, float(res.difference[0, 1]), float(res.diff_low[0, 1]),
                      float(res.diff_high[0, 1]), float(res.p_value[0, 1]), float(res.p_value[0, 1]),
                      int(res.n_cases), "; ".join(notes))


def _seed_values(pairs: list[tuple[int, Any, Any]], key: str, ids: Sequence[str],
                 registry: Any) -> list[tuple[Any, Any]]:
    out = []
    for _, ra, rb in pairs:
        va, vb = paired_values(ra, key, ids, registry), paired_values(rb, key, ids, registry)
        if {va.test, vb.test} != {(out[0][0] if out else va).test}:
            raise PathkitError(f"{key}: the runs were scored by metrics that compare it differently "
                               f"({ra.path}: {va.test}, {rb.path}: {vb.test})")
        out.append((va, vb))
    return out


def compare_seed_runs(runs_a: Sequence[Any], runs_b: Sequence[Any], keys: Sequence[str] = (), *,
                      n_resamples: int = 2000, seed: int = 0, level: float = 0.95, correction: str = "holm",
                      registry: Any = None) -> tuple[list[Comparison], list[str], list[int]]:
    """(comparisons, scores not compared, the seeds) of A's runs against B's (RunFolder each), paired by
    seed. One run per side: `compare_runs` exactly (the seeds list then holds nothing)."""
    if len(runs_a) == 1 and len(runs_b) == 1:
        rows, skipped = compare_runs(runs_a[0], runs_b[0], keys, n_resamples=n_resamples, seed=seed, level=level,
                                     correction=correction, registry=registry)
        return rows, skipped, []
    pairs = pair_by_seed(runs_a, runs_b)
    first = pairs[0][1]
    ids = same_test_cases(first, pairs[0][2])
    for _, ra, rb in pairs[1:]:
        same_test_cases(first, ra)
        same_test_cases(first, rb)
    chosen = list(keys) or default_keys(first, pairs[0][2], registry)
    if not chosen:
        raise PathkitError(f"{first.path} and {pairs[0][2].path} share no score to compare; name one with --metric")

    def values(key: str) -> Comparison:  # read and tested together: either may leave the key out
        return _seed_comparison(key, _seed_values(pairs, key, ids, registry), level)

    out, skipped = compare_each(chosen, keys, values, lambda _, comparison: comparison, "over seeds x cases",
                                correction)
    return out, skipped, [s for s, _, _ in pairs]


__all__ = ["compare_seed_runs", "pair_by_seed", "recorded_seed", "two_seeds_note"]
