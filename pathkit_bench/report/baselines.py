"""The suite report's "Baselines" section (`baselines = true`): per task, the best baseline cell
(the reference rows: `BASELINE_ENCODERS`) and every other cell's paired difference from it, with the
task's corrected p-value, so each model is read against what a non-pathology encoder reaches."""

from __future__ import annotations

import math
from typing import Any

from pathkit_core.report.page import Section, table


def suite_baselines(folder: Any) -> list[str]:
    """The baseline encoders `suite.json` recorded ([] when none)."""
    from pathkit_core.contracts import PathkitError
    from pathkit_core.readers import read_json_file

    path = folder / "suite.json"
    if not path.is_file():
        return []
    try:
        found = read_json_file(path, "suite options record")
    except PathkitError:
        return []
    return [str(b) for b in found.get("baselines") or []]


def baseline_rows(analysis: Any) -> list[dict[str, Any]]:
    """Per task and non-baseline cell: the best baseline cell of the task (by the mean of the
    compared score, oriented), the difference cell minus baseline (positive: better than the
    baseline, whatever the score's direction) and the corrected p of that pair."""
    baselines = set(suite_baselines(analysis.folder))
    rows = []
    for t in analysis.tasks:
        if t.result is None:
            continue
        refs = [i for i, c in enumerate(t.cells) if c[0] in baselines]
        if not refs:
            continue
        best = max(refs, key=lambda i: t.sign * t.mean(t.cells[i]) if math.isfinite(t.mean(t.cells[i])) else -math.inf)
        diff = t.oriented()
        for i, cell in enumerate(t.cells):
            if i in refs:
                continue
            rows.append({"task": t.task, "score": t.key, "encoder": cell[0], "generator": cell[1],
                         "baseline": "/".join(t.cells[best]), "mean": t.mean(cell),
                         "baseline_mean": t.mean(t.cells[best]), "difference": float(diff[i, best]),
                         "p_adjusted": float(t.p_adjusted[i, best]),
                         "better": bool(diff[i, best] > 0 and t.p_adjusted[i, best] < analysis.alpha)})
    return rows


def baselines_section(analysis: Any) -> Section | None:
    rows = baseline_rows(analysis)
    if not rows:
        return None
    names = ", ".join(suite_baselines(analysis.folder))
    note = (f"<p class=note>Reference rows ({names}, added by <code>baselines = true</code>): per task, the best "
            "baseline cell, and every model's paired difference from it (positive: the model is better, whatever the "
            f"score's direction), with the task's {analysis.correction}-corrected p-value; ✓ marks a model "
            f"significantly better than the best baseline (alpha {analysis.alpha}).</p>")
    body = table(["task", "score", "encoder", "generator", "mean", "best baseline", "baseline mean",
                  "model − baseline", "adjusted p", "beats it"],
                 [[r["task"], r["score"], r["encoder"], r["generator"], f"{r['mean']:.4f}", r["baseline"],
                   f"{r['baseline_mean']:.4f}", f"{r['difference']:+.4f}", f"{r['p_adjusted']:.4g}",
                   "✓" if r["better"] else ""] for r in rows], table_id="baselines", sortable=True, filterable=True)
    return Section("Baselines beside every model", note + body, key="baselines", order=6)


__all__ = ["baseline_rows", "baselines_section", "suite_baselines"]
