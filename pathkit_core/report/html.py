"""The run report (`<run>/report.html`), one self-contained page: headline scores, split, the task's and
the plugins' sections, training, the QC of the features used and provenance (docs/reports.md, "The run
report"); the core only orders the sections."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pathkit_core.evaluation.provenance import banners
from pathkit_core.evaluation.scores import ScoreRow, finite_number, format_ci, sample_warnings, score_rows
from pathkit_core.report.figures import integer_bins, line_chart, new_figure
from pathkit_core.report.page import Section, details, esc, failed_section, page, plugin_sections, pre_json, table
from pathkit_core.report.run_folder import RunFolder
from pathkit_core.workspace import atomic_write_text

ORDER_HEADLINE, ORDER_SPLIT, ORDER_TASK, ORDER_PLUGIN = 0, 10, 100, 200
ORDER_TRAINING, ORDER_QC, ORDER_DATASET, ORDER_PROVENANCE = 300, 400, 800, 900


def score_table(rows: list[ScoreRow], baselines: list[str], *, table_id: str, caption: str = "") -> str:
    """Scores as the report shows them: the score's name, model value, CI, baselines, direction, range."""
    headers = ["metric", "model", "95% CI", *(f"baseline: {b}" for b in baselines), "better", "range", "scored by"]
    body = [[r.label, r.value if r.value is not None else "n/a", r.ci_text, *(_baseline_cell(r, b) for b in baselines),
             r.better, "" if r.score_range is None else "[{:.3g}, {:.3g}]".format(*r.score_range), r.metric]
            for r in rows]
    return table(headers, body, table_id=table_id, classes="headline scores", caption=caption)


def _baseline_cell(row: ScoreRow, name: str) -> Any:
    value = row.baselines.get(name)
    ci = row.baseline_cis.get(name)
    if value is None:
        return ""
    return f"{value:.4f} {format_ci(ci)}".strip() if ci else value


def headline_section(run: RunFolder) -> Section:
    details_by_metric = run.metrics.get("details") or {}
    rows = score_rows(run.summary, run.baselines, registry=run.registry, details=details_by_metric)
    baselines = list(run.baselines)
    headline = [r for r in rows if r.headline]
    n = run.metrics.get("n_test_cases")
    body = "".join(f'<p class="warning small-sample"><b>Small test set ({esc(metric)}):</b> {esc(text)}.</p>'
                   for metric, text in sample_warnings(details_by_metric).items())
    cases = f" ({n} cases)" if n is not None else ""
    caption = (f"Scores on the test split{cases}. CI: 95% (unless the metric's options say otherwise): a percentile "
               "bootstrap over the test cases, or for proportions (accuracy, sensitivity, specificity, per-class "
               "recall) a Wilson score interval; \"not estimable\" where the bootstrap could not vary; empty where "
               "the metric computes none. Each baseline is scored with the same metrics on the same cases.")
    body += score_table(headline, baselines, table_id="headline-scores", caption=caption)
    others = [r for r in rows if not r.headline]
    if others:
        body += details(f"All {len(rows)} scores", score_table(rows, baselines, table_id="all-scores"))
    return Section("Headline scores", body, key="scores", order=ORDER_HEADLINE)


def split_section(run: RunFolder) -> Section | None:
    """How the split was made and what it holds, as realised: patients (or slides, images) and
    cases per part with their fractions (pathkit_core.run.dataset.split_statement)."""
    split = run.metrics.get("split") or {}
    if not split:
        return None
    drawn = " It was drawn by pathkit because none was given." if split.get("source") == "drawn" else ""
    where = f" Kept in <code>{esc(split['file'])}</code>." if split.get("file") else ""
    text = f"<p>{esc(split.get('statement') or split.get('description', ''))}.{drawn}{where}</p>"
    found = split.get("counts") or {}
    parts = ("train", "val", "test")
    order = [p for p in parts if p in found] + [p for p in found if p not in parts]
    cases, units = {p: found[p] for p in order}, split.get("units") or {}
    if cases:
        unit = str(split.get("unit") or "patient")
        total_c, total_u = sum(cases.values()) or 1, sum(units.values()) or 1
        rows = [[part, units.get(part, ""), f"{100 * units.get(part, 0) / total_u:.0f}%" if units else "",
                 n, f"{100 * n / total_c:.0f}%"] for part, n in cases.items()]
        text += table(["part", f"{unit}s", f"{unit}s %", "cases", "cases %"], rows, table_id="split-parts")
    return Section("Split", text, key="split", order=ORDER_SPLIT)


