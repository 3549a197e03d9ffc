"""`vqa`: closed-set VQA scores as PathoArgus reports them, and what the evidence budget kept.

- Overall: accuracy over every row; an unanswered row (answer null, or free text the strict
  parser cannot read) is wrong and stays in the denominator (WSI-VQA's scorer counts fuzzy-match
  ties as right and a follow-up tool drops empty answers; pathkit does neither);
- one accuracy per capability (the paper's GR, MA, FGR, RR, CSI, ESG columns);
- QExact: the fraction of groups (ESG quartets) with every row right;
- parse_failure_rate (answers flagged `parse_failed` or unreadable text), unanswered_rate, and
  constant_group_fraction: groups whose rows all got one same answer (the text-only control
  answers 96.07% of the quartets with one constant choice);
- when predictions carry their evidence record with planted evidence (the synthetic demo):
  evidence_accessibility (the run's selector) and evidence_accessibility@<selector> for every
  audited selector, overall and per capability (`...:<capability>`).

Predictions are `{"answer": index | letter | text | null, ...}` or the answer itself; references
`{"answer": index | letter, "capability", "group", "n_choices"}` or the answer itself.
`pathkit score --metric vqa` reads whole records (`whole_records`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import TASK_MULTIPLE_CHOICE_VQA, Metric, MetricResult, PathkitError
from pathkit_core.tasks.vqa import LETTERS, parse_answer

RESERVED = ("Overall", "QExact")


def _index(value: Any, n: int | None, where: str, *, reference: bool) -> tuple[int | None, bool]:
    """(choice index or None, whether the value was unreadable text)."""
    limit = n if n is not None else len(LETTERS)
    if value is None:
        if reference:
            raise PathkitError(f"vqa: {where}: the reference has no answer")
        return None, False
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < limit:
            raise PathkitError(f"vqa: {where}: answer {value} is not a choice index 0..{limit - 1}")
        return value, False
    if isinstance(value, str):
        text = value.strip()
        if len(text) == 1 and text.upper() in LETTERS[:limit]:
            return LETTERS.index(text.upper()), False
        if reference:
            raise PathkitError(f"vqa: {where}: reference answer {value!r} is not a choice index or letter")
        parsed = parse_answer(text, limit)
        return parsed, parsed is None
    raise PathkitError(f"vqa: {where}: answer {value!r} is not a choice index, letter, text or null")


def _fields(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"answer": value}


class VQAMetric(Metric):
    """Overall, per-capability accuracy and QExact with unanswered rows wrong; evidence accessibility."""

    name: ClassVar[str] = "vqa"
    description: ClassVar[str] = ("closed-set VQA: Overall, per-capability accuracy, QExact over groups, parse "
                                  "failures, constant groups, evidence accessibility per selector")
    tasks: ClassVar[tuple[str, ...]] = (TASK_MULTIPLE_CHOICE_VQA,)
    headline_scores: ClassVar[tuple[str, ...]] = ("Overall", "QExact")
    lower_is_better: ClassVar[tuple[str, ...]] = ("parse_failure_rate", "unanswered_rate", "constant_group_fraction")
    whole_records: ClassVar[bool] = True

    def compute(self, predictions: Sequence[Any], references: Sequence[Any], *, ids: Sequence[str] | None = None,
                context: Mapping[str, Any] | None = None) -> MetricResult:
        import polars as pl

        if len(predictions) != len(references):
            raise PathkitError(f"vqa: {len(predictions)} predictions for {len(references)} references")
        if not references:
            raise PathkitError("vqa: nothing to score")
        ids = list(ids) if ids is not None else [str(i) for i in range(len(references))]
        rows = []
        for rid, pred, ref in zip(ids, predictions, references, strict=True):
            p, r = _fields(pred), _fields(ref)
            n = r.get("n_choices")
            truth, _ = _index(r.get("answer"), n, f"reference {rid!r}", reference=True)
            answer, unreadable = _index(p.get("answer"), n, f"prediction {rid!r}", reference=False)
            evidence = p.get("evidence") if isinstance(p.get("evidence"), Mapping) else {}
            rows.append({"id": rid, "answer": answer, "reference": truth, "correct": answer == truth,
                         "capability": None if r.get("capability") is None else str(r["capability"]),
                         "group": None if r.get("group") is None else str(r["group"]),
                         "parse_failed": bool(p.get("parse_failed")) or unreadable,
                         "accessible": evidence.get("accessible"),
                         "accessible_by": dict(evidence.get("accessible_by") or {})})
        summary = self._summary(rows)
        table = pl.DataFrame([{k: v for k, v in row.items() if k != "accessible_by"} for row in rows],
                             schema={"id": pl.Utf8, "answer": pl.Int64, "reference": pl.Int64, "correct": pl.Boolean,
                                     "capability": pl.Utf8, "group": pl.Utf8, "parse_failed": pl.Boolean,
                                     "accessible": pl.Boolean})
        return MetricResult(summary, table)

    @staticmethod
    def _summary(rows: list[dict[str, Any]]) -> dict[str, float]:
        def mean(flags: Sequence[bool]) -> float:
            return sum(flags) / len(flags)

        from pathkit_core.report.vqa import wilson

        correct = sum(bool(r["correct"]) for r in rows)
        out: dict[str, float] = {"Overall": mean([r["correct"] for r in rows]), "n_questions": float(len(rows))}
        # the headline's interval: Wilson's, as the report's capability table gives each accuracy
        interval = wilson(correct, len(rows))
        if interval is not None:
            out["Overall_ci_low"], out["Overall_ci_high"] = interval
        capabilities = sorted({r["capability"] for r in rows if r["capability"] is not None})
        for cap in capabilities:
            if cap in RESERVED:
                raise PathkitError(f"vqa: a capability may not be called {cap!r} (a summary score's name)")
            out[cap] = mean([r["correct"] for r in rows if r["capability"] == cap])
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if r["group"] is not None:
                groups.setdefault(r["group"], []).append(r)
        if groups:
            out["QExact"] = mean([all(m["correct"] for m in members) for members in groups.values()])
            out["n_groups"] = float(len(groups))
            out["constant_group_fraction"] = mean([len({m["answer"] for m in members}) == 1
                                                   for members in groups.values()])
        out["unanswered_rate"] = mean([r["answer"] is None for r in rows])
        out["parse_failure_rate"] = mean([r["parse_failed"] for r in rows])

        def accessibility(key: str, flags: list[tuple[str | None, Any]]) -> None:
            known = [(cap, bool(f)) for cap, f in flags if f is not None]
            if not known:
                return
            out[key] = mean([f for _, f in known])
            for cap in capabilities:
                mine = [f for c, f in known if c == cap]
                if mine:
                    out[f"{key}:{cap}"] = mean(mine)

        accessibility("evidence_accessibility", [(r["capability"], r["accessible"]) for r in rows])
        audited = sorted({name for r in rows for name in r["accessible_by"]})
        for name in audited:
            accessibility(f"evidence_accessibility@{name}", [(r["capability"], r["accessible_by"].get(name))
                                                             for r in rows])
        return out


@hookimpl
def register_metrics(register):
    register(VQAMetric)
