"""Leaderboards over benchmark cells and the paper-style summary views (per generator, per encoder)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core.evaluation.scores import CI_SUFFIXES as _CI_SUFFIXES
from pathkit_core.evaluation.scores import format_bounds

CELL_COLUMNS = ("dataset", "encoder", "generator", "run_dir")

# The format versions of a suite folder and of the leaderboards (docs/file-formats.md, "Format versions").
SUITE_FORMAT = "pathkit.suite"
SUITE_VERSION = 1
SUITE_FILE = "suite.json"
# leaderboard.parquet (of a suite folder and of `<workdir>/leaderboards/<dataset>/`): its version in
# the Parquet metadata under this key; leaderboard.csv and cells.csv are versioned by the suite
# folder's suite.json ("formats"), a CSV having no room for metadata.
LEADERBOARD_FORMAT = "pathkit.leaderboard"
LEADERBOARD_VERSION = 1
CELLS_VERSION = 1


def parquet_version_metadata(fmt: str, version: int) -> dict[str, str]:
    """The Parquet key-value metadata that records a table's format and version."""
    return {fmt: json.dumps({"format": fmt, "format_version": version})}


def read_versioned_parquet(path: str | Path, what: str, *, key: str, current: int, redo: str) -> Any:
    """`pathkit_core.readers.read_parquet_file`, and the format version recorded under `key` in its
    Parquet metadata (none: pathkit 0.1.0's, version 1) checked (`pathkit_core.formats.check_version`)."""
    import polars as pl

    from pathkit_core.formats import check_version
    from pathkit_core.readers import DamagedFile, read_parquet_file

    frame = read_parquet_file(path, what)
    raw = (pl.read_parquet_metadata(path) or {}).get(key)
    found = None
    if raw is not None:
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            record = None
        if not isinstance(record, dict):
            raise DamagedFile(path, f"holds damaged {key} metadata (not a JSON object)")
        found = record.get("format_version")
    check_version(found, what=what, path=path, current=current, redo=redo)
    return frame


def score_columns(summary: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """(metric, key, column) of every summary score: the column is the key, or `metric:key` when
    an earlier metric (or a cell column) already has that name."""
    taken, out = set(CELL_COLUMNS), []
    for metric, values in summary.items():
        for key in values:
            column = key if key not in taken else f"{metric}:{key}"
            taken.add(column)
            out.append((metric, key, column))
    return out


def leaderboard_frame(results: Sequence[tuple[str, str, Any]], dataset: str):
    """One row per (encoder, generator) cell with every summary score as a column."""
    import polars as pl

    rows = []
    for encoder, generator, result in results:
        row: dict[str, Any] = {"dataset": dataset, "encoder": encoder, "generator": generator,
                               "run_dir": str(result.run_dir)}
        for metric, key, column in score_columns(result.summary):
            row[column] = float(result.summary[metric][key])
        rows.append(row)
    return pl.DataFrame(rows)


def headline_scores(metric_names: Sequence[str]) -> list[str]:
    """The summary keys the given metrics declare as their headline (`Metric.headline_scores`)."""
    from pathkit_core.plugins import get_plugin_manager

    registry = get_plugin_manager()
    out: list[str] = []
    for name in metric_names:
        for key in registry.get("metric", name).headline_scores:
            if key not in out:
                out.append(key)
    return out


def headline_columns(columns: Sequence[str], key: str, headline: Sequence[str] = ()) -> list[str]:
    """The metrics' headline columns when present, else every point score (no CI or sd columns)."""
    chosen = [c for c in headline if c in columns]
    return chosen or [c for c in columns
                      if c not in (key, "cells") and not c.endswith(("_sd", *_CI_SUFFIXES))]


def with_ci(row: dict[str, Any], col: str) -> str:
    value, low, high = row.get(col), row.get(f"{col}_ci_low"), row.get(f"{col}_ci_high")
    if value is None:
        return ""
    return f"{value:.4f}{format_bounds(low, high)}"


def summary_view(board, by: str):
    """Mean (and standard deviation across the other axis) of every score, grouped by `by`."""
    import polars as pl

    score_cols = [c for c, t in board.schema.items() if t.is_numeric()]
    point_cols = [c for c in score_cols if not c.endswith(_CI_SUFFIXES)]
    aggs = [pl.col(c).mean().alias(c) for c in score_cols]
    aggs += [pl.col(c).std().alias(f"{c}_sd") for c in point_cols]
    aggs.append(pl.len().alias("cells"))
    return board.group_by(by, maintain_order=True).agg(aggs).sort(by)
