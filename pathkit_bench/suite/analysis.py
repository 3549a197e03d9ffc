"""What a suite's leaderboard says: per task, every cell against every other on the same test cases
(paired: with one seed the case bootstrap, with several the seeds x cases inference of `stats.seeds`;
p-values adjusted over the task's table), and across
tasks, average ranks of the encoders and of the generators, Friedman's test, the Nemenyi critical
difference and win/tie/loss counts (docs/comparisons.md). Reads only the suite folder
(leaderboard.parquet, cells.csv) and the cells' run folders; the statistics are `pathkit_bench.stats`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pathkit_bench.compare_seeds import two_seeds_note
from pathkit_core.contracts import PathkitError
from pathkit_core.report.registry import UsesRegistry


@dataclass
class TaskComparison:
    """The pairwise comparison of a task's cells (encoder, generator) on its compared score."""

    task: str
    key: str
    direction: str
    cells: list[tuple[str, str]]
    seeds: list[int]
    seed_values: dict[tuple[str, str], dict[int, float]]  # the summary value of each cell per seed
    run_dirs: dict[tuple[str, str], dict[int, str]]
    test: str = ""
    result: Any = None  # stats.PairwiseBootstrap (one seed), stats.seeds.PairwiseSeeds (several), or None
    p_adjusted: Any = None  # (cells, cells)
    note: str = ""
    statistic: Any = None  # a corpus statistic's resample function (compared by `pairwise_bootstrap_statistic`)
    curve_of: str = ""  # the task whose curve this point is (few-shot: one comparison per k), "" for a task

    def mean(self, cell: tuple[str, str]) -> float:
        values = [v for v in self.seed_values.get(cell, {}).values() if v is not None and math.isfinite(v)]
        return sum(values) / len(values) if values else math.nan

    @property
    def sign(self) -> float:
        return -1.0 if self.direction == "lower" else 1.0

    def oriented(self):
        """Differences with "positive = row better", whatever the score's direction."""
        return None if self.result is None else self.sign * self.result.difference

    def best(self, alpha: float) -> int | None:
        """The cell significantly better than every other after correction, or None."""
        if self.result is None or len(self.cells) < 2:
            return None
        import numpy as np

        diff = self.oriented()
        top = int(np.argmax(self.sign * np.asarray(self.result.mean)))
        others = [j for j in range(len(self.cells)) if j != top]
        ok = all(diff[top, j] > 0 and self.p_adjusted[top, j] < alpha for j in others)
        return top if ok else None


@dataclass
class RankSummary:
    """Average ranks of one factor (encoders or generators) over the blocks of the other."""

    factor: str
    other: str
    names: list[str]
    blocks: list[tuple[str, str]]  # (task, the other factor's level)
    scores: Any  # (blocks, names), oriented: higher is better
    average_ranks: Any = None
    friedman: Any = None
    cd: float = math.nan
    cliques: list[list[int]] = field(default_factory=list)
    wins: Any = None
    ties: Any = None
    losses: Any = None


def _paired_data(task: TaskComparison, registry: Any) -> tuple[str, Any, Any]:
    """(kind, values, labels) of every cell and seed: (seeds, cases, cells[, classes])."""
    import numpy as np

    from pathkit_bench.compare import case_difference, paired_values, test_case_ids
    from pathkit_core.report.run_folder import RunFolder

    ids: list[str] | None = None
    first_cell = None
    per_seed: list[list[Any]] = []
    kind, labels = "", None
    for seed in task.seeds:
        row = []
        for cell in task.cells:
            run = RunFolder(task.run_dirs[cell][seed], registry)
            cell_ids = test_case_ids(run)
            if ids is None:
                ids, first_cell = cell_ids, cell
            elif set(cell_ids) != set(ids):
                differ = case_difference(ids, cell_ids, "/".join(first_cell), f"{'/'.join(cell)} (seed {seed})")
                raise PathkitError(f"the cells were scored on different test cases: {differ}")
            values = paired_values(run, task.key, ids, registry)
            kind, task.statistic = values.test, values.statistic
            if values.labels is not None:
                if labels is not None and not np.array_equal(labels, values.labels):
                    raise PathkitError(f"{run.path}: its per-case classes differ from another cell's")
                labels = values.labels
            row.append(values.values)
        per_seed.append(row)
    # (seeds, cells, cases[, classes or columns]) -> (seeds, cases, cells[, classes or columns])
    stacked = np.asarray(per_seed, dtype=np.float64)
    return kind, np.moveaxis(stacked, 1, 2), labels


