"""Report sections of the `multiple-choice-vqa` task: accuracy per capability with intervals, QExact,
accuracy per evidence state of grouped rows (ESG: target in set 1, 2, 3 or absent), accuracy
against the reader budget K (a K sweep), evidence accessibility per selector, the evidence budget,
every question with its answers.

Accuracy per capability is recomputed from the per-case table's `correct` and `capability`
columns (the vqa metric's), with Wilson score intervals (Wilson 1927; exact enough at a few
dozen questions, unlike the normal approximation); accessibility comes from the summary keys
`evidence_accessibility@<selector>[:<capability>]`; the budget from metrics.json "budget".
"""

from __future__ import annotations

import math
import string
from typing import Any

from pathkit_core.evaluation.scores import format_ci
from pathkit_core.report.page import Section, table
from pathkit_sdk.charts import bar_chart

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion (None for no trials)."""
    if n <= 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _vqa_metric(run: Any) -> str | None:
    for name, values in run.summary.items():
        if "Overall" in values:
            return name
    return None


def accuracy_rows(run: Any) -> list[dict[str, Any]]:
    per_case = run.per_case
    if per_case is None or "correct" not in per_case.columns:
        return []
    rows = []
    flags = [bool(c) for c in per_case["correct"].to_list()]
    caps = per_case["capability"].to_list() if "capability" in per_case.columns else [None] * len(flags)
    groups = [("Overall", flags)]
    for cap in sorted({c for c in caps if c is not None}):
        groups.append((str(cap), [f for f, c in zip(flags, caps, strict=True) if c == cap]))
    for name, members in groups:
        ci = wilson(sum(members), len(members))
        rows.append({"capability": name, "questions": len(members), "correct": sum(members),
                     "accuracy": sum(members) / len(members) if members else None,
                     "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None})
    return rows


def accuracy_section(run: Any) -> Section | None:
    rows = accuracy_rows(run)
    if not rows:
        return None
    metric = _vqa_metric(run)
    values = run.summary.get(metric or "", {})
    fig = bar_chart([f"{r['capability']} (n={r['questions']})" for r in rows],
                    {"accuracy": [r["accuracy"] for r in rows]}, ylabel="accuracy (share of questions right)",
                    errors={"accuracy": [(r["ci_low"], r["ci_high"]) for r in rows]}, ylim=(0, 1.05))
    chance = _chance(run)
    if chance is not None:
        ax = fig.axes[0]
        ax.axhline(chance, color="#999999", linestyle="--", linewidth=1, label=f"chance ({chance:.2f})")
        ax.legend(fontsize="small", loc="upper right")
    body = run.figures.figure("vqa_accuracy", fig, "Accuracy per capability with 95% Wilson intervals; unanswered "
                              "questions count as wrong", rows)
    table_rows = [[r["capability"], r["questions"], r["correct"], r["accuracy"],
                   format_ci(None if r["ci_low"] is None else (r["ci_low"], r["ci_high"]), 3)] for r in rows]
    if "QExact" in values:
        groups = int(values.get("n_groups", 0))
        right = round(values["QExact"] * groups)
        ci = wilson(right, groups)
        table_rows.append(["QExact (every question of a group right)", groups, right, values["QExact"],
                           format_ci(ci, 3)])
    body += table(["capability", "questions (groups)", "correct", "accuracy", "95% CI"], table_rows,
                  table_id="capabilities")
    return Section("Accuracy per capability", body, key="capabilities", order=100)


def state_rows(run: Any) -> list[dict[str, Any]]:
    """Accuracy per evidence state, from the per-case table's `condition` (the vqa metric's), with
    Wilson intervals: one row per (capability, state)."""
    per_case = run.per_case
    if per_case is None or not {"correct", "condition"} <= set(per_case.columns):
        return []
    caps = per_case["capability"].to_list() if "capability" in per_case.columns else [None] * per_case.height
    found: dict[tuple[str, str], list[bool]] = {}
    for flag, cap, state in zip(per_case["correct"].to_list(), caps, per_case["condition"].to_list(), strict=True):
        if state is not None:
            found.setdefault((str(cap or ""), str(state)), []).append(bool(flag))
    rows = []
    for (cap, state), flags in sorted(found.items()):
        ci = wilson(sum(flags), len(flags))
        rows.append({"capability": cap, "state": state, "questions": len(flags), "correct": sum(flags),
                     "accuracy": sum(flags) / len(flags), "ci_low": ci[0] if ci else None,
                     "ci_high": ci[1] if ci else None})
    return rows


def state_section(run: Any) -> Section | None:
    rows = state_rows(run)
    if not rows:
        return None
    labels = [f"{r['capability']} {r['state']} (n={r['questions']})".strip() for r in rows]
    fig = bar_chart(labels, {"accuracy": [r["accuracy"] for r in rows]}, ylabel="accuracy (share of rows right)",
                    errors={"accuracy": [(r["ci_low"], r["ci_high"]) for r in rows]}, ylim=(0, 1.05))
    body = run.figures.figure("vqa_evidence_states", fig, "Accuracy per evidence state (PathoArgus ESG: the "
                              "target in candidate set 1, 2, 3, or absent) with 95% Wilson intervals", rows)
    body += table(["capability", "evidence state", "rows", "correct", "accuracy", "95% CI"],
                  [[r["capability"], r["state"], r["questions"], r["correct"], r["accuracy"],
                    format_ci(None if r["ci_low"] is None else (r["ci_low"], r["ci_high"]), 3)] for r in rows],
                  table_id="evidence-states")
    return Section("Accuracy per evidence state", body, key="evidence-states", order=105)


def sweep_rows(run: Any) -> list[dict[str, Any]]:
    """(capability, K, accuracy) from the summary keys `<capability>@K=<K>` of a K sweep."""
    metric = _vqa_metric(run)
    rows = []
    for key, value in (run.summary.get(metric or "") or {}).items():
        name, sep, k = key.partition("@K=")
        if sep and k.isdigit():
            rows.append({"capability": name, "K": int(k), "accuracy": value})
    return sorted(rows, key=lambda r: (r["capability"] != "Overall", r["capability"], r["K"]))


def sweep_section(run: Any) -> Section | None:
    rows = sweep_rows(run)
    if not rows:
        return None
    from pathkit_core.report.figures import line_chart

    names = list(dict.fromkeys(r["capability"] for r in rows))
    series = {n: ([r["K"] for r in rows if r["capability"] == n], [r["accuracy"] for r in rows
                                                                    if r["capability"] == n]) for n in names}
    fig = line_chart(series, xlabel="K: features the reader gets per question", ylabel="accuracy")
    ax = fig.axes[0]
    ax.set_xscale("log", base=2)
    ks = sorted({r["K"] for r in rows})
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_ylim(0, 1.05)
    body = run.figures.figure("vqa_accuracy_vs_k", fig, "Accuracy against the reader budget K: the same trained "
                              "reader answering every test question with its K selected features, per K", rows)
    body += table(["", *[f"K = {k}" for k in ks]],
                  [[n, *(next((r["accuracy"] for r in rows if r["capability"] == n and r["K"] == k), None)
                         for k in ks)] for n in names], table_id="k-sweep")
    return Section("Accuracy against the reader budget K", body, key="k-sweep", order=108)


def _chance(run: Any) -> float | None:
    sizes = [r.get("reference", {}).get("n_choices") for r in run.test_cases.values()
             if isinstance(r.get("reference"), dict)]
    sizes = [s for s in sizes if s]
    return sum(1 / s for s in sizes) / len(sizes) if sizes else None


def accessibility_section(run: Any) -> Section | None:
    metric = _vqa_metric(run)
    if metric is None:
        return None
    values = run.summary[metric]
    prefix = "evidence_accessibility"
    budget = run.metrics.get("budget") if isinstance(run.metrics.get("budget"), dict) else {}
    own = f"this run ({budget['selector']})" if budget.get("selector") else "this run"
    selectors: dict[str, dict[str, float]] = {}
    for key, value in values.items():
        if not key.startswith(prefix) or key.endswith(("_ci_low", "_ci_high")):
            continue
        rest = key[len(prefix):]
        selector, _, capability = rest.lstrip("@").partition(":")
        selectors.setdefault(selector or own, {})[capability or "Overall"] = value
    if not selectors:
        return None
    capabilities = ["Overall", *sorted({c for s in selectors.values() for c in s if c != "Overall"})]
    fig = bar_chart(capabilities, {s: [v.get(c) for c in capabilities] for s, v in selectors.items()},
                    ylabel="evidence accessibility (share of questions)", ylim=(0, 1.05))
    rows = [{"selector": s, "capability": c, "accessibility": v.get(c)} for s, v in selectors.items()
            for c in capabilities]
    body = run.figures.figure("evidence_accessibility", fig, "Evidence accessibility per selector: the share of "
                              "questions whose selected evidence holds the region the answer needs", rows)
    body += table(["selector", *capabilities], [[s, *(v.get(c) for c in capabilities)] for s, v in selectors.items()],
                  table_id="accessibility")
    return Section("Evidence accessibility per selector", body, key="accessibility", order=110)


BUDGET_ROWS = (("selector", "selector"), ("relevance", "relevance scorer"), ("budget_K", "K: features a reader gets"),
               ("candidates_M", "M: candidates scored"), ("questions", "questions"),
               ("available_mean", "N: available features, mean"), ("available_median", "N: median"),
               ("available_p99", "N: 99th percentile"), ("available_max", "N: largest"),
               ("selected_mean", "selected features, mean"), ("available_total", "available features, total"),
               ("selected_total", "selected features, total"), ("retention", "retention (selected / available)"))


# Budget entries that count things: shown as integers (metrics.json may hold them as floats, 927.0).
BUDGET_COUNTS = frozenset({"budget_K", "candidates_M", "questions", "available_max", "available_total",
                           "selected_total"})


def _count(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def budget_section(run: Any) -> Section | None:
    budget = run.metrics.get("budget")
    if not isinstance(budget, dict) or not budget:
        return None
    rows = [[label, _count(budget[key]) if key in BUDGET_COUNTS else budget[key]]
            for key, label in BUDGET_ROWS if key in budget]
    rows += [[f"share of questions with N > {k.removeprefix('above_').removesuffix('_fraction')}", v]
             for k, v in budget.items() if k.startswith("above_")]
    return Section("Evidence budget", table(["", "value"], rows, table_id="budget"), key="budget", order=120)


def questions_section(run: Any) -> Section | None:
    preds = run.predictions
    if not preds:
        return None
    per_case = run.per_case
    correct: dict[str, Any] = {}
    if per_case is not None and {"id", "correct"} <= set(per_case.columns):
        correct = dict(zip(per_case["id"].to_list(), per_case["correct"].to_list(), strict=True))
    rows = []
    for cid, pred in list(preds.items())[:3000]:
        case = run.test_cases.get(cid) or {}
        meta, ref = case.get("meta") or {}, case.get("reference") or {}
        choices = meta.get("choices") or []
        answer = ref.get("answer") if isinstance(ref, dict) else None
        letters = string.ascii_uppercase
        rows.append([cid, ref.get("capability", "") if isinstance(ref, dict) else "", meta.get("question", ""),
                     " ".join(f"{letters[i]}. {c}" for i, c in enumerate(choices)),
                     letters[answer] if isinstance(answer, int) and answer < 26 else "",
                     (pred or {}).get("letter") or "-" if isinstance(pred, dict) else str(pred),
                     "yes" if correct.get(cid) else "no" if cid in correct else ""])
    body = table(["id", "capability", "question", "choices", "answer", "predicted", "correct"], rows,
                 table_id="cases", sortable=True, filterable=True, classes="cases", text_columns=(2, 3))
    return Section("Every question", body, key="cases", order=190)


def vqa_sections(run: Any) -> list[Section]:
    found = (accuracy_section(run), state_section(run), sweep_section(run), accessibility_section(run),
             budget_section(run), questions_section(run))
    return [s for s in found if s is not None]


__all__ = ["accuracy_rows", "state_rows", "sweep_rows", "vqa_sections", "wilson"]
