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


def write_run_report(run_dir: str | Path) -> Path:
    """Write `report.html` from the run folder's metrics, history, predictions and provenance."""
    run_dir = Path(run_dir)
    metrics = _read_json(run_dir / "metrics.json") or {}
    provenance = _read_json(run_dir / "provenance.json") or {}
    history = _read_json(run_dir / "checkpoints" / "history.json") or []
    parts = [f"<!doctype html><meta charset=utf-8><title>pathkit run</title><style>{_STYLE}</style>",
             f"<h1>pathkit run</h1><p><code>{html.escape(str(run_dir))}</code></p>"]
    baseline = metrics.get("baseline_most_frequent") or {}
    rows = []
    for metric, values in (metrics.get("metrics") or {}).items():
        for key, value in values.items():
            rows.append([metric, key, value, (baseline.get(metric) or {}).get(key, "")])
    parts.append("<h2>Scores on the test split</h2>")
    parts.append(_table(["metric", "score", "model", "most-frequent baseline"], rows))
    for section in metrics.get("report_sections") or ():
        # task facts the task asks to show (VQA: the budget, available and selected features)
        values = metrics.get(section)
        if isinstance(values, dict) and values:
            parts.append(f"<h2>{html.escape(section.replace('_', ' ').capitalize())}</h2>")
            parts.append(_table(["fact", "value"], [[k, v] for k, v in values.items()]))
    if "distinct_prediction_fraction" in metrics:
        parts.append(f"<p>Distinct predictions: {metrics['distinct_prediction_fraction']:.3f} of cases.</p>")
    if metrics.get("skipped_cases"):
        parts.append("<h2>Cases left out</h2>")
        parts.append(_table(["case", "reason"], [[k, v] for k, v in metrics["skipped_cases"].items()]))
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