TWO_SEEDS = two_seeds_note("cells")


def _compare(kind: str, values: Any, labels: Any, n_seeds: int, *, level: float, resamples: int,
             seed: int, statistic: Any = None) -> tuple[Any, str]:
    """(result, the test's words): the two-way bootstrap with one seed, the seeds x cases inference
    (`stats.seeds`) with several; a corpus statistic (C-index, kappa) by the two-way bootstrap
    recomputing it per resample, whatever the seeds."""
    from pathkit_bench.stats import pairwise_bootstrap, pairwise_bootstrap_auroc, pairwise_bootstrap_statistic
    from pathkit_bench.stats.seeds import pairwise_seeds, pairwise_seeds_auroc

    if kind == "statistic":
        return (pairwise_bootstrap_statistic(values, statistic, resamples, seed, level),
                "paired bootstrap of the statistic recomputed per resample (seeds x cases)")
    if n_seeds > 1:
        if kind == "auroc":
            return (pairwise_seeds_auroc(values, labels, level),
                    "seeds x cases variance terms of AUROC (DeLong components), generalized p")
        return pairwise_seeds(values, level), "seeds x cases variance terms of the mean per-case score, generalized p"
    if kind == "auroc":
        return (pairwise_bootstrap_auroc(values, labels, resamples, seed, level),
                "paired bootstrap of AUROC recomputed per resample (seeds x cases)")
    return (pairwise_bootstrap(values, resamples, seed, level),
            "paired bootstrap of the mean per-case score (seeds x cases)")


def compare_task(task: TaskComparison, *, correction: str, level: float, resamples: int, seed: int = 0,
                 registry: Any = None) -> TaskComparison:
    """Fill in the task's pairwise comparison (or its note saying why there is none)."""
    import numpy as np

    from pathkit_bench.stats import adjust_pvalues

    if len(task.cells) < 2:
        task.note = "one cell: nothing to compare"
        return task
    if not task.seeds:  # e.g. one seed failed per generator: no seed has every cell's result
        task.note = "not compared: no seed has a result of every cell"
        return task
    try:
        kind, values, labels = _paired_data(task, registry)
        task.result, task.test = _compare(kind, values, labels, values.shape[0], level=level, resamples=resamples,
                                          seed=seed, statistic=task.statistic)
    except PathkitError as exc:
        task.note = f"not compared: {exc}"
        return task
    if task.result.n_seeds == 2:
        task.note = TWO_SEEDS
    m = len(task.cells)
    upper = np.triu_indices(m, 1)
    adjusted = np.ones((m, m))
    adjusted[upper] = adjust_pvalues(task.result.p_value[upper], correction)
    adjusted.T[upper] = adjusted[upper]
    task.p_adjusted = adjusted
    return task


def check_suite_version(folder: Path) -> int:
    """The format version of a suite folder (its suite.json; none: written by pathkit 0.1.0, version 1),
    or a one-line PathkitError naming it when this pathkit does not read it."""
    from pathkit_bench.leaderboard import CELLS_VERSION, LEADERBOARD_VERSION, SUITE_FILE, SUITE_FORMAT, SUITE_VERSION
    from pathkit_core.formats import check_version
    from pathkit_core.report.run_folder import read_json

    record = read_json(folder / SUITE_FILE) if (folder / SUITE_FILE).is_file() else {}
    if not isinstance(record, dict) or record.get("format", SUITE_FORMAT) != SUITE_FORMAT:
        raise PathkitError(f"{folder / SUITE_FILE} is not a pathkit suite record (format {SUITE_FORMAT!r})")
    redo = "pathkit bench --config SUITE.toml --workdir NEW_WORKDIR"
    version = check_version(record.get("format_version"), what="suite folder", path=folder / SUITE_FILE,
                            current=SUITE_VERSION, redo=redo)
    formats = record.get("formats") or {}  # the CSVs' versions (none before they were recorded: 1)
    current = {"leaderboard.csv": LEADERBOARD_VERSION, "cells.csv": CELLS_VERSION}
    if not isinstance(formats, dict):
        raise PathkitError(f"{folder / SUITE_FILE}: its formats record is a {type(formats).__name__}, not an object")
    for name, found in formats.items():
        if name in current:
            check_version(found, what=name, path=folder / name, current=current[name], redo=redo)
    return version


