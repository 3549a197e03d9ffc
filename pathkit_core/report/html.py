"""A self-contained HTML report of one run: scores, baseline, training curve, provenance."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from pathkit_core.workspace import atomic_write_text

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
th{background:#f3f3f3}code,pre{background:#f7f7f7;padding:.2em}pre{overflow:auto;max-height:30em}
"""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(
            f"<td>{v:.4f}</td>" if isinstance(v, float) else f"<td>{html.escape(str(v))}</td>" for v in row
        ) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _curve_svg(history: list[dict[str, float]], key: str, width: int = 480, height: int = 160) -> str:
    values = [h[key] for h in history if key in h and h[key] == h[key]]
    if len(values) < 2:
        return ""
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    pts = " ".join(
        f"{i * (width - 20) / (len(values) - 1) + 10:.1f},{height - 10 - (v - lo) * (height - 20) / span:.1f}"
        for i, v in enumerate(values)
    )
    return (f'<figure><svg width="{width}" height="{height}" style="border:1px solid #ddd">'
            f'<polyline fill="none" stroke="#2a6" stroke-width="2" points="{pts}"/></svg>'
            f"<figcaption>{html.escape(key)} per epoch ({lo:.4g} to {hi:.4g})</figcaption></figure>")


def _confusion_svg(classes: list[str], matrix: list[list[int]], cell: int = 34) -> str:
    """The confusion matrix as a heatmap: rows are reference classes, columns predictions, each
    cell shaded by its share of the row (the class's recall on the diagonal) and labelled by count."""
    n = len(classes)
    left, top = 60, 60
    width, height = left + n * cell + 10, top + n * cell + 10
    parts = [f'<svg width="{width}" height="{height}" font-size="11" font-family="sans-serif">']
    for j, name in enumerate(classes):
        x = left + j * cell + cell / 2
        parts.append(f'<text x="{x:.0f}" y="{top - 6}" text-anchor="middle">{html.escape(str(name))}</text>')
    for i, row in enumerate(matrix):
        total = sum(row) or 1
        y = top + i * cell
        parts.append(f'<text x="{left - 6}" y="{y + cell / 2 + 4:.0f}" text-anchor="end">'
                     f'{html.escape(str(classes[i]))}</text>')
        for j, count in enumerate(row):
            share = count / total
            shade = int(255 - 200 * share)
            parts.append(f'<rect x="{left + j * cell}" y="{y}" width="{cell}" height="{cell}" '
                         f'fill="rgb({shade},{shade},255)" stroke="#fff"/>')
            parts.append(f'<text x="{left + j * cell + cell / 2:.0f}" y="{y + cell / 2 + 4:.0f}" '
                         f'text-anchor="middle" fill="{"#fff" if share > 0.6 else "#222"}">{count}</text>')
    parts.append(f'<text x="{left}" y="14">prediction (columns) by reference (rows)</text></svg>')
    return "".join(parts)


def _tables(tables: list[dict[str, Any]]) -> list[str]:
    """Tables a metric (`details[...]["tables"]`) or a task (`metrics.json` "tables") hands the
    report: each {"title", "columns", "rows"}."""
    parts = []
    for table in tables or []:
        parts.append(f"<h2>{html.escape(str(table.get('title', '')))}</h2>")
        parts.append(_table([str(c) for c in table.get("columns", [])], list(table.get("rows", []))[:200]))
    return parts


def _details_section(details: dict[str, Any]) -> list[str]:
    parts = []
    for metric, found in details.items():
        parts.extend(_tables(found.get("tables") or []))
        if found.get("confusion_matrix"):
            parts.append(f"<h2>Confusion matrix ({html.escape(metric)})</h2>")
            parts.append(f"<figure>{_confusion_svg(found['classes'], found['confusion_matrix'])}</figure>")
        if found.get("per_class"):
            rows = [[r["class"], r["support"], r["precision"], r["recall"], r["F1"]] for r in found["per_class"]]
            parts.append(_table(["class", "test cases", "precision", "recall", "F1"], rows))
    return parts


