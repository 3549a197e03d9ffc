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
                         "better": bool(diff[i, best] > 0 and t.p_adjusted[i, best] < analysis.alpha),
                         **_against_random_copy(t, i, diff)})
    return rows


def _against_random_copy(task: Any, i: int, diff: Any) -> dict[str, float | None]:
    """Cell `i`'s oriented difference from its own encoder's random-weight copy (`NAME+random`, same
    generator) and that pair's corrected p: what pretraining earns. None when the task lacks the copy."""
    from pathkit_core.random_copy import RANDOM_SUFFIX

    encoder, generator = task.cells[i]
    j = next((k for k, c in enumerate(task.cells) if c == (f"{encoder}{RANDOM_SUFFIX}", generator)), None)
    if j is None:
        return {"random_difference": None, "random_p": None}
    return {"random_difference": float(diff[i, j]), "random_p": float(task.p_adjusted[i, j])}


def baselines_section(analysis: Any) -> Section | None:
    rows = baseline_rows(analysis)
    if not rows:
        return None
    names = ", ".join(suite_baselines(analysis.folder))
    note = (f"<p class=note>Reference rows ({names}, added by <code>baselines = true</code>): per task, the best "
            "baseline cell, and every model's paired difference from it (positive: the model is better, whatever the "
            f"score's direction), with the task's {analysis.correction}-corrected p-value; ✓ marks a model "
            f"significantly better than the best baseline (alpha {analysis.alpha}). The last two columns: the "
            "model against its own architecture with random weights (<code>NAME+random</code>), what pretraining "
            "earns; — where the suite did not run that copy.</p>")

    def optional(value: float | None, form: str) -> str:
        return "—" if value is None else format(value, form)

    body = table(["task", "score", "encoder", "generator", "mean", "best baseline", "baseline mean",
                  "model − baseline", "adjusted p", "beats it", "model − its random copy", "adjusted p (copy)"],
                 [[r["task"], r["score"], r["encoder"], r["generator"], f"{r['mean']:.4f}", r["baseline"],
                   f"{r['baseline_mean']:.4f}", f"{r['difference']:+.4f}", f"{r['p_adjusted']:.4g}",
                   "✓" if r["better"] else "", optional(r["random_difference"], "+.4f"),
                   optional(r["random_p"], ".4g")] for r in rows], table_id="baselines", sortable=True,
                 filterable=True)
    return Section("Baselines beside every model", note + body, key="baselines", order=6)


__all__ = ["baseline_rows", "baselines_section", "suite_baselines"]
