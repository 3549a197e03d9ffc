"""Paired comparison of two finished run folders scored on the same test cases (`pathkit compare`).

Each summary key is compared on per-case values read from what a run folder already holds
(`per_case.parquet`, `test_cases.jsonl`, `metrics.json`): the metric says how
(`Metric.paired_scores`): AUROC by DeLong's test on the per-case class probabilities, accuracy by
McNemar's exact test on per-case correctness, a corpus statistic of pairs (the survival C-index) by
the paired bootstrap recomputing it per resample from the per-case columns the metric names, any key
with a per-case column of its name by the paired bootstrap of the mean difference. The statistics
are `pathkit_bench.stats`; this module only finds the values and refuses, naming the cases, when
the two runs were not scored on the same cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pathkit_core.contracts import PathkitError

TESTS = ("mean", "correct", "auroc", "statistic")
# Summary values and per-case means closer than this are one number (a mean score, not a corpus one).
_SAME = 1e-6


@dataclass
class PairedValues:
    """Per-case values of one summary key of one run, in the order of the ids asked for."""

    key: str
    metric: str
    test: str  # "mean", "correct" or "auroc"
    column: str
    values: Any  # (cases,) scores or 0/1, or (cases, classes) probabilities for "auroc"
    labels: Any = None  # (cases,) class indices for "auroc"
    summary: float = math.nan  # the key's value in metrics.json
    statistic: Any = None  # "statistic": the metric's statistic of resampled rows (resamples, cases, columns)


@dataclass
class Comparison:
    key: str
    metric: str
    test: str
    a: float
    b: float
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    p_adjusted: float
    n_cases: int
    note: str = ""

    def row(self) -> dict[str, Any]:
        return asdict(self)


def _show(ids: Sequence[str], limit: int = 10) -> str:
    head = ", ".join(ids[:limit])
    return head + (f", ... ({len(ids) - limit} more)" if len(ids) > limit else "")


def case_difference(ids_a: Sequence[str], ids_b: Sequence[str], name_a: str = "A", name_b: str = "B") -> str:
    """`2 only in A (C018, C019); 2 only in B (X1, X2)`: how two sets of case ids differ ('' when alike)."""
    set_a, set_b = set(ids_a), set(ids_b)
    only_a = [i for i in ids_a if i not in set_b]
    only_b = [i for i in ids_b if i not in set_a]
    parts = [f"{len(only_a)} only in {name_a} ({_show(only_a)})" if only_a else "",
             f"{len(only_b)} only in {name_b} ({_show(only_b)})" if only_b else ""]
    return "; ".join(p for p in parts if p)


def test_case_ids(run: Any) -> list[str]:
    """The ids of the test cases a run scored (test_cases.jsonl, else its per-case table)."""
    if run.test_cases:
        return list(run.test_cases)
    table = run.per_case
    if table is not None and "id" in table.columns:
        return [str(i) for i in table["id"].to_list()]
    raise PathkitError(f"{run.path}: no test_cases.jsonl and no per-case table: its test cases are unknown")


def same_test_cases(a: Any, b: Any) -> list[str]:
    """The shared test case ids (in A's order); a PathkitError naming the cases when the two runs
    scored different cases or hold different references for one case."""
    ids_a, ids_b = test_case_ids(a), test_case_ids(b)
    differ = case_difference(ids_a, ids_b)
    if differ:
        raise PathkitError(f"{a.path} and {b.path} were scored on different test cases: {differ}; a paired "
                           "comparison needs the same cases")
    refs_a, refs_b = case_references(a), case_references(b)
    if refs_a is not None and refs_b is not None:
        differ = [i for i in ids_a if refs_a.get(i) != refs_b.get(i)]
        if differ:
            raise PathkitError(f"{a.path} and {b.path} hold different references for {len(differ)} test case(s) "
                               f"({_show(differ)}); a paired comparison needs the same cases")
    return ids_a


def case_references(run: Any) -> dict[str, Any] | None:
    """Each test case's reference: test_cases.jsonl's, else the per-case table's `target` column
    (a `pathkit score --out` folder); None when the run records neither."""
    if run.test_cases:
        return {i: row.get("reference") for i, row in run.test_cases.items()}
    table = run.per_case
    if table is not None and {"id", "target"} <= set(table.columns):
        return {str(r["id"]): r["target"] for r in table.select(["id", "target"]).iter_rows(named=True)}
    return None


def metric_of(run: Any, key: str) -> str:
    owners = [m for m, values in run.summary.items() if key in values]
    if not owners:
        known = sorted({k for values in run.summary.values() for k in values})
        raise PathkitError(f"{run.path}: no score {key!r} in metrics.json; it has {', '.join(known)}")
    return owners[0]


def paired_test(metric_cls: Any, key: str, columns: Sequence[str]) -> tuple[str, str] | None:
    """(test, per-case column) by which `key` of a metric is compared, or None when there are no
    per-case values of it."""
    declared = dict(metric_cls.paired_scores) if metric_cls is not None else {}
    if key in declared:
        test, column = declared[key]
        if test not in TESTS:
            raise PathkitError(f"metric {metric_cls.name!r}: paired test {test!r} of {key!r} is "
                               f"not one of {', '.join(TESTS)}")
        return (test, column) if all(c in columns for c in column.split(",")) else None
    return ("mean", key) if key in columns else None


def paired_values(run: Any, key: str, ids: Sequence[str], registry: Any = None) -> PairedValues:
    """The per-case values of summary `key` of `run` on the cases `ids`, as its metric declares."""
    import numpy as np

    from pathkit_core.evaluation.scores import metric_classes

    metric = metric_of(run, key)
    table = run.per_case
    columns = list(table.columns) if table is not None else []
    cls = metric_classes([metric], registry).get(metric)
    how = paired_test(cls, key, columns)
    if how is None or "id" not in columns:
        raise PathkitError(f"{run.path}: score {key!r} has no per-case values in per_case.parquet, so it cannot "
                           f"be compared case by case; per-case columns: {', '.join(c for c in columns if c != 'id')}")
    test, column = how
    wanted = {"id", "target", *column.split(",")}
    picked = table.select([c for c in wanted if c in columns])
    twice = picked["id"].cast(str).filter(picked["id"].cast(str).is_duplicated()).unique().sort().to_list()
    if twice:
        raise PathkitError(f"{run.path}: per_case.parquet holds {len(twice)} case id(s) more than once "
                           f"({_show(twice)}); the table is damaged")
    rows = {str(r["id"]): r for r in picked.iter_rows(named=True)}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise PathkitError(f"{run.path}: per_case.parquet lacks {len(missing)} test case(s) ({_show(missing)})")
    recorded = run.summary[metric][key]
    summary = math.nan if recorded is None else float(recorded)
    if test == "statistic":
        statistic = cls.paired_statistic(key) if hasattr(cls, "paired_statistic") else None
        if statistic is None:
            raise PathkitError(f"metric {metric!r} declares a paired statistic for {key!r} but gives none")
        values = np.asarray([[float(rows[i][c]) for c in column.split(",")] for i in ids], dtype=np.float64)
        return PairedValues(key, metric, test, column, values, None, summary, statistic)
    raw = [rows[i][column] for i in ids]
    if test == "auroc":
        if "target" not in columns:
            raise PathkitError(f"{run.path}: per_case.parquet has class probabilities but no 'target' column")
        try:
            values = np.asarray(raw, dtype=np.float64)
            labels = np.asarray([rows[i]["target"] for i in ids], dtype=np.int64)
        except (TypeError, ValueError):
            raise PathkitError(f"{run.path}: per_case.parquet's {column!r} or 'target' has a missing or ragged "
                               "value; the table is damaged") from None
        bad = ~np.isfinite(values).reshape(len(ids), -1).all(axis=1)
        if bad.any():
            raise PathkitError(f"{run.path}: per_case.parquet's {column!r} holds NaN or inf for {int(bad.sum())} "
                               f"case(s) ({_show([i for i, b in zip(ids, bad, strict=True) if b])}); AUROC "
                               "cannot be compared on them")
        return PairedValues(key, metric, test, column, values, labels, summary)
    values = np.asarray([math.nan if v is None else float(v) for v in raw], dtype=np.float64)
    return PairedValues(key, metric, test, column, values, None, summary)


def compare_values(a: PairedValues, b: PairedValues, *, n_resamples: int = 2000, seed: int = 0,
                   level: float = 0.95) -> Comparison:
    """The test `a.test` names on two runs' per-case values of one key (same cases, same order)."""
    import numpy as np

    from pathkit_bench.stats import delong_test, delong_test_ovr, mcnemar_exact, paired_bootstrap

    n = len(a.values)
    notes = []
    if a.test == "auroc":
        if a.values.ndim == 2 and a.values.shape[1] > 2:
            res = delong_test_ovr(a.values, b.values, a.labels, level)
            notes.append("DeLong, one-vs-rest macro")
        else:
            pa = a.values[:, 1] if a.values.ndim == 2 else a.values
            pb = b.values[:, 1] if b.values.ndim == 2 else b.values
            res = delong_test(pa, pb, a.labels == 1, level)
            notes.append("DeLong")
        return Comparison(a.key, a.metric, "DeLong", a.summary, b.summary, res.difference, res.ci_low, res.ci_high,
                          res.p_value, res.p_value, n, "; ".join(notes))
    if a.test == "statistic":
        boot = paired_bootstrap(a.values, b.values, statistic=a.statistic, n_resamples=n_resamples, seed=seed,
                                level=level)
        return Comparison(a.key, a.metric, "paired bootstrap", a.summary, b.summary, boot.difference, boot.ci_low,
                          boot.ci_high, boot.p_value, boot.p_value, boot.n_cases,
                          f"{a.key} recomputed on each resample of the cases ({a.column})")
    boot = paired_bootstrap(a.values, b.values, n_resamples=n_resamples, seed=seed, level=level)
    if boot.n_cases < n:
        notes.append(f"{n - boot.n_cases} case(s) without a value in A or B left out")
    if a.test == "correct":
        keep = ~(np.isnan(a.values) | np.isnan(b.values))
        mc = mcnemar_exact(a.values[keep] > 0.5, b.values[keep] > 0.5)
        notes.append(f"discordant cases: {mc.a_only} only A right, {mc.b_only} only B right")
        return Comparison(a.key, a.metric, "McNemar exact", a.summary, b.summary, boot.difference, boot.ci_low,
                          boot.ci_high, mc.p_value, mc.p_value, boot.n_cases, "; ".join(notes))
    for side, name in ((a, "A"), (b, "B")):
        mean = float(np.nanmean(side.values)) if np.isfinite(side.values).any() else math.nan
        if math.isfinite(side.summary) and math.isfinite(mean) and abs(mean - side.summary) > _SAME:
            notes.append(f"{name}'s {a.key} is corpus-level ({side.summary:.4f}); the test compares the mean "
                         f"per-case {a.column} ({mean:.4f})")
            break
    return Comparison(a.key, a.metric, "paired bootstrap", a.summary, b.summary, boot.difference, boot.ci_low,
                      boot.ci_high, boot.p_value, boot.p_value, boot.n_cases, "; ".join(notes))


def default_keys(a: Any, b: Any, registry: Any = None) -> list[str]:
    """The headline scores of the metrics both runs hold (every shared score when none declares one)."""
    from pathkit_core.evaluation.scores import metric_classes

    shared = [m for m in a.summary if m in b.summary]
    keys: list[str] = []
    for metric, cls in metric_classes(shared, registry).items():
        keys += [k for k in cls.headline_scores if k in a.summary[metric] and k in b.summary[metric] and k not in keys]
    return keys


def compare_each(chosen: Sequence[str], asked: Sequence[str], values: Callable[[str], Any],
                 compare: Callable[[str, Any], Comparison], what: str,
                 correction: str) -> tuple[list[Comparison], list[str]]:
    """(the comparisons of the chosen keys, p-values adjusted over them; the keys left out and why).
    A key whose `values(key)` cannot be read (a PathkitError) is left out, unless keys were
    `asked` for by name: then the error is raised; `compare(key, values)` makes its comparison."""
    from pathkit_bench.stats import adjust_pvalues

    out: list[Comparison] = []
    skipped: list[str] = []
    for key in chosen:
        try:
            found = values(key)
        except PathkitError as exc:
            if asked:  # asked for by name: say why not
                raise
            skipped.append(f"{key}: {exc}")
            continue
        out.append(compare(key, found))
    if not out:
        raise PathkitError(f"no score could be compared {what}: " + " | ".join(skipped))
    for c, p in zip(out, adjust_pvalues([c.p_value for c in out], correction), strict=True):
        c.p_adjusted = float(p)
    return out, skipped


def compare_runs(a: Any, b: Any, keys: Sequence[str] = (), *, n_resamples: int = 2000, seed: int = 0,
                 level: float = 0.95, correction: str = "holm",
                 registry: Any = None) -> tuple[list[Comparison], list[str]]:
    """Compare run folders `a` and `b` (RunFolder) on each key, p-values adjusted over the keys;
    with no keys, on the headline scores, leaving out (and listing) those without per-case values."""
    ids = same_test_cases(a, b)
    chosen = list(keys) or default_keys(a, b, registry)
    if not chosen:
        raise PathkitError(f"{a.path} and {b.path} share no score to compare; name one with --metric")

    def compare(key: str, values: tuple[PairedValues, PairedValues]) -> Comparison:
        va, vb = values
        if va.test != vb.test:
            raise PathkitError(f"{key}: A and B were scored by metrics that compare it differently ({va.test} vs "
                               f"{vb.test})")
        return compare_values(va, vb, n_resamples=n_resamples, seed=seed, level=level)

    out, skipped = compare_each(chosen, keys, lambda key: (paired_values(a, key, ids, registry),
                                                           paired_values(b, key, ids, registry)),
                                compare, "case by case", correction)
    for c in out:
        odd = [side for side, value in (("A", c.a), ("B", c.b)) if not math.isfinite(value)]
        if odd:
            c.note = "; ".join(filter(None, [c.note, f"{' and '.join(odd)}'s metrics.json records {c.key} as "
                                                     "NaN or inf; the difference is from the per-case values"]))
    return out, skipped


__all__ = ["Comparison", "PairedValues", "case_difference", "compare_each", "compare_runs", "compare_values",
           "default_keys", "paired_test", "paired_values", "same_test_cases", "test_case_ids"]
