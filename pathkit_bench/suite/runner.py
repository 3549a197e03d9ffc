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

from rich.markup import escape

from pathkit_bench.leaderboard import SUITE_FILE
from pathkit_bench.suite.config import Cell, SuiteConfig
from pathkit_core.contracts import PathkitError

LEADERBOARD = "leaderboard"
CELLS = "cells"
# The tidy leaderboard: one row per task x encoder x generator x seed x score.
TIDY_COLUMNS = ("suite", "task", "dataset", "encoder", "generator", "seed", "metric", "score", "value", "ci_low",
                "ci_high", "direction", "run_dir")
# What each cell cost (its run folder's cost.json, `pathkit_core.run.cost`), repeated on its rows.
STAGE_NAMES = ("dataset", "features", "fit", "predict", "score", "report")
COST_COLUMNS = ("device", "wall_seconds", *(f"{s}_seconds" for s in STAGE_NAMES), "n_tiles", "tiles_per_second",
                "peak_host_memory_mb", "peak_gpu_memory_mb")


@dataclass
class CellResult:
    cell: Cell
    run_dir: Path | None
    summary: dict[str, dict[str, float]] = field(default_factory=dict)
    reused: bool = False
    error: str = ""


def suite_folder(workdir: Path, config: SuiteConfig) -> Path:
    """`<workdir>/suites/<name>`; a name that would leave `<workdir>/suites` is refused."""
    from pathkit_core.workspace import confined

    return confined(Path(workdir) / "suites", config.name, what=f"{config.path}: suite name")


SUITE_LOCK = ".suite.lock"


def suite_lock(folder: Path) -> Any:
    """The lock a whole (unsharded) run of the suite holds while it runs cells and writes the
    leaderboard: a second whole run of one suite is refused at once, naming the holder, instead
    of racing the first for its cells and its leaderboard (shards share the folder freely)."""
    from pathkit_core.workspace import FileLock

    return FileLock(Path(folder) / SUITE_LOCK, timeout=0)


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
        log(escape(f"[{k}/{len(mine)}] {cell.label}"))  # the label quotes the suite's names
        try:
            spec = RunSpec.from_mapping({**cell.run_values(Path(workdir)), **(overrides or {})})
            result = run_pipeline(spec, log=log)
        except PathkitError as exc:
            log(escape(f"cell {cell.label} failed: {exc}"))
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
        spent = cost_row(r.run_dir)
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
                             "run_dir": str(r.run_dir), **spent})
    return rows


def cost_row(run_dir: Path) -> dict[str, Any]:
    """The cost columns of one cell (None where its run folder has no cost record)."""
    from pathkit_core.run.cost import read_cost

    found = read_cost(run_dir)
    stages = found.get("stages") or {}
    row: dict[str, Any] = {c: found.get(c) for c in COST_COLUMNS}
    row.update({f"{s}_seconds": stages.get(s) for s in STAGE_NAMES})
    return row


