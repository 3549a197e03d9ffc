"""Report sections of the `report` task: every test case's reference and generated report side by
side with its scores and CRQS evidence, the distinct-prediction fraction, CRQS per field."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from pathkit_core.evaluation.scores import metric_classes
from pathkit_core.report.figures import new_figure
from pathkit_core.report.page import Section, esc, table, tags

# The field lists of a field-based clinical score (`Metric.case_evidence`), as this report reads them.
EVIDENCE = ("matched", "missed", "hallucinated", "discordant")
MAX_ROWS = 2000


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]


def case_table(run: Any) -> Section | None:
    preds = run.predictions
    if not preds:
        return None
    refs = run.references()
    declared = metric_classes(run.summary, run.registry).values()
    case_scores = [c for cls in declared for c in cls.case_scores]
    case_evidence = [c for cls in declared for c in cls.case_evidence if c in EVIDENCE]
    present, rows_by_id = run.per_case_rows([*case_scores, *case_evidence])
    scores = [c for c in present if c in case_scores]
    evidence = [c for c in present if c in case_evidence]
    ids = list(preds)[:MAX_ROWS]
    headers = ["id", "reference", "prediction", *scores, *(["CRQS fields"] if evidence else [])]
    rows, export = [], []
    for cid in ids:
        found = rows_by_id.get(cid, {})
        row: list[Any] = [cid, str(refs.get(cid) or ""), str(preds[cid])]
        row += [found.get(s) for s in scores]
        if evidence:
            row.append("<br>".join(f"{tags(_as_list(found.get(k)), k)}" for k in evidence if _as_list(found.get(k)))
                       or '<span class="note">no field in either report</span>')
        rows.append(row)
        export.append({"id": cid, "reference": refs.get(cid), "prediction": preds[cid],
                       **{s: found.get(s) for s in scores},
                       **{k: "; ".join(_as_list(found.get(k))) for k in evidence}})
    html_cols = (len(headers) - 1,) if evidence else ()
    body = table(headers, rows, table_id="cases", sortable=True, filterable=True, numeric_filters=scores,
                 classes="cases", cell_html=html_cols, text_columns=(1, 2))
    csv = run.figures.write_data("per_case_reports", export)
    notes = []
    if not refs:
        notes.append("This run folder has no test_cases.jsonl (made before pathkit kept references), so the "
                     "reference column is empty; rerun the score stage to fill it.")
    if len(preds) > len(ids):
        notes.append(f"The first {len(ids)} of {len(preds)} cases; all are in the CSV.")
    legend = (" ".join(f'<span class="tag {k}">{k}</span>' for k in evidence) +
              " CRQS fields: in both reports and agreeing; only in the reference; only in the prediction; in "
              "both but disagreeing." if evidence else "")
    intro = (f"<p>Per case: the reference report, the generated one, each case's scores (sentence-level "
             f"BLEU-4, METEOR, ROUGE-L; CRQS) and the CRQS evidence. Click a column to sort; "
             f"filter by text or by a score range. <a href=\"{esc(run.figures.href(csv))}\">All cases (CSV)</a>."
             f"</p><p class=note>{legend}</p>")
    return Section("Report generation: every test case", intro + body, key="cases", order=100, notes=notes)


def distinct_section(run: Any) -> Section | None:
    fraction = run.metrics.get("distinct_prediction_fraction")
    if fraction is None:
        return None
    preds = [str(p) for p in run.predictions.values()]
    counts: dict[str, int] = defaultdict(int)
    for p in preds:
        counts[p] += 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
    rows = [[n, f"{n / max(len(preds), 1):.1%}", text] for text, n in top]
    refs = [str(r) for r in run.references().values() if r is not None]
    ref_fraction = len(set(refs)) / len(refs) if refs else None
    ref_text = (f" The references themselves are {ref_fraction:.3f} distinct." if ref_fraction is not None else "")
    body = (f"<p><b>{fraction:.3f}</b> of the test predictions are distinct ({len(counts)} different reports for "
            f"{len(preds)} cases).{ref_text} A model that collapses to a few reports can still score well on "
            "n-gram metrics, so read the scores beside this number.</p>"
            + table(["cases", "share", "most frequent predictions"], rows, table_id="frequent-predictions",
                    text_columns=(2,)))
    return Section("Distinct predictions", body, key="distinct", order=105)


def field_accuracy(per_case: Any) -> list[dict[str, Any]]:
    """Per CRQS field: how often the reference states it and, of those cases, the share the
    prediction matches (partial agreements counted in part, as CRQS does), gets wrong or leaves
    out, and how often the prediction states it when the reference does not (hallucinated)."""
    stats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    n_cases = per_case.height
    for row in per_case.select([c for c in (*EVIDENCE, "partial") if c in per_case.columns]).iter_rows(named=True):
        partial = {}
        if row.get("partial"):
            try:
                partial = json.loads(row["partial"])
            except (TypeError, json.JSONDecodeError):
                partial = {}
        for name in _as_list(row.get("matched")):
            stats[name]["reference"] += 1
            stats[name]["agreement"] += 1
        for name in _as_list(row.get("discordant")):
            share = float(partial.get(name, 0.0))
            stats[name]["reference"] += 1
            stats[name]["agreement"] += share
            stats[name]["discordant"] += 1 - share
        for name in _as_list(row.get("missed")):
            stats[name]["reference"] += 1
            stats[name]["missed"] += 1
        for name in _as_list(row.get("hallucinated")):
            stats[name]["hallucinated"] += 1
    out = []
    for name, s in sorted(stats.items(), key=lambda kv: (-kv[1]["reference"], kv[0])):
        ref = s["reference"]
        out.append({"field": name, "cases_in_reference": int(ref),
                    "accuracy": s["agreement"] / ref if ref else None,
                    "discordant": s["discordant"] / ref if ref else None,
                    "missed": s["missed"] / ref if ref else None,
                    "hallucinated_cases": int(s["hallucinated"]),
                    "hallucinated_rate": s["hallucinated"] / n_cases if n_cases else None})
    return out


def field_section(run: Any) -> Section | None:
    per_case = run.per_case
    if per_case is None or not all(c in per_case.columns for c in EVIDENCE):
        return None
    rows = field_accuracy(per_case)
    if not rows:
        return None
    fields = [f"{r['field']} (n={r['cases_in_reference']})" for r in rows]
    fig, axes = new_figure(10.0, max(2.6, 0.36 * len(rows) + 1.4), ncols=2, gridspec_kw={"width_ratios": [3, 1.4]})
    left, right = axes[0]
    import numpy as np

    pos = np.arange(len(rows))
    start = np.zeros(len(rows))
    for key, label, colour in (("accuracy", "matched (accuracy)", "#009E73"), ("discordant", "discordant", "#CC79A7"),
                               ("missed", "missed", "#E69F00")):
        vals = np.array([r[key] or 0.0 for r in rows])
        left.barh(pos, vals, left=start, color=colour, label=label, height=0.7)
        start += vals
    for i, r in enumerate(rows):
        if r["accuracy"] is not None:
            inside = r["accuracy"] >= 0.12
            left.text(r["accuracy"] / 2 if inside else r["accuracy"] + 0.01, i, f"{r['accuracy']:.2f}", va="center",
                      ha="center" if inside else "left", fontsize="small", color="white" if inside else "black")
    left.set_yticks(pos, fields)
    left.invert_yaxis()
    left.set_xlim(0, 1)
    left.set_xlabel("share of the cases whose reference states the field")
    left.legend(fontsize="small", loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    left.grid(axis="x", alpha=0.3)
    right.barh(pos, [r["hallucinated_rate"] or 0.0 for r in rows], color="#D55E00", height=0.7)
    right.set_yticks(pos, [""] * len(rows))
    right.invert_yaxis()
    right.set_xlabel("hallucinated: share of all cases")
    right.set_xlim(0, max(0.05, max(r["hallucinated_rate"] or 0.0 for r in rows) * 1.15))
    right.grid(axis="x", alpha=0.3)
    caption = ("CRQS per field. Left: of the test cases whose reference states the field, the share the generated "
               "report matches (its accuracy; a diagnosis agreeing in part counts in part), contradicts or leaves "
               "out. Right: the share of cases whose prediction states the field when the reference does not.")
    body = run.figures.figure("crqs_fields", fig, caption, rows)
    return Section("CRQS per field", body, key="crqs-fields", order=110)


def distribution_section(run: Any) -> Section | None:
    per_case = run.per_case
    if per_case is None:
        return None
    cols = [c for c in ("CRQS", "BLEU-4", "METEOR") if c in per_case.columns]
    if not cols:
        return None
    series = {c: [v for v in per_case[c].to_list() if v is not None and v == v] for c in cols}
    fig, axes = new_figure(3.6 * len(cols) + 0.4, 3.0, ncols=len(cols))
    for ax, col in zip(axes[0], cols, strict=True):
        ax.hist(series[col], bins=20, color="#0072B2")
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(f"per-case {col}")
        ax.set_ylabel("test cases")
        ax.grid(alpha=0.3)
    body = run.figures.figure("case_score_distribution", fig,
                              "Distribution of the per-case scores over the test cases",
                              per_case.select(["id", *cols]))
    return Section("Per-case score distribution", body, key="case-scores", order=108)


def report_sections(run: Any) -> list[Section]:
    return [s for s in (case_table(run), distinct_section(run), distribution_section(run), field_section(run)) if s]


__all__ = ["field_accuracy", "report_sections"]