def predictions_section(run: RunFolder, limit: int = 50) -> Section | None:
    """The generic part of a task without its own sections: per case its reference and prediction."""
    if not run.predictions:
        return None
    refs = run.references()
    per_case = run.per_case
    numeric = [c for c, t in per_case.schema.items() if c != "id" and t.is_numeric()][:6] \
        if per_case is not None else []
    numeric, scores = run.per_case_rows(numeric)
    rows = [[cid, _compact(refs.get(cid)), _compact(pred), *(scores.get(cid, {}).get(c) for c in numeric)]
            for cid, pred in list(run.predictions.items())[:limit]]
    body = table(["id", "reference", "prediction", *numeric], rows, table_id="cases", sortable=True,
                 filterable=True, numeric_filters=numeric, classes="cases")
    more = len(run.predictions) - len(rows)
    notes = [f"The first {len(rows)} of {len(run.predictions)} test cases; all are in predictions.jsonl."
             ] if more else []
    return Section("Test cases", body, key="cases", order=ORDER_TASK, notes=notes)


def _compact(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    text = json.dumps(value, default=str)
    return text if len(text) <= 300 else text[:297] + "..."


def tables_section(run: RunFolder, drawn: frozenset[str] | set[str] = frozenset()) -> Section | None:
    """Tables a task (metrics.json "tables") or a metric (`details[...]["tables"]`) hands the report:
    each {"title", "columns", "rows"}, shown as given; and the task facts metrics.json names under
    "report_sections" (a mapping each, e.g. VQA's "budget"), unless a task section drew it (`drawn`)."""
    found = list(run.metrics.get("tables") or [])
    for name in run.metrics.get("report_sections") or ():
        values = run.metrics.get(name)
        if isinstance(values, dict) and values and name not in drawn:
            found.append({"title": name.replace("_", " ").capitalize(), "columns": ["fact", "value"],
                          "rows": [[k, v] for k, v in values.items()]})
    for values in (run.metrics.get("details") or {}).values():
        if isinstance(values, dict):
            found.extend(values.get("tables") or [])
    parts = []
    for i, given in enumerate(found):
        if not isinstance(given, dict):
            continue
        parts.append(f"<h3>{esc(given.get('title', ''))}</h3>")
        parts.append(table([str(c) for c in given.get("columns", [])], list(given.get("rows", []))[:500],
                           table_id=f"given-table-{i}", sortable=True))
    if not parts:
        return None
    return Section("Tables", "".join(parts), key="tables", order=ORDER_TASK + 80)


# --------------------------------------------------------------------------- training


def training_section(run: RunFolder) -> Section | None:
    history = run.history
    if not history:
        return None
    by_step = all("step" in h for h in history)
    x_key, x_label = ("step", "training step") if by_step else ("epoch", "epoch")
    xs = [h.get(x_key) for h in history]
    selected = run.selected_epoch
    fit = run.stages.get("fit") or {}
    selection = str(fit.get("selection") or "val_loss")
    chosen_x = fit.get("best_step") if by_step else selected
    if by_step and chosen_x is None and selected is not None:
        chosen_x = next((h.get("step") for h in history if h.get("epoch") == selected), None)
    panels = [("loss", [("training loss", "train_loss"), ("validation loss", "val_loss")], "loss (training objective)")]
    if selection != "val_loss" and any(finite_number(h.get("selection")) is not None for h in history):
        short = selection.rpartition(":")[2]
        panels.append(("selection", [(f"validation {selection}", "selection")], f"validation {short}"))
    lrs = {h.get("lr") for h in history if h.get("lr") is not None}
    if len(lrs) > 1:
        panels.append(("lr", [("learning rate", "lr")], "learning rate"))
    fig, axes = new_figure(4.2 * len(panels) + 0.6, 3.6, ncols=len(panels))
    data: dict[str, list[Any]] = {x_key: xs}
    for ax, (_, series, ylabel) in zip(axes[0], panels, strict=True):
        lines = {}
        for label, key in series:
            pts = [(x, h.get(key)) for x, h in zip(xs, history, strict=True) if finite_number(h.get(key)) is not None]
            data[key] = [h.get(key) for h in history]
            if pts:
                lines[label] = ([p[0] for p in pts], [p[1] for p in pts])
        if not lines:
            continue
        line_chart(lines, xlabel=x_label, ylabel=ylabel, ax=ax)
        for line in ax.get_lines():
            line.set_marker("o")
            line.set_markersize(3)
        if chosen_x is not None:
            ax.axvline(chosen_x, color="#C00000", linestyle=":", linewidth=1.4, label=f"selected {x_label} {chosen_x}")
            ax.legend(fontsize="small", loc="best")
        if ylabel == "learning rate":
            ax.set_yscale("log")
    caption = (f"Training curves per {x_label}: training and validation loss (the generator's objective, mean "
               "per batch)"
               + (f", validation {selection}" if len(panels) > 1 and selection != "val_loss" else "")
               + (f"; the checkpoint reported is the one selected at {x_label} {chosen_x} "
                  f"(best validation {selection})" if chosen_x is not None else ""))
    body = run.figures.figure("training_curves", fig, caption, data)
    epochs = fit.get("epochs_run") or len(history)
    seconds = sum(float(h.get("seconds") or 0) for h in history)
    # by steps, an "epoch" of the history is a validation period: the count under the plot is its steps
    done = (f"{int(xs[-1])} training steps ({epochs} validation period(s))" if by_step and xs[-1] is not None
            else f"{epochs} {x_label}(s)")
    body += (f"<p class=note>{done} run in {seconds:.0f} s; selection by {esc(selection)}"
             f"{' (higher is better)' if selection != 'val_loss' else ' (lower is better)'}.</p>")
    checkpoints = run.metrics.get("checkpoints") or {}
    if checkpoints:
        body += checkpoint_table(run, checkpoints)
    return Section("Training", body, key="training", order=ORDER_TRAINING)


def checkpoint_table(run: RunFolder, checkpoints: dict[str, Any]) -> str:
    """The headline scores of every evaluated checkpoint (GOLDMARK: best and last)."""
    names = list(checkpoints)
    rows_by = {n: score_rows(checkpoints[n].get("metrics") or {}, registry=run.registry, headline_only=True)
               for n in names}
    labels = [r.label for r in rows_by[names[0]]]
    body = [[label, *(_with_ci(rows_by[n][i]) if i < len(rows_by[n]) else "" for n in names)]
            for i, label in enumerate(labels)]
    headers = ["metric", *(f"{n} (epoch {checkpoints[n].get('epoch')})" for n in names)]
    return "<h3>Evaluated checkpoints</h3>" + table(headers, body, table_id="checkpoints")


def _with_ci(row: ScoreRow) -> str:
    if row.value is None:
        return "n/a"
    return f"{row.value:.4f} {row.ci_text}".strip()


# --------------------------------------------------------------------------- QC


def qc_section(run: RunFolder) -> Section | None:
    """The features the run used: how many, their QC as extracted, and every case left out, with why."""
    qc = run.features_qc
    excluded = run.metrics.get("excluded_cases") or {}
    skipped = run.metrics.get("skipped_cases") or {}
    if qc is None and not excluded and not skipped:
        return None
    parts = []
    if qc is not None and qc.height:
        import polars as pl

        used = qc.filter(pl.col("status").fill_null("") != "skipped")
        per_split = used.group_by("split", maintain_order=True).agg(pl.col("case_id").n_unique().alias("cases"),
                                                                    pl.len().alias("inputs"),
                                                                    pl.col("n_tiles").sum().alias("tiles"))
        rows = [[r["split"], r["cases"], r["inputs"], r["tiles"]] for r in per_split.iter_rows(named=True)]
        parts.append(table(["split", "cases used", "feature files / images", "tiles"], rows, table_id="qc-splits"))
        flagged = used.filter(pl.col("flags").fill_null("") != "")
        if flagged.height:
            parts.append(f"<p>{flagged.height} feature file(s) carry QC flags (kept: flags warn, failures "
                         "exclude):</p>")
            parts.append(table(["case", "slide", "flags", "mean variance"],
                               [[r["case_id"], r["slide_id"], r["flags"], r["mean_variance"]]
                                for r in flagged.head(200).iter_rows(named=True)], table_id="qc-flags"))
        if used.height and used["n_tiles"].drop_nulls().len():
            parts.append(_tiles_figure(run, used))
        parts.append(details(f"QC of all {qc.height} inputs", table(
            list(qc.columns), [list(r) for r in qc.head(2000).iter_rows()], table_id="qc-all", sortable=True)))
    for title, found in (("Cases the dataset excluded (filters and QC)", excluded),
                         ("Cases left out for lack of usable features", skipped)):
        if found:
            parts.append(f"<h3>{esc(title)}: {len(found)}</h3>")
            parts.append(table(["case", "reason"], [[k, v] for k, v in list(found.items())[:500]],
                               table_id=f"qc-{'excluded' if found is excluded else 'skipped'}"))
    if not excluded and not skipped:
        parts.append("<p>No case was excluded or left out.</p>")
    return Section("Quality control of the features used", "".join(parts), key="qc", order=ORDER_QC)


def _tiles_figure(run: RunFolder, used: Any) -> str:
    tiles = [int(t) for t in used["n_tiles"].drop_nulls().to_list()]
    if len(set(tiles)) <= 1:
        return f"<p class=note>Every input has {tiles[0] if tiles else 0} tile(s).</p>"
    fig, axes = new_figure(5.6, 3.2)
    ax = axes[0][0]
    ax.hist(tiles, bins=integer_bins(tiles), color="#0072B2")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("tiles per feature file")
    ax.set_ylabel("feature files")
    ax.grid(alpha=0.3)
    return run.figures.figure("tiles_per_slide", fig, "Tiles per feature file used by the run",
                              used.select("case_id", "split", "slide_id", "n_tiles"))


# --------------------------------------------------------------------------- assembly


def task_sections(run: RunFolder) -> list[Section]:
    task = run.task
    sections: list[Section] = []
    if task is not None:
        try:
            sections = list(task.report_sections(run) or [])
        except Exception as exc:  # noqa: BLE001 - the rest of the report is still worth having
            sections = [failed_section(f"{task.name} results", exc, ORDER_TASK)]
    if not sections:
        generic = predictions_section(run)
        sections = [generic] if generic else []
    return sections + plugin_sections(run.registry, "report_sections", run, ORDER_PLUGIN)


def guarded(build: Any, run: RunFolder, title: str, order: int) -> Section | None:
    try:
        return build(run)
    except Exception as exc:  # noqa: BLE001 - one section's failure must not cost the whole report
        return failed_section(title, exc, order)


def run_sections(run: RunFolder) -> list[Section]:
    own = task_sections(run)
    drawn = {s.key for s in own}
    sections: list[Section | None] = [headline_section(run), guarded(split_section, run, "Split", ORDER_SPLIT),
                                      *own, guarded(lambda r: tables_section(r, drawn), run, "Tables", ORDER_TASK + 80),
                                      guarded(training_section, run, "Training", ORDER_TRAINING),
                                      guarded(qc_section, run, "Quality control", ORDER_QC)]
    dataset = {k: v for k, v in (run.metrics.get("dataset") or {}).items() if k != "warnings"}
    if dataset:
        sections.append(Section("Dataset", details("Facts the dataset reported", pre_json(dataset)), key="dataset",
                                order=ORDER_DATASET))
    sections.append(Section("Provenance", details("Versions, configuration, seeds, inputs and stage keys",
                                                  pre_json(run.provenance)), key="provenance", order=ORDER_PROVENANCE))
    return [s for s in sections if s is not None]


def write_run_report(run_dir: str | Path, registry: Any = None) -> Path:
    """Write `report.html` (and `figures/`) of a run folder from what it holds on disk."""
    run = RunFolder(run_dir, registry)
    sections = run_sections(run)
    title = f"{run.dataset} / {run.encoder} / {run.generator}" if run.dataset else "pathkit run"
    task = f"task {esc(run.task_name)} · " if run.task_name else ""
    subtitle = f"{task}run folder <code>{esc(run.path)}</code>"
    warnings = list((run.metrics.get("dataset") or {}).get("warnings") or [])
    return atomic_write_text(run.path / "report.html", page(f"pathkit run: {title}", subtitle, sections,
                                                             warnings=warnings, banners=banners(run.metrics)))


__all__ = ["checkpoint_table", "guarded", "headline_section", "predictions_section", "qc_section", "run_sections",
           "score_table", "training_section", "write_run_report"]
