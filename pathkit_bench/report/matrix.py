"""The matrix report of a leaderboard folder (`report.html`): the paper-style views (per generator
averaged over encoders, per encoder averaged over generators) with intervals, a heatmap of every
dataset x encoder x generator cell, plugins' sections (GOLDMARK rank-sums), and a link to every
cell's run report.

`write_leaderboard` writes it when `pathkit run` ran several cells of a dataset (the
`cells_finished` hook); `Leaderboards(path)` reads what it wrote under `<workdir>/leaderboards/`: the folder of
one dataset (`leaderboard.parquet`, `by_generator.csv`, `by_encoder.csv`) or the folder of all of
them. The views are recomputed from `leaderboard.parquet`, so an old folder gets them too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from pathkit_bench.leaderboard import (
    headline_columns,
    headline_scores,
    leaderboard_frame,
    score_columns,
    summary_view,
    with_ci,
)
from pathkit_core.contracts import PathkitError
from pathkit_core.evaluation.scores import ARROWS, CI_SUFFIXES, format_bounds, metric_classes
from pathkit_core.report.figures import PALETTE, FigureWriter, new_figure
from pathkit_core.report.page import Section, esc, link, page, plugin_sections, table
from pathkit_core.report.registry import UsesRegistry
from pathkit_core.report.run_folder import read_json
from pathkit_core.workspace import atomic_write_text, atomic_write_with
from pathkit_sdk.charts import heatmap

BOARD_FILE = "leaderboard.parquet"
# At most this many headline scores get a heatmap panel and a column in the views.
MAX_SCORES = 8


def is_leaderboard(path: Path) -> bool:
    path = Path(path)
    return (path / BOARD_FILE).is_file() or any((p / BOARD_FILE).is_file() for p in _children(path))


def _children(path: Path) -> list[Path]:
    try:
        return sorted(p for p in Path(path).iterdir() if p.is_dir())
    except OSError:
        return []


def read_leaderboard(path: Path) -> Any:
    """A leaderboard.parquet (a suite's or a dataset's), its format version checked: one line
    naming the file when it is damaged or of a version this pathkit does not read."""
    from pathkit_bench.leaderboard import LEADERBOARD_FORMAT, LEADERBOARD_VERSION, read_versioned_parquet

    return read_versioned_parquet(path, "leaderboard", key=LEADERBOARD_FORMAT, current=LEADERBOARD_VERSION,
                                  redo="pathkit run (or pathkit bench) into a new --workdir")


class Leaderboards(UsesRegistry):
    """The leaderboards under `root` (one dataset's folder, or the folder of every dataset's)."""

    def __init__(self, root: str | Path, registry: Any = None) -> None:
        self.root = Path(root)
        folders = [self.root] if (self.root / BOARD_FILE).is_file() else [
            p for p in _children(self.root) if (p / BOARD_FILE).is_file()]
        if not folders:
            raise PathkitError(f"{self.root} holds no leaderboard ({BOARD_FILE}); `pathkit run` writes one under "
                               "<workdir>/leaderboards/<dataset>/ when it runs several encoders or generators")
        self.folders = folders
        self._registry = registry
        self.figures = FigureWriter(self.root / "figures", relative_to=self.root)

    @property
    def leaderboards_root(self) -> Path:
        """The `<workdir>/leaderboards` folder (where plugins keep their own tables, e.g. crossval/)."""
        return self.root if self.folders[0] != self.root else self.root.parent

    @cached_property
    def frame(self) -> Any:
        import polars as pl

        return pl.concat([read_leaderboard(f / BOARD_FILE) for f in self.folders], how="diagonal_relaxed")

    @cached_property
    def metric_of(self) -> dict[str, str]:
        """Which metric each score column belongs to, read from the cells' metrics.json and named
        as the leaderboard names them (`evaluation.leaderboard.score_columns`)."""

        out: dict[str, str] = {}
        for saved in self.cell_metrics.values():
            for metric, _, column in score_columns(saved.get("metrics") or {}):
                out.setdefault(column, metric)
        return out

    @cached_property
    def cell_metrics(self) -> dict[str, dict[str, Any]]:
        """Each cell's metrics.json ({} when unreadable), by run folder, read once."""
        return {str(run_dir): read_json(Path(run_dir) / "metrics.json") or {}
                for run_dir in self.frame["run_dir"].to_list()}

    @cached_property
    def banners(self) -> list[str]:
        """The provenance banners of the matrix: which cells rest on synthetic data or on
        randomly initialised encoder weights (`matrix_banners`)."""
        return matrix_banners(list(self.cell_metrics.values()))

    @cached_property
    def score_columns(self) -> list[str]:
        """The headline scores of the cells' metrics present in the board, in the metrics' order."""
        classes = metric_classes(sorted(set(self.metric_of.values())), self.registry)
        columns = set(self.frame.columns)
        chosen: list[str] = []
        for metric, cls in classes.items():
            for key in cls.headline_scores:
                for col in (key, f"{metric}:{key}"):
                    if col in columns and col not in chosen and self.metric_of.get(col) == metric:
                        chosen.append(col)
        if not chosen:
            chosen = [c for c, t in self.frame.schema.items() if t.is_numeric() and not c.endswith(CI_SUFFIXES)]
        return chosen[:MAX_SCORES]

    def direction(self, column: str) -> str | None:
        metric = self.metric_of.get(column)
        cls = metric_classes([metric], self.registry).get(metric) if metric else None
        return cls.direction(column.rpartition(":")[2]) if cls is not None else None

    def header(self, column: str) -> str:
        arrow = ARROWS.get(self.direction(column) or "", "")
        return f"{column} {arrow}".strip()