def write_leaderboard(config: SuiteConfig, results: list[CellResult], folder: Path, registry: Any = None) -> Path:
    """`<folder>/leaderboard.parquet|csv` (tidy scores), `cells.csv` (one row per cell, its folder) and
    `suite.json` (the folder's format and version, docs/file-formats.md)."""
    import polars as pl

    from pathkit_core.workspace import atomic_write_with

    schema = {"suite": pl.Utf8, "task": pl.Utf8, "dataset": pl.Utf8, "encoder": pl.Utf8, "generator": pl.Utf8,
              "seed": pl.Int64, "metric": pl.Utf8, "score": pl.Utf8, "value": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "direction": pl.Utf8, "run_dir": pl.Utf8,
              **{c: pl.Utf8 if c == "device" else pl.Int64 if c == "n_tiles" else pl.Float64 for c in COST_COLUMNS}}
    from pathkit_bench.leaderboard import LEADERBOARD_FORMAT, LEADERBOARD_VERSION, parquet_version_metadata

    board = pl.DataFrame(tidy_rows(config, results, registry), schema=schema)
    version = parquet_version_metadata(LEADERBOARD_FORMAT, LEADERBOARD_VERSION)
    atomic_write_with(folder / f"{LEADERBOARD}.parquet", lambda p: board.write_parquet(p, metadata=version))
    atomic_write_with(folder / f"{LEADERBOARD}.csv", board.write_csv)
    cells = pl.DataFrame([{"task": r.cell.task.name, "dataset": r.cell.task.dataset, "encoder": r.cell.encoder,
                           "generator": r.cell.generator, "seed": r.cell.seed,
                           "compare": r.cell.task.compare or "", "run_dir": str(r.run_dir or ""),
                           "reused": r.reused, "error": r.error} for r in results],
                         schema={"task": pl.Utf8, "dataset": pl.Utf8, "encoder": pl.Utf8, "generator": pl.Utf8,
                                 "seed": pl.Int64, "compare": pl.Utf8, "run_dir": pl.Utf8, "reused": pl.Boolean,
                                 "error": pl.Utf8})
    atomic_write_with(folder / f"{CELLS}.csv", cells.write_csv)
    write_suite_options(config, folder)
    return folder


SUITE_OPTIONS = SUITE_FILE


def write_suite_options(config: SuiteConfig, folder: Path) -> Path:
    """`suite.json`: the folder's format and version (docs/file-formats.md) and the statistics
    options the suite's comparisons and report use, so that `pathkit report <suite folder>`
    rebuilds the same suite report from the folder alone."""
    from pathkit_bench.leaderboard import CELLS_VERSION, LEADERBOARD_VERSION, SUITE_FORMAT, SUITE_VERSION
    from pathkit_core.workspace import atomic_write_json

    return atomic_write_json(folder / SUITE_OPTIONS, {"format": SUITE_FORMAT, "format_version": SUITE_VERSION,
                                                      "formats": {f"{LEADERBOARD}.csv": LEADERBOARD_VERSION,
                                                                  f"{CELLS}.csv": CELLS_VERSION},
                                                      "suite": config.name,
                                                      "name": config.name, "config": str(config.path),
                                                      "correction": config.correction, "alpha": config.alpha,
                                                      "level": config.level, "resamples": config.resamples,
                                                      "reference_scores": [dict(r) for r in config.reference_scores],
                                                      "baselines": list(config.baselines)})


def is_suite_folder(path: Path) -> bool:
    """A folder `pathkit bench` wrote (its tidy leaderboard beside cells.csv)."""
    return (Path(path) / f"{LEADERBOARD}.parquet").is_file() and (Path(path) / f"{CELLS}.csv").is_file()


def read_suite_options(folder: Path) -> dict[str, Any]:
    """The options `write_suite_options` recorded, checked against the suite schema's rules; a
    folder without them (written before they were recorded) or with damaged ones is refused, so
    a report is never rebuilt with options the suite did not use."""
    from pathkit_bench.suite.schema import check_statistics_options
    from pathkit_core.readers import read_json_file

    path = Path(folder) / SUITE_OPTIONS
    if not path.exists():
        raise PathkitError(f"{folder} is a suite folder without {SUITE_OPTIONS} (the options its comparisons "
                           "used); rebuild its report with `pathkit bench --config SUITE.toml --report-only`")
    found = read_json_file(path, "suite options record")
    options = {k: found.get(k) for k in ("correction", "alpha", "level", "resamples")}
    return dict(check_statistics_options(str(path), **options))


__all__ = ["COST_COLUMNS", "CELLS",
           "LEADERBOARD", "SUITE_LOCK", "SUITE_OPTIONS", "is_suite_folder", "read_suite_options",
           "suite_lock", "write_suite_options", "TIDY_COLUMNS", "CellResult", "run_cells", "suite_folder", "tidy_rows",
           "write_leaderboard"]