class SuiteAnalysis(UsesRegistry):
    """The suite folder read back: tidy leaderboard, cells, per-task comparisons, ranks across tasks."""

    def __init__(self, folder: str | Path, *, correction: str = "holm", alpha: float = 0.05, level: float = 0.95,
                 resamples: int = 2000, registry: Any = None) -> None:
        self.folder = Path(folder)
        board = self.folder / "leaderboard.parquet"
        if not board.is_file():
            raise PathkitError(f"{self.folder} holds no suite leaderboard (leaderboard.parquet); run "
                               "`pathkit bench --config SUITE.toml` first")
        check_suite_version(self.folder)
        self.correction, self.alpha, self.level, self.resamples = correction, alpha, level, resamples
        self._registry = registry
        self.figures: Any = None  # the report's FigureWriter, while a report is written

    @cached_property
    def frame(self) -> Any:

        from pathkit_bench.report.matrix import read_leaderboard

        return read_leaderboard(self.folder / "leaderboard.parquet")

    @cached_property
    def cells(self) -> Any:
        import polars as pl

        return pl.read_csv(self.folder / "cells.csv", infer_schema_length=0).with_columns(
            pl.col("seed").cast(pl.Int64))

    @cached_property
    def name(self) -> str:
        return str(self.frame["suite"][0]) if self.frame.height else self.folder.name

    def compared_key(self, task: str) -> str | None:
        """The score a task is compared and ranked on: the suite's `compare`, else the first headline
        score of its metrics that has per-case values."""
        from pathkit_bench.compare import paired_test
        from pathkit_core.evaluation.scores import metric_classes
        from pathkit_core.report.run_folder import RunFolder

        rows = self.cells.filter(self.cells["task"] == task)
        chosen = next((c for c in rows["compare"].to_list() if c), None)
        if chosen:
            return str(chosen)
        frame = self.frame.filter(self.frame["task"] == task)
        if not frame.height:
            return None
        run = RunFolder(frame["run_dir"][0], self.registry)
        columns = list(run.per_case.columns) if run.per_case is not None else []
        for metric, cls in metric_classes(list(run.summary), self.registry).items():
            for key in cls.headline_scores:
                if key in run.summary[metric] and paired_test(cls, key, columns):
                    return key
        headline = [k for m, cls in metric_classes(list(run.summary), self.registry).items()
                    for k in cls.headline_scores if k in run.summary[m]]
        return headline[0] if headline else None

    def curve_keys(self, task: str, key: str) -> list[str]:
        """The other points of a curve the compared score belongs to (the few-shot metric's
        accuracy at every k: its `curve_scores`), which the task's cells scored; [] for most metrics."""
        from pathkit_core.evaluation.scores import metric_classes

        rows = self.frame.filter((self.frame["task"] == task) & (self.frame["score"] == key))
        if not rows.height:
            return []
        metric = str(rows["metric"][0])
        cls = metric_classes([metric], self.registry).get(metric)
        curve = tuple(getattr(cls, "curve_scores", ()) or ())
        if key not in curve:
            return []
        held = set(self.frame.filter(self.frame["task"] == task)["score"].to_list())
        return [k for k in curve if k != key and k in held]

    def _comparison(self, task: str, key: str, label: str) -> TaskComparison | None:
        rows = self.frame.filter((self.frame["task"] == task) & (self.frame["score"] == key))
        if not rows.height:
            return None
        cells = sorted({(r["encoder"], r["generator"]) for r in rows.iter_rows(named=True)})
        values: dict[tuple[str, str], dict[int, float]] = {}
        dirs: dict[tuple[str, str], dict[int, str]] = {}
        for r in rows.iter_rows(named=True):
            values.setdefault((r["encoder"], r["generator"]), {})[int(r["seed"])] = r["value"]
            dirs.setdefault((r["encoder"], r["generator"]), {})[int(r["seed"])] = r["run_dir"]
        seeds = sorted(set.intersection(*(set(v) for v in dirs.values())))
        comparison = TaskComparison(label, key, str(rows["direction"][0] or "higher"), cells, seeds, values, dirs)
        comparison.curve_of = task if label != task else ""
        return compare_task(comparison, correction=self.correction, level=self.level, resamples=self.resamples,
                            registry=self.registry)

    @cached_property
    def tasks(self) -> list[TaskComparison]:
        """One comparison per task on its compared score; a curve's other points (few-shot: every k)
        each get their own, labelled `<task> <score>`, left out of the ranks across tasks."""
        out = []
        for task in self.frame["task"].unique(maintain_order=True).to_list():
            key = self.compared_key(task)
            if key is None:
                continue
            for label, score in ((task, key), *((f"{task} {k}", k) for k in self.curve_keys(task, key))):
                comparison = self._comparison(task, score, label)
                if comparison is not None:
                    out.append(comparison)
        return out

    def ranks(self, factor: str) -> RankSummary | None:
        """Average ranks of the encoders ("encoder") or generators ("generator") over complete blocks
        (task x a level of the other factor in which every one of them has a score)."""
        import numpy as np

        from pathkit_bench.stats import average_ranks, cd_cliques, friedman_test, nemenyi_cd, win_tie_loss

        other = "generator" if factor == "encoder" else "encoder"
        pick = 0 if factor == "encoder" else 1
        names = sorted({cell[pick] for t in self.tasks for cell in t.cells})
        if len(names) < 2:
            return None
        blocks, scores, diffs, pvals = [], [], [], []
        for t in self.tasks:
            if t.curve_of:  # a curve counts once across tasks, by its compared score
                continue
            levels = sorted({cell[1 - pick] for cell in t.cells})
            for level in levels:
                members = [(n, level) if factor == "encoder" else (level, n) for n in names]
                if not all(c in t.cells for c in members):
                    continue
                row = [t.sign * t.mean(c) for c in members]
                if not all(math.isfinite(v) for v in row):
                    continue
                blocks.append((t.task, level))
                scores.append(row)
                idx = [t.cells.index(c) for c in members]
                if t.result is not None:
                    diffs.append(t.oriented()[np.ix_(idx, idx)])
                    pvals.append(t.p_adjusted[np.ix_(idx, idx)])
        if not blocks:
            return None
        x = np.asarray(scores)
        summary = RankSummary(factor, other, names, blocks, x, average_ranks(x))
        summary.friedman = friedman_test(x)
        summary.cd = nemenyi_cd(len(names), len(blocks), self.alpha)
        summary.cliques = cd_cliques(summary.average_ranks, summary.cd)
        if diffs:
            summary.wins, summary.ties, summary.losses = win_tie_loss(np.asarray(diffs), np.asarray(pvals),
                                                                      self.alpha)
        return summary

    # ------------------------------------------------------------------ tables

    def comparison_rows(self) -> list[dict[str, Any]]:
        """Every pair of cells of every task; with several seeds `p_empirical` is empty (no resamples) and
        the standard error and its terms follow (`stats.seeds`)."""
        rows = []
        for t in self.tasks:
            if t.result is None:
                continue
            m = len(t.cells)
            rows += [self._comparison_row(t, i, j) for i in range(m) for j in range(i + 1, m)]
        return rows

    def _comparison_row(self, t: TaskComparison, i: int, j: int) -> dict[str, Any]:
        a, b, r = t.cells[i], t.cells[j], t.result
        empirical = getattr(r, "p_empirical", None)
        row = {"task": t.task, "score": t.key, "encoder_a": a[0], "generator_a": a[1], "encoder_b": b[0],
               "generator_b": b[1], "difference": float(r.difference[i, j]), "ci_low": float(r.diff_low[i, j]),
               "ci_high": float(r.diff_high[i, j]), "p_value": float(r.p_value[i, j]),
               "p_empirical": float(empirical[i, j]) if empirical is not None else None,
               "p_adjusted": float(t.p_adjusted[i, j]), "correction": self.correction, "test": t.test,
               "n_cases": r.n_cases, "n_seeds": r.n_seeds}
        if hasattr(r, "var_seeds"):
            row.update({"se": float(r.se[i, j]), "var_cases": float(r.var_cases[i, j]),
                        "var_seeds": float(r.var_seeds[i, j]), "var_interaction": float(r.var_interaction[i, j])})
        return row

    def headline_rows(self) -> list[dict[str, Any]]:
        """Per task and cell: the compared score's mean ± sd over seeds, the seeds x cases interval,
        and whether it is the task's significantly best cell."""
        import statistics

        rows = []
        for t in self.tasks:
            best = t.best(self.alpha)
            for i, cell in enumerate(t.cells):
                per_seed = [v for v in t.seed_values[cell].values() if v is not None]
                rows.append({"task": t.task, "score": t.key, "direction": t.direction, "encoder": cell[0],
                             "generator": cell[1], "mean": t.mean(cell),
                             "sd": statistics.stdev(per_seed) if len(per_seed) > 1 else None,
                             "ci_low": float(t.result.ci_low[i]) if t.result is not None else None,
                             "ci_high": float(t.result.ci_high[i]) if t.result is not None else None,
                             "seeds": len(per_seed), "per_seed": "; ".join(f"{v:.4f}" for v in per_seed),
                             "best": best == i})
                if t.result is not None and t.result.n_seeds > 1:  # one seed: the table as it always was
                    rows[-1]["note"] = TWO_SEEDS if t.result.n_seeds == 2 else ""
        return rows

    def seed_rows(self) -> list[dict[str, Any]]:
        return [{"task": t.task, "score": t.key, "encoder": c[0], "generator": c[1], "seed": s, "value": v,
                 "run_dir": t.run_dirs[c].get(s)}
                for t in self.tasks for c in t.cells for s, v in sorted(t.seed_values[c].items())]

    def rank_rows(self, summary: RankSummary) -> list[dict[str, Any]]:
        n = len(summary.blocks)
        return [{summary.factor: name, "average_rank": float(summary.average_ranks[k]),
                 "rank_sum": float(summary.average_ranks[k]) * n, "blocks": n, "critical_difference": summary.cd}
                for k, name in enumerate(summary.names)]

    def write_tables(self) -> list[Path]:
        """comparisons.csv, headline.csv, seeds.csv, ranks_<factor>.csv, win_tie_loss_<factor>.csv."""
        import polars as pl

        from pathkit_core.workspace import atomic_write_with

        written = []

        def put(name: str, rows: list[dict[str, Any]]) -> None:
            path = self.folder / f"{name}.csv"
            atomic_write_with(path, pl.DataFrame(rows, infer_schema_length=None).write_csv)
            written.append(path)

        put("comparisons", self.comparison_rows())
        put("headline", self.headline_rows())
        put("seeds", self.seed_rows())
        for factor in ("encoder", "generator"):
            summary = self.ranks(factor)
            if summary is None:
                continue
            put(f"ranks_{factor}", self.rank_rows(summary))
            if summary.wins is not None:
                put(f"win_tie_loss_{factor}", wtl_rows(summary))
        return written


def wtl_rows(summary: RankSummary) -> list[dict[str, Any]]:
    return [{"row": a, "column": b, "wins": int(summary.wins[i, j]), "ties": int(summary.ties[i, j]),
             "losses": int(summary.losses[i, j])}
            for i, a in enumerate(summary.names) for j, b in enumerate(summary.names) if i != j]


__all__ = ["TWO_SEEDS", "RankSummary", "SuiteAnalysis", "TaskComparison", "check_suite_version", "compare_task",
           "wtl_rows"]