# --------------------------------------------------------------------------- sections


def matrix_banners(cells: list[Mapping[str, Any]]) -> list[str]:
    """The banners of a matrix of runs (each cell's metrics.json): how many cells, of which
    datasets and encoders, rest on synthetic cases or on randomly initialised encoder weights."""
    found = [c.get("provenance") or {} for c in cells]
    synthetic = [p for p in found if p.get("synthetic_data")]
    random_w = [p for p in found if p.get("encoder_weights") == "random"]
    out = []
    if synthetic:
        names = sorted({str(p.get("dataset") or "?") for p in synthetic})
        out.append(f"SYNTHETIC DATA: {len(synthetic)} of {len(cells)} cell(s) ran on synthetic cases "
                   f"({', '.join(names)}); their scores say whether the pipeline works, nothing about real tissue.")
    if random_w:
        names = sorted({str(p.get("encoder") or "?") for p in random_w})
        out.append(f"RANDOM ENCODER WEIGHTS: {len(random_w)} of {len(cells)} cell(s) used randomly initialised "
                   f"encoder weights ({', '.join(names)}), not a published checkpoint.")
    return out


def _fmt(value: Any) -> str:
    return "n/a" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.4f}"


def view_section(board: Leaderboards, by: str, other: str, order: int) -> Section:

    cols = board.score_columns
    parts = []
    for dataset in board.frame["dataset"].unique(maintain_order=True).to_list():
        frame = board.frame.filter(board.frame["dataset"] == dataset)
        view = summary_view(frame, by)
        rows = []
        for row in view.iter_rows(named=True):
            cells = [row[by], row["cells"]]
            for c in cols:
                mean, sd = row.get(c), row.get(f"{c}_sd")
                low, high = row.get(f"{c}_ci_low"), row.get(f"{c}_ci_high")
                # no-break spaces inside "mean ± sd" and "[low, high]": a narrow page wraps between them
                text = _fmt(mean) + (f"\u00a0±\u00a0{sd:.4f}" if sd is not None and math.isfinite(sd) else "")
                text += format_bounds(low, high, sep="\u00a0")
                cells.append(text)
            rows.append(cells)
        parts.append(f"<h3>{esc(dataset)}</h3>")
        parts.append(table([by, "cells", *(board.header(c) for c in cols)], rows, table_id=f"view-{by}-{dataset}",
                           sortable=True, classes="views"))
        parts.append(_view_figure(board, view, by, other, cols, dataset))
    note = (f"<p class=note>Each score: the mean over the {other}s of the {by}'s cells ± their standard deviation; "
            "in brackets the mean of the cells' own 95% CI bounds (an indication of each cell's uncertainty, not "
            "an interval of the mean). ↑ higher is better, ↓ lower is better.</p>")
    title = f"Per {by}, averaged over {other}s"
    return Section(title, note + "".join(parts), key=f"per-{by}", order=order)