def write_run_report(run_dir: str | Path) -> Path:
    """Write `report.html` from the run folder's metrics, history, predictions and provenance."""
    run_dir = Path(run_dir)
    metrics = _read_json(run_dir / "metrics.json") or {}
    provenance = _read_json(run_dir / "provenance.json") or {}
    history = _read_json(run_dir / "checkpoints" / "history.json") or []
    parts = [f"<!doctype html><meta charset=utf-8><title>pathkit run</title><style>{_STYLE}</style>",
             f"<h1>pathkit run</h1><p><code>{html.escape(str(run_dir))}</code></p>"]
    for warning in (metrics.get("dataset") or {}).get("warnings", []):
        parts.append(f'<p style="border:2px solid #c00;padding:.6em;color:#900"><b>Warning:</b> '
                     f"{html.escape(warning)}</p>")
    baselines = metrics.get("baselines") or {}
    rows = []
    for metric, values in (metrics.get("metrics") or {}).items():
        for key, value in values.items():
            rows.append([metric, key, value, *((baselines[b].get(metric) or {}).get(key, "") for b in baselines)])
    parts.append("<h2>Scores on the test split</h2>")
    parts.append(_table(["metric", "score", "model", *(f"baseline: {b}" for b in baselines)], rows))
    split = metrics.get("split") or {}
    if split:
        counts = split.get("counts") or {}
        sizes = ", ".join(f"{p} {n}" for p, n in counts.items())
        drawn = " It was drawn by pathkit because none was given." if split.get("source") == "drawn" else ""
        where = f" Kept in <code>{html.escape(str(split['file']))}</code>." if split.get("file") else ""
        parts.append(f"<h2>Split</h2><p>{html.escape(str(split.get('description', '')))}"
                     f"{' (' + html.escape(sizes) + ' cases)' if sizes else ''}.{drawn}{where}</p>")
    for section in metrics.get("report_sections") or ():
        # task facts the task asks to show (VQA: the budget, available and selected features)
        values = metrics.get(section)
        if isinstance(values, dict) and values:
            parts.append(f"<h2>{html.escape(section.replace('_', ' ').capitalize())}</h2>")
            parts.append(_table(["fact", "value"], [[k, v] for k, v in values.items()]))
    if "distinct_prediction_fraction" in metrics:
        parts.append(f"<p>Distinct predictions: {metrics['distinct_prediction_fraction']:.3f} of cases.</p>")
    parts.extend(_details_section(metrics.get("details") or {}))
    parts.extend(_tables(metrics.get("tables") or []))
    for title, key in (("Cases the dataset excluded", "excluded_cases"), ("Cases left out", "skipped_cases")):
        if metrics.get(key):
            parts.append(f"<h2>{title}</h2>")
            parts.append(_table(["case", "reason"], [[k, v] for k, v in list(metrics[key].items())[:200]]))
    if metrics.get("dataset"):
        shown = {k: v for k, v in metrics["dataset"].items() if k != "warnings"}
        parts.append("<h2>Dataset</h2><pre>" + html.escape(json.dumps(shown, indent=2, default=str)) + "</pre>")
    if history:
        parts.append("<h2>Training</h2>")
        parts.append(_curve_svg(history, "train_loss") + _curve_svg(history, "selection"))
    preds_path = run_dir / "predictions.jsonl"
    if preds_path.exists():
        examples = [json.loads(line) for line in preds_path.read_text().splitlines()[:10]]
        parts.append("<h2>Example predictions</h2>")
        parts.append(_table(["id", "prediction"], [[e["id"], e["prediction"]] for e in examples]))
    parts.append("<h2>Provenance</h2><pre>" + html.escape(json.dumps(provenance, indent=2, default=str)) + "</pre>")
    return atomic_write_text(run_dir / "report.html", "\n".join(parts))
