"""The suite report (`<workdir>/suites/<name>/report.html`): the headline table with each task's best
cell marked only when it is significantly better than every other, the pairwise-difference heatmaps
with adjusted p-values, the critical-difference diagrams of encoders and generators, win/tie/loss,
the per-seed spread, plugins' sections (GOLDMARK rank-sums) and a link to every cell's run report.
Every figure's data is written beside it as CSV (the page kit's `FigureWriter`)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from pathkit_core.report.figures import PALETTE, FigureWriter, new_figure
from pathkit_core.report.page import Section, esc, link, page, plugin_sections, table
from pathkit_core.workspace import atomic_write_text

ARROW = {"higher": "↑", "lower": "↓"}


def _fmt(value: Any, digits: int = 4) -> str:
    return "n/a" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.{digits}f}"


def headline_section(analysis: Any) -> Section:
    rows = []
    for r in analysis.headline_rows():
        text = _fmt(r["mean"]) + (f"\u00a0±\u00a0{r['sd']:.4f}" if r["sd"] is not None else "")
        if r["ci_low"] is not None:
            text += f" [{r['ci_low']:.3f},\u00a0{r['ci_high']:.3f}]"
        rows.append([r["task"], f"{r['score']} {ARROW.get(r['direction'], '')}", r["encoder"], r["generator"],
                     ("★ " if r["best"] else "") + text, r["seeds"], r["per_seed"]])
    several = any(t.result is not None and t.result.n_seeds > 1 for t in analysis.tasks)
    how = ("from the seeds x cases variance terms (case, seed and interaction parts) with the generalized "
           "t reference" if several else "resampling seeds and test cases together")
    note = (f"<p class=note>Each cell: the mean over seeds ± the standard deviation of the per-seed scores; in "
            f"brackets the {int(analysis.level * 100)}% interval {how} "
            f"(docs/comparisons.md). ★ marks a task's best cell only when it beats every other cell of the task "
            f"significantly (paired test, {analysis.correction} correction over the task's table, "
            f"alpha {analysis.alpha}); a task without ★ has no significant winner.</p>")
    notes = "".join(f"<p class=note>{esc(t.task)}: {esc(t.note)}</p>" for t in analysis.tasks if t.note)
    body = table(["task", "score", "encoder", "generator", "mean ± sd [CI]", "seeds", "per seed"], rows,
                 table_id="headline", sortable=True, filterable=True)
    return Section("Headline: the compared score of every cell", note + notes + body, key="headline", order=0)


def _label(cell: tuple[str, str]) -> str:
    return f"{cell[0]} / {cell[1]}"


def pairwise_section(analysis: Any, figures: FigureWriter) -> Section:
    parts = ["<p class=note>Row minus column of the compared score on the task's shared test cases; each cell "
             f"annotated with the difference and the {analysis.correction}-adjusted p-value (* below "
             f"{analysis.alpha}). Blue: the row is better.</p>"]
    for t in analysis.tasks:
        if t.result is None:
            continue
        labels = [_label(c) for c in t.cells]
        m = len(labels)
        fig, axes = new_figure(max(4.2, 0.95 * m + 2.8), max(3.2, 0.62 * m + 1.8))
        ax = axes[0][0]
        oriented = t.oriented()
        bound = float(max(1e-12, abs(oriented).max()))
        image = ax.imshow(oriented, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
        ax.set_xticks(range(m), labels, rotation=35 if m > 2 else 0, ha="right" if m > 2 else "center",
                      fontsize="small")
        ax.set_yticks(range(m), labels, fontsize="small")
        for i in range(m):
            for j in range(m):
                if i == j:
                    continue
                p = t.p_adjusted[i, j]
                star = "*" if p < analysis.alpha else ""
                ax.text(j, i, f"{t.result.difference[i, j]:+.3f}{star}\np={p:.3g}", ha="center", va="center",
                        fontsize="x-small")
        fig.colorbar(image, ax=ax, label=f"row better by ({t.key})", shrink=0.85)
        ax.set_title(f"{t.task}: {t.key} {ARROW.get(t.direction, '')}", fontsize="medium")
        data = [r for r in analysis.comparison_rows() if r["task"] == t.task]
        resamples = getattr(t.result, "n_resamples", None)
        how = f"{resamples} resamples" if resamples is not None else "no resampling"
        parts.append(f"<h3>{esc(t.task)}</h3><p class=note>{esc(t.test)}; {t.result.n_cases} cases, "
                     f"{t.result.n_seeds} seed(s), {how}.</p>")
        if t.result.n_seeds == 2:
            parts.append(f"<p class=note><strong>{esc(t.note)}</strong></p>")
        parts.append(figures.figure(f"pairwise_{t.task}", fig, f"{t.task}: pairwise differences of {t.key} with "
                                    f"adjusted p-values", data))
    return Section("Pairwise differences within each task", "".join(parts), key="pairwise", order=10)


def ranks_section(analysis: Any, figures: FigureWriter) -> Section:
    from pathkit_bench.report.cd_diagram import cd_data, cd_diagram

    parts = ["<p class=note>Within each block (a task and one level of the other factor) the models are ranked by "
             "their mean compared score (1 = best; ties share ranks); the average rank over blocks, Friedman's "
             "test that all rank alike, and the Nemenyi critical difference (Demšar 2006): models joined by a bar "
             "do not differ significantly. The rank sum (average rank x blocks) is GOLDMARK's form.</p>"]
    for factor in ("encoder", "generator"):
        summary = analysis.ranks(factor)
        if summary is None:
            continue
        fr = summary.friedman
        stats = (f"Friedman chi² = {_fmt(fr.statistic, 3)} (p = {_fmt(fr.p_value, 4)}), Iman-Davenport F = "
                 f"{_fmt(fr.iman_davenport, 3)} (p = {_fmt(fr.p_value_f, 4)}); CD = {summary.cd:.3f} for "
                 f"{len(summary.names)} {factor}s over {len(summary.blocks)} blocks (task x {summary.other})")
        parts.append(f"<h3>{esc(factor.capitalize())}s</h3><p>{esc(stats)}</p>")
        rows = analysis.rank_rows(summary)
        parts.append(table([factor, "average rank ↓", "rank sum ↓", "blocks"],
                           [[r[factor], r["average_rank"], r["rank_sum"], r["blocks"]] for r in rows],
                           table_id=f"ranks-{factor}", sortable=True))
        fig = cd_diagram(summary.names, summary.average_ranks, summary.cd, summary.cliques,
                         title=f"{factor}s: average rank (CD at alpha {analysis.alpha})")
        parts.append(figures.figure(f"cd_{factor}", fig, f"Critical-difference diagram of the {factor}s",
                                    cd_data(summary.names, summary.average_ranks, summary.cd, summary.cliques)))
        if summary.wins is not None:
            names = summary.names
            cells = [[a] + [("—" if i == j else f"{summary.wins[i, j]}/{summary.ties[i, j]}/{summary.losses[i, j]}")
                            for j in range(len(names))] for i, a in enumerate(names)]
            parts.append("<p class=note>Win/tie/loss of the row against the column over the blocks: a win or loss "
                         "is significant after correction, a tie is not.</p>")
            parts.append(table([f"{factor} (row)", *names], cells, table_id=f"wtl-{factor}"))
            parts.append(f'<p class=note>As a table: <a href="win_tie_loss_{esc(factor)}.csv">'
                         f'win_tie_loss_{esc(factor)}.csv</a></p>')
    return Section("Across tasks: ranks, Friedman, critical difference", "".join(parts), key="ranks", order=20)


def seeds_section(analysis: Any, figures: FigureWriter) -> Section:
    parts = ["<p class=note>Each dot one seed's score of the cell; the bar its mean. The spread is the training "
             "noise a single run hides.</p>"]
    for t in analysis.tasks:
        labels = [_label(c) for c in t.cells]
        fig, axes = new_figure(max(4.5, 0.7 * len(labels) + 2.5), 3.4)
        ax = axes[0][0]
        for i, cell in enumerate(t.cells):
            values = [v for v in t.seed_values[cell].values() if v is not None]
            ax.scatter([i] * len(values), values, color=PALETTE[i % len(PALETTE)], zorder=3, s=22)
            if values:
                ax.plot([i - 0.3, i + 0.3], [sum(values) / len(values)] * 2, color="black", lw=1.5)
        ax.set_xticks(range(len(labels)), labels, rotation=30 if len(labels) > 2 else 0,
                      ha="right" if len(labels) > 2 else "center", fontsize="small")
        ax.set_ylabel(f"{t.key} {ARROW.get(t.direction, '')}")
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(t.task, fontsize="medium")
        data = [r for r in analysis.seed_rows() if r["task"] == t.task]
        parts.append(figures.figure(f"seeds_{t.task}", fig, f"{t.task}: {t.key} of every seed", data))
    return Section("Per-seed spread", "".join(parts), key="seeds", order=30)


def cells_section(analysis: Any) -> Section:
    rows = []
    for r in analysis.cells.iter_rows(named=True):
        run_dir = Path(r["run_dir"]) if r["run_dir"] else None
        report = run_dir / "report.html" if run_dir else None
        if report is not None and report.exists():
            cell_link = link(Path(os.path.relpath(report, analysis.folder)).as_posix(), "run report")
        else:
            cell_link = f'<span class="note">{esc(r["error"] or "no report")}</span>'
        rows.append([r["task"], r["encoder"], r["generator"], r["seed"], "yes" if r["reused"] == "true" else "no",
                     cell_link])
    body = table(["task", "encoder", "generator", "seed", "reused", "report"], rows, table_id="cells",
                 sortable=True, filterable=True, cell_html=(5,))
    return Section(f"All {len(rows)} cells", body, key="cells", order=40)


def suite_sections(analysis: Any, figures: FigureWriter) -> list[Section]:
    from pathkit_bench.report.baselines import baselines_section
    from pathkit_bench.report.cost import cost_section
    from pathkit_bench.report.references import references_section

    extra = [s for s in (references_section(analysis), baselines_section(analysis)) if s is not None]
    spent = cost_section(analysis)
    return [headline_section(analysis), *extra, pairwise_section(analysis, figures),
            ranks_section(analysis, figures), seeds_section(analysis, figures), *([spent] if spent else []),
            cells_section(analysis),
            *plugin_sections(analysis.registry, "suite_report_sections", analysis)]


def write_suite_report(analysis: Any) -> Path:
    """`<suite folder>/report.html`, its figures and their data under `figures/`, and the tables
    (comparisons.csv, headline.csv, seeds.csv, ranks_*.csv, win_tie_loss_*.csv) beside it."""
    analysis.write_tables()
    figures = FigureWriter(analysis.folder / "figures", relative_to=analysis.folder)
    analysis.figures = figures  # plugins' sections draw through it
    n_tasks = len(analysis.tasks)
    subtitle = (f"{analysis.cells.height} cells over {n_tasks} task(s) · suite folder <code>{esc(analysis.folder)}"
                f"</code> · tidy leaderboard: <a href=\"leaderboard.csv\">CSV</a>, "
                f"<a href=\"leaderboard.parquet\">Parquet</a>")
    return atomic_write_text(analysis.folder / "report.html",
                             page(f"pathkit suite: {analysis.name}", subtitle, suite_sections(analysis, figures)))


__all__ = ["suite_sections", "write_suite_report"]
