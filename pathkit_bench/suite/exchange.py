"""A leaderboard two labs can merge: `pathkit bench --export FILE` writes a suite's tidy table with
every cell's identities, and `pathkit bench --merge A B` joins two such files, refusing the rows
whose protocol differs from the other file's for the same task and generator.

Identities of a cell (read from its run folder):

- `data_key`: the content key of the dataset's cases and split (`metrics.json`);
- `encoder_weights`: what the encoder's weights were (their sha256, or `random-init:seed=N`);
- `code_identity`: a hash of the distributions and versions of every plugin the run loaded;
- `protocol_hash`: a hash of everything but the encoder and the seed that decides a cell's score:
  the dataset and its options, the data key, the generator with its hyperparameters and training
  options, tile and selection settings, the metric and the score. Two rows of one task and
  generator are comparable only when it is equal.

docs/comparisons.md, "Export and merge".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError

IDENTITY_COLUMNS = ("data_key", "encoder_weights", "code_identity", "protocol_hash")
EXPORT_FORMAT = "pathkit.leaderboard-export"
# the run options that are the cell's own, not its protocol
CELL_OWN = ("encoder", "seed", "workdir", "dataset_root", "weights", "shard", "cpu", "frozen_from")


def cell_identity(run_dir: str | Path) -> dict[str, str]:
    """The identities of one cell's run folder (empty strings where the folder lacks them)."""
    from pathkit_core.readers import read_json_file
    from pathkit_core.workspace import content_hash

    run = Path(run_dir)
    metrics = read_json_file(run / "metrics.json", "run metrics") if (run / "metrics.json").is_file() else {}
    provenance = read_json_file(run / "provenance.json", "run provenance") if (run / "provenance.json").is_file() \
        else {}
    spec = {k: v for k, v in (metrics.get("run") or {}).items() if k not in CELL_OWN}
    weights = (metrics.get("provenance") or {}).get("weights") or []
    return {"data_key": str(metrics.get("data_key") or ""),
            "encoder_weights": ";".join(str(w) for w in weights),
            "code_identity": content_hash(provenance.get("plugins") or {}, 16) if provenance else "",
            "protocol": content_hash({"run": spec, "data_key": metrics.get("data_key"),
                                      "task": metrics.get("task")}, 16)}


def export_frame(folder: Path) -> Any:
    """The suite folder's tidy leaderboard with the identity columns of every row."""
    import polars as pl

    from pathkit_core.workspace import content_hash

    board = pl.read_parquet(Path(folder) / "leaderboard.parquet")
    cells = pl.read_csv(Path(folder) / "cells.csv", infer_schema_length=0)
    compare = {r["task"]: r.get("compare") or "" for r in cells.iter_rows(named=True)}
    board = board.with_columns(pl.col("task").replace_strict(compare, default="").alias("compare"))
    identities = {d: cell_identity(d) for d in board["run_dir"].unique().to_list() if d}
    rows = []
    for r in board.iter_rows(named=True):
        ident = identities.get(r["run_dir"], {})
        protocol = content_hash({"cell": ident.get("protocol", ""), "metric": r["metric"], "score": r["score"]}, 16)
        rows.append({**{k: ident.get(k, "") for k in IDENTITY_COLUMNS[:3]}, "protocol_hash": protocol})
    return pl.concat([board, pl.DataFrame(rows, schema={c: pl.Utf8 for c in IDENTITY_COLUMNS})], how="horizontal")


def write_export(folder: Path, path: Path) -> Path:
    """FILE (Parquet, or CSV when it ends in .csv): the suite's tidy table with every identity."""
    from pathkit_core.workspace import atomic_write_with

    frame = export_frame(folder)
    path = Path(path)
    return atomic_write_with(path, frame.write_csv if path.suffix.lower() == ".csv" else frame.write_parquet)


def read_export(path: Path) -> Any:
    """An export written by `write_export`, checked: its columns, one row per cell and score."""
    import polars as pl

    from pathkit_bench.suite.runner import TIDY_COLUMNS

    path = Path(path)
    if not path.is_file():
        raise PathkitError(f"{path}: no such export (write one with `pathkit bench --config SUITE --export FILE`)")
    try:
        frame = pl.read_csv(path, infer_schema_length=10000) if path.suffix.lower() == ".csv" else pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise PathkitError(f"{path}: not a readable leaderboard export ({exc})") from None
    missing = [c for c in (*TIDY_COLUMNS, *IDENTITY_COLUMNS) if c not in frame.columns]
    if missing:
        raise PathkitError(f"{path}: not a leaderboard export: column(s) {', '.join(missing)} missing")
    return frame


KEY = ["task", "encoder", "generator", "seed", "metric", "score"]


def merge_exports(a: Any, b: Any) -> tuple[Any, list[str]]:
    """(merged rows, refused rows described): B's rows are kept where A has no row of their task and
    generator, or A's rows of it share their protocol hash; a cell in both keeps A's row."""
    import polars as pl

    columns = [c for c in a.columns if c in b.columns]
    a, b = a.select(columns), b.select(columns).cast(dict(a.select(columns).schema), strict=False)
    protocols = {(r["task"], r["generator"], r["metric"], r["score"]): r["protocol_hash"]
                 for r in a.iter_rows(named=True)}
    refused, kept = [], []
    for r in b.iter_rows(named=True):
        theirs = protocols.get((r["task"], r["generator"], r["metric"], r["score"]))
        if theirs is not None and theirs != r["protocol_hash"]:
            refused.append(f"{r['task']}/{r['encoder']}/{r['generator']}/seed{r['seed']} {r['score']}")
        else:
            kept.append(r)
    extra = pl.DataFrame(kept, schema=a.schema) if kept else a.clear()
    merged = pl.concat([a, extra]).unique(subset=KEY, keep="first", maintain_order=True)
    return merged.sort(KEY), refused


def write_merged(frame: Any, folder: Path, name: str) -> Path:
    """A suite folder of the merged rows (leaderboard, cells.csv, suite.json) that `SuiteAnalysis`
    and `pathkit report` read like any suite's."""
    import polars as pl

    from pathkit_bench.suite.config import SuiteConfig
    from pathkit_bench.suite.runner import CELLS, LEADERBOARD, write_suite_options
    from pathkit_core.workspace import atomic_write_with

    folder.mkdir(parents=True, exist_ok=True)
    board = frame.with_columns(pl.lit(name).alias("suite"))
    atomic_write_with(folder / f"{LEADERBOARD}.parquet", board.write_parquet)
    atomic_write_with(folder / f"{LEADERBOARD}.csv", board.write_csv)
    compare = pl.col("compare").fill_null("") if "compare" in board.columns else pl.lit("")
    cells = board.unique(subset=["task", "encoder", "generator", "seed"], keep="first", maintain_order=True).select(
        "task", "dataset", "encoder", "generator", "seed", compare.alias("compare"), "run_dir",
        pl.lit(True).alias("reused"), pl.lit("").alias("error"))
    atomic_write_with(folder / f"{CELLS}.csv", cells.write_csv)
    write_suite_options(SuiteConfig(name, folder / "merged", ()), folder)
    return folder


__all__ = ["IDENTITY_COLUMNS", "cell_identity", "export_frame", "merge_exports", "read_export", "write_export",
           "write_merged"]
