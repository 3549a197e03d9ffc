"""Report section of the `retrieval` task: accuracy at each k per query class, and every query's
nearest train cases."""

from __future__ import annotations

from typing import Any

from pathkit_core.report.page import Section, esc, table

MAX_ROWS = 500


def retrieval_sections(run: Any) -> list[Section]:
    found = run.details("per_class_retrieval")
    preds = run.predictions or {}
    refs = run.references()
    if not found and not preds:
        return []
    body = ""
    if found:
        rows = found[1]["per_class_retrieval"]
        keys = [k for k in rows[0] if k not in ("class", "support")] if rows else []
        body += table(["class", "queries", *keys], [[r["class"], r["support"], *(r[k] for k in keys)] for r in rows])
    names = (found[1].get("classes") if found else None) or []
    shown = []
    for cid in list(preds)[:MAX_ROWS]:
        pred = preds[cid]
        ranked = [names[c] if c < len(names) else str(c) for c in pred.get("retrieved", [])[:5]]
        ref = refs.get(cid)
        ref_name = names[ref] if isinstance(ref, int) and ref < len(names) else ref
        shown.append([cid, ref_name, ", ".join(map(str, ranked)), ", ".join(map(str, pred.get("neighbours", [])[:5]))])
    body += table(["query", "class", "classes of the 5 nearest train cases", "their ids"], shown,
                  table_id="retrieval-cases", sortable=True, filterable=True)
    if len(preds) > MAX_ROWS:
        body += f'<p class="note">The first {esc(MAX_ROWS)} of {esc(len(preds))} queries are shown.</p>'
    return [Section("Retrieval by query", body, key="retrieval", order=100)]