def _view_figure(board: Leaderboards, view: Any, by: str, other: str, cols: list[str], dataset: str) -> str:
    import numpy as np

    names = view[by].to_list()
    fig, axes = new_figure(min(10.0, max(5.5, 0.32 * len(cols) * max(1, len(names)) + 3.0)), 3.8)
    ax = axes[0][0]
    pos = np.arange(len(cols))
    step = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        row = view.row(i, named=True)
        vals = [row.get(c) if row.get(c) is not None else np.nan for c in cols]
        sds = [row.get(f"{c}_sd") if row.get(f"{c}_sd") is not None else 0.0 for c in cols]
        ax.bar(pos - 0.4 + step * (i + 0.5), vals, width=step * 0.92, yerr=sds, capsize=3, label=name,
               color=PALETTE[i % len(PALETTE)])
    ax.set_xticks(pos, [board.header(c) for c in cols], rotation=30 if len(cols) > 4 else 0,
                  ha="right" if len(cols) > 4 else "center")
    ax.set_ylabel(f"mean over {other}s (± sd)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0), title=by)
    return board.figures.figure(f"per_{by}_{dataset}", fig, f"{dataset}: each score per {by}, the mean over "
                                f"{other}s with its standard deviation", view)


def heatmap_section(board: Leaderboards) -> Section:
    parts = []
    cols = board.score_columns
    for dataset in board.frame["dataset"].unique(maintain_order=True).to_list():
        frame = board.frame.filter(board.frame["dataset"] == dataset)
        encoders = sorted(frame["encoder"].unique().to_list())
        generators = sorted(frame["generator"].unique().to_list())
        ncols = min(len(cols), 2 if len(generators) > 3 else 3)
        nrows = math.ceil(len(cols) / ncols)
        side_w = max(2.6, 0.75 * len(generators) + 1.6)
        side_h = max(1.9, 0.45 * len(encoders) + 1.5)
        fig, axes = new_figure(side_w * ncols + 0.8, side_h * nrows + 0.3, ncols=ncols, nrows=nrows)
        for k, col in enumerate(cols):
            ax = axes[k // ncols][k % ncols]
            values = [[_cell(frame, e, g, col) for g in generators] for e in encoders]
            lower = board.direction(col) == "lower"
            last_row = k + ncols >= len(cols)
            heatmap(values, encoders, generators, xlabel="generator" if last_row else "",
                    ylabel="encoder" if k % ncols == 0 else "",
                    title=board.header(col), fmt="{:.3f}", ax=ax, fig=fig, cmap="Blues_r" if lower else "Blues")
        for k in range(len(cols), nrows * ncols):
            axes[k // ncols][k % ncols].set_visible(False)
        data = frame.select(["dataset", "encoder", "generator", *[c for c in cols if c in frame.columns]])
        parts.append(board.figures.figure(f"cells_{dataset}", fig, f"{dataset}: every encoder x generator cell, one "
                                          "panel per score (darker is better)", data))
    return Section("Every cell: dataset x encoder x generator", "".join(parts), key="heatmap", order=30)


def _cell(frame: Any, encoder: str, generator: str, col: str) -> float:
    rows = frame.filter((frame["encoder"] == encoder) & (frame["generator"] == generator))
    if not rows.height or col not in rows.columns or rows[col][0] is None:
        return float("nan")
    return float(rows[col][0])


def cells_section(board: Leaderboards) -> Section:
    cols = board.score_columns
    rows = []
    for row in board.frame.iter_rows(named=True):
        run_dir = Path(row["run_dir"])
        report = run_dir / "report.html"
        href = Path(os.path.relpath(report, board.root)).as_posix()
        cell_link = link(href, "run report") if report.exists() else '<span class="note">no report yet</span>'
        cells = [row["dataset"], row["encoder"], row["generator"]]
        for c in cols:
            value, low, high = row.get(c), row.get(f"{c}_ci_low"), row.get(f"{c}_ci_high")
            cells.append(_fmt(value) + format_bounds(low, high))
        rows.append([*cells, cell_link])
    body = table(["dataset", "encoder", "generator", *(board.header(c) for c in cols), "report"], rows,
                 table_id="cells", sortable=True, filterable=True, cell_html=(3 + len(cols),), classes="cells")
    return Section(f"All {len(rows)} cells", body, key="cells", order=40)


def matrix_sections(board: Leaderboards) -> list[Section]:
    return [view_section(board, "generator", "encoder", 10), view_section(board, "encoder", "generator", 20),
            heatmap_section(board), cells_section(board),
            *plugin_sections(board.registry, "matrix_report_sections", board)]


def write_matrix_report(path: str | Path, registry: Any = None, *, board: Leaderboards | None = None) -> Path:
    """Write `<path>/report.html` (and `figures/`) for the leaderboard(s) under `path` (or of
    `board`, already read by the caller)."""
    board = board if board is not None else Leaderboards(path, registry)
    datasets = board.frame["dataset"].unique(maintain_order=True).to_list()
    n = board.frame.height
    subtitle = (f"{n} cells of {', '.join(esc(d) for d in datasets)} · leaderboard folder <code>{esc(board.root)}"
                "</code>")
    return atomic_write_text(board.root / "report.html", page(f"pathkit matrix: {', '.join(datasets)}", subtitle,
                                                              matrix_sections(board), banners=board.banners))


__all__ = ["BOARD_FILE", "Leaderboards", "is_leaderboard", "matrix_sections", "write_matrix_report"]


def write_leaderboard(results: Sequence[tuple[str, str, Any]], workdir: Path, dataset: str, *,
                      console: Any = None) -> Path:
    board = leaderboard_frame(results, dataset)
    from pathkit_core.workspace import confined

    out = confined(Path(workdir) / "leaderboards", dataset.replace(":", "_"), what=f"leaderboard of {dataset!r}")
    from pathkit_bench.leaderboard import LEADERBOARD_FORMAT, LEADERBOARD_VERSION, parquet_version_metadata

    version = parquet_version_metadata(LEADERBOARD_FORMAT, LEADERBOARD_VERSION)
    atomic_write_with(out / BOARD_FILE, lambda p: board.write_parquet(p, metadata=version))
    atomic_write_with(out / "leaderboard.csv", board.write_csv)
    by_generator = summary_view(board, "generator")
    by_encoder = summary_view(board, "encoder")
    headline = headline_scores(sorted({m for _, _, result in results for m in result.summary}))
    atomic_write_with(out / "by_generator.csv", by_generator.write_csv)
    atomic_write_with(out / "by_encoder.csv", by_encoder.write_csv)
    named = Leaderboards(out)  # read once: the report and the terminal's column names
    report = write_matrix_report(out, board=named)
    if console is not None:
        from pathkit_core.cli.common import print_table

        for title, view, key in (("per generator, averaged over encoders", by_generator, "generator"),
                                 ("per encoder, averaged over generators", by_encoder, "encoder")):
            cols = headline_columns(view.columns, key, headline)
            rows = [[row[key]] + [with_ci(row, c) for c in cols] for row in view.iter_rows(named=True)]
            print_table(f"{title} (mean [mean of the cells' CI bounds])", [key, *(named.header(c) for c in cols)],
                        rows, target=console)
        from rich.markup import escape

        console.print(escape(f"leaderboard written to {out}; matrix report: {report}"), highlight=False)
    return out
