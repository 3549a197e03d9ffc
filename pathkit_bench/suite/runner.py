"""Running a suite's cells through `run_pipeline` and writing its tidy leaderboard.

Every cell is an ordinary run (`pathkit_core.run.run_pipeline(RunSpec)`): its folder, stage markers
and resume are the run's own, so a rerun reuses every finished cell, and tiles and features live in
the workspace's stores (keyed by slide and encoder), so a slide two tasks share is tiled and
extracted once. `--shard i/N` runs the cells whose label hashes to shard i (`pathkit_core.shard`);
a last run without a shard finds them finished and writes the leaderboard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathkit_bench.suite.config import Cell, SuiteConfig
from pathkit_core.contracts import PathkitError

LEADERBOARD = "leaderboard"
CELLS = "cells"
# The tidy leaderboard: one row per task x encoder x generator x seed x score.
TIDY_COLUMNS = ("suite", "task", "dataset", "encoder", "generator", "seed", "metric", "score", "value", "ci_low",
                "ci_high", "direction", "run_dir")


@dataclass
class CellResult:
    cell: Cell
    run_dir: Path | None
    summary: dict[str, dict[str, float]] = field(default_factory=dict)
    reused: bool = False
    error: str = ""


def suite_folder(workdir: Path, config: SuiteConfig) -> Path:
    return Path(workdir) / "suites" / config.name


def run_cells(config: SuiteConfig, workdir: Path, *, shard: str | None = None, overrides: dict[str, Any] | None = None,
              log: Callable[[str], None] = print) -> tuple[list[CellResult], bool]:
    """Run (or reuse) the cells of this process's shard; (results, whether every cell was this shard's)."""
    from pathkit_core.run import RunSpec, run_pipeline
    from pathkit_core.shard import current_shard

    cells = config.cells()
    outer = current_shard(shard).outer()
    mine = outer.select(cells, key=lambda c: c.label)
    if not outer.whole:
        log(f"{outer.label()}: {len(mine)} of {len(cells)} cell(s)")
    results: list[CellResult] = []
    for k, cell in enumerate(mine, start=1):
        log(f"[{k}/{len(mine)}] {cell.label}")
        try:
            spec = RunSpec.from_mapping({**cell.run_values(Path(workdir)), **(overrides or {})})
            result = run_pipeline(spec, log=log)
        except PathkitError as exc:
            log(f"cell {cell.label} failed: {exc}")
            results.append(CellResult(cell, None, error=str(exc)))
            continue
        results.append(CellResult(cell, result.run_dir, result.summary, "score" in result.resumed_stages))
    return results, outer.whole


def tidy_rows(config: SuiteConfig, results: list[CellResult], registry: Any = None) -> list[dict[str, Any]]:
    """One row per cell and summary score, its CI bounds (when the metric gives them) beside it."""
    from pathkit_core.evaluation.scores import CI_SUFFIXES, metric_classes
    from pathkit_core.evaluation.scores import finite_number as number

    rows = []
    names = sorted({m for r in results for m in r.summary})
    classes = metric_classes(names, registry)
    for r in results:
        if r.run_dir is None:
            continue
        for metric, values in r.summary.items():
            cls = classes.get(metric)
            for key, value in values.items():
                if key.endswith(CI_SUFFIXES):
                    continue
                low, high = values.get(f"{key}_ci_low"), values.get(f"{key}_ci_high")
                rows.append({"suite": config.name, "task": r.cell.task.name, "dataset": r.cell.task.dataset,
                             "encoder": r.cell.encoder, "generator": r.cell.generator, "seed": r.cell.seed,
                             "metric": metric, "score": key, "value": number(value), "ci_low": number(low),
                             "ci_high": number(high), "direction": cls.direction(key) if cls else "higher",
                             "run_dir": str(r.run_dir)})
    return rows


def write_leaderboard(config: SuiteConfig, results: list[CellResult], folder: Path, registry: Any = None) -> Path:
    """`<folder>/leaderboard.parquet|csv` (tidy scores), `cells.csv` (one row per cell, its folder) and
    `suite.json` (the folder's format and version, docs/file-formats.md)."""
    import polars as pl

    from pathkit_core.formats import SUITE_FILE, SUITE_FORMAT, SUITE_VERSION
    from pathkit_core.workspace import atomic_write_json, atomic_write_with

    schema = {"suite": pl.Utf8, "task": pl.Utf8, "dataset": pl.Utf8, "encoder": pl.Utf8, "generator": pl.Utf8,
              "seed": pl.Int64, "metric": pl.Utf8, "score": pl.Utf8, "value": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "direction": pl.Utf8, "run_dir": pl.Utf8}
    board = pl.DataFrame(tidy_rows(config, results, registry), schema=schema)
    atomic_write_with(folder / f"{LEADERBOARD}.parquet", board.write_parquet)
    atomic_write_with(folder / f"{LEADERBOARD}.csv", board.write_csv)
    cells = pl.DataFrame([{"task": r.cell.task.name, "dataset": r.cell.task.dataset, "encoder": r.cell.encoder,
                           "generator": r.cell.generator, "seed": r.cell.seed,
                           "compare": r.cell.task.compare or "", "run_dir": str(r.run_dir or ""),
                           "reused": r.reused, "error": r.error} for r in results],
                         schema={"task": pl.Utf8, "dataset": pl.Utf8, "encoder": pl.Utf8, "generator": pl.Utf8,
                                 "seed": pl.Int64, "compare": pl.Utf8, "run_dir": pl.Utf8, "reused": pl.Boolean,
                                 "error": pl.Utf8})
    atomic_write_with(folder / f"{CELLS}.csv", cells.write_csv)
    atomic_write_json(folder / SUITE_FILE, {"format": SUITE_FORMAT, "format_version": SUITE_VERSION,
                                            "suite": config.name})
    return folder


__all__ = ["CELLS", "LEADERBOARD", "TIDY_COLUMNS", "CellResult", "run_cells", "suite_folder", "tidy_rows",
           "write_leaderboard"]
