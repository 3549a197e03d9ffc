"""The suite report's "Published scores" section: each `[[reference_scores]]` number of the suite
(a source's published per-task score of an encoder, e.g. eva's leaderboard) beside pathkit's mean
for that task and encoder, labelled as the source's number, never recomputed."""

from __future__ import annotations

import math
from typing import Any

from pathkit_core.report.page import Section, table


def reference_scores(folder: Any) -> list[dict[str, Any]]:
    """The reference scores `suite.json` recorded ([] when none or unreadable)."""
    from pathkit_core.contracts import PathkitError
    from pathkit_core.readers import read_json_file

    path = folder / "suite.json"
    if not path.is_file():
        return []
    try:
        found = read_json_file(path, "suite options record")
    except PathkitError:  # a damaged record is the options check's to report
        return []
    return [r for r in found.get("reference_scores") or [] if isinstance(r, dict)]


def reference_rows(analysis: Any) -> list[dict[str, Any]]:
    """One row per (task, encoder, pathkit generator) of every reference score: the source's value,
    pathkit's mean over seeds of the same score, and pathkit minus the source."""
    frame = analysis.frame
    rows = []
    for ref in reference_scores(analysis.folder):
        for encoder, value in ref.get("values", {}).items():
            cells = frame.filter((frame["task"] == ref["task"]) & (frame["encoder"] == encoder)
                                 & (frame["score"] == ref["score"]))
            if ref.get("generator"):
                cells = cells.filter(cells["generator"] == ref["generator"])
            generators = cells["generator"].unique().sort().to_list() or [ref.get("generator") or ""]
            for generator in generators:
                values = [v for v in cells.filter(cells["generator"] == generator)["value"].to_list()
                          if v is not None and math.isfinite(v)]
                mean = sum(values) / len(values) if values else None
                rows.append({"task": ref["task"], "score": ref["score"], "encoder": encoder, "generator": generator,
                             "source": ref["source"], "published": float(value), "pathkit": mean,
                             "seeds": len(values), "difference": None if mean is None else mean - float(value)})
    return rows


def references_section(analysis: Any) -> Section | None:
    rows = reference_rows(analysis)
    if not rows:
        return None

    def fmt(v: Any) -> str:
        return "not run" if v is None else f"{v:+.4f}" if isinstance(v, float) and v < 0 else f"{v:.4f}"

    body = table(["task", "score", "encoder", "pathkit generator", "source", "source's number", "pathkit (mean)",
                  "seeds", "pathkit − source"],
                 [[r["task"], r["score"], r["encoder"], r["generator"], r["source"], f"{r['published']:.4f}",
                   fmt(r["pathkit"]), r["seeds"], "n/a" if r["difference"] is None else f"{r['difference']:+.4f}"]
                  for r in rows], table_id="references", sortable=True, filterable=True)
    note = ("<p class=note>The source's number is copied from the source as published (the suite's "
            "<code>[[reference_scores]]</code>), not recomputed by pathkit; it was measured on the source's data, "
            "split and protocol, which the suite's protocol page compares with pathkit's line by line. A "
            "difference is not a test: pathkit's paired comparisons are in the sections below.</p>")
    return Section("Published scores beside pathkit's", note + body, key="references", order=5)


__all__ = ["reference_rows", "reference_scores", "references_section"]
