"""`vqa`: closed-set VQA scores as PathoArgus reports them, and what the evidence budget kept.

- Overall: accuracy over every row; an unanswered row (answer null, or free text the strict
  parser cannot read) is wrong and stays in the denominator (WSI-VQA's scorer counts fuzzy-match
  ties as right and a follow-up tool drops empty answers; pathkit does neither);
- one accuracy per capability (the paper's GR, MA, FGR, RR, CSI, ESG columns);
- accuracy per evidence state of an ESG row (`ESG@set1`, `ESG@set2`, `ESG@set3`, `ESG@absent`: the
  reference's "condition"; PathoArgus builds each quartet from the four states, section 3);
- QExact: the fraction of groups (ESG quartets) with every row right. Every group must be whole
  (`group_size` rows, 4 for a quartet): a group missing a row (a question `--skip-missing` left
  out, say) is refused with the list, unless option `drop_incomplete_groups` leaves such groups
  out of QExact and constant_group_fraction (counted: `n_groups_dropped`);
- under a K sweep (predictions carrying "sweep": {K: answer}), `Overall@K=<K>` and
  `<capability>@K=<K>`: the same reader's accuracy at each reader budget;
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
from pathkit_core.contracts import Metric, MetricResult, PathkitError
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA
from pathkit_tasks.vqa.cases import LETTERS, parse_answer

RESERVED = ("Overall", "QExact")
GROUP_SIZE = 4  # an ESG quartet: target in set 1, 2, 3, or absent


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
    paired_scores: ClassVar[dict[str, tuple[str, str]]] = {"Overall": ("correct", "correct")}
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
            swept = p.get("sweep") if isinstance(p.get("sweep"), Mapping) else {}
            sweep = {int(k): _index(v, n, f"prediction {rid!r} at K={k}", reference=False)[0] == truth
                     for k, v in swept.items()}
            rows.append({"id": rid, "answer": answer, "reference": truth, "correct": answer == truth,
                         "capability": None if r.get("capability") is None else str(r["capability"]),
                         "group": None if r.get("group") is None else str(r["group"]),
                         "condition": None if r.get("condition") is None else str(r["condition"]),
                         "parse_failed": bool(p.get("parse_failed")) or unreadable,
                         "accessible": evidence.get("accessible"),
                         "accessible_by": dict(evidence.get("accessible_by") or {}), "sweep": sweep})
        options = dict((context or {}).get("options") or {})
        summary = self._summary(rows, group_size=int(options.get("group_size") or GROUP_SIZE),
                                drop_incomplete=bool(options.get("drop_incomplete_groups")))
        table = pl.DataFrame([{k: v for k, v in row.items() if k not in ("accessible_by", "sweep")} for row in rows],
                             schema={"id": pl.Utf8, "answer": pl.Int64, "reference": pl.Int64, "correct": pl.Boolean,
                                     "capability": pl.Utf8, "group": pl.Utf8, "condition": pl.Utf8,
                                     "parse_failed": pl.Boolean, "accessible": pl.Boolean})
        return MetricResult(summary, table)

    @staticmethod
    def _summary(rows: list[dict[str, Any]], *, group_size: int = GROUP_SIZE,
                 drop_incomplete: bool = False) -> dict[str, float]:
        from pathkit_tasks.vqa.sections import wilson

        correct = sum(bool(r["correct"]) for r in rows)
        out: dict[str, float] = {"Overall": _mean([r["correct"] for r in rows]), "n_questions": float(len(rows))}
        # the headline's interval: Wilson's, as the report's capability table gives each accuracy
        interval = wilson(correct, len(rows))
        if interval is not None:
            out["Overall_ci_low"], out["Overall_ci_high"] = interval
        capabilities = sorted({r["capability"] for r in rows if r["capability"] is not None})
        _capability_scores(out, rows, capabilities)
        _group_scores(out, rows, group_size, drop_incomplete)
        for k in sorted({k for r in rows for k in r["sweep"]}):
            at_k = [r for r in rows if k in r["sweep"]]
            out[f"Overall@K={k}"] = _mean([r["sweep"][k] for r in at_k])
            for cap in capabilities:
                mine = [r["sweep"][k] for r in at_k if r["capability"] == cap]
                if mine:
                    out[f"{cap}@K={k}"] = _mean(mine)
        out["unanswered_rate"] = _mean([r["answer"] is None for r in rows])
        out["parse_failure_rate"] = _mean([r["parse_failed"] for r in rows])
        _accessibility(out, "evidence_accessibility", [(r["capability"], r["accessible"]) for r in rows], capabilities)
        audited = sorted({name for r in rows for name in r["accessible_by"]})
        for name in audited:
            _accessibility(out, f"evidence_accessibility@{name}", [(r["capability"], r["accessible_by"].get(name))
                                                                   for r in rows], capabilities)
        return out


def _mean(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags)


def _capability_scores(out: dict[str, float], rows: list[dict[str, Any]], capabilities: list[str]) -> None:
    """Accuracy per capability, and per capability and condition."""
    for cap in capabilities:
        if cap in RESERVED:
            raise PathkitError(f"vqa: a capability may not be called {cap!r} (a summary score's name)")
        out[cap] = _mean([r["correct"] for r in rows if r["capability"] == cap])
        states = sorted({r["condition"] for r in rows if r["capability"] == cap and r["condition"] is not None})
        for state in states:
            out[f"{cap}@{state}"] = _mean([r["correct"] for r in rows
                                           if r["capability"] == cap and r["condition"] == state])


def _group_scores(out: dict[str, float], rows: list[dict[str, Any]], group_size: int, drop_incomplete: bool) -> None:
    """QExact (every question of a group right) with Wilson's interval, and the constant-answer groups."""
    from pathkit_tasks.vqa.sections import wilson

    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["group"] is not None:
            groups.setdefault(r["group"], []).append(r)
    incomplete = {g: len(members) for g, members in groups.items() if len(members) != group_size}
    if incomplete and not drop_incomplete:
        listing = ", ".join(f"{g} ({n} of {group_size} rows)" for g, n in sorted(incomplete.items())[:20])
        more = f" and {len(incomplete) - 20} more" if len(incomplete) > 20 else ""
        raise PathkitError(f"vqa: QExact needs whole groups of {group_size} rows; {len(incomplete)} group(s) are "
                           f"not: {listing}{more}. Score the missing rows, or pass option "
                           "drop_incomplete_groups=true to leave these groups out of QExact (counted)")
    if incomplete:
        groups = {g: members for g, members in groups.items() if g not in incomplete}
        out["n_groups_dropped"] = float(len(incomplete))
    if not groups:
        return
    whole = [all(m["correct"] for m in members) for members in groups.values()]
    out["QExact"] = _mean(whole)
    out["n_groups"] = float(len(groups))
    # a proportion of groups: Wilson's interval too, as the capability table gives it
    interval = wilson(sum(whole), len(whole))
    if interval is not None:
        out["QExact_ci_low"], out["QExact_ci_high"] = interval
    out["constant_group_fraction"] = _mean([len({m["answer"] for m in members}) == 1 for members in groups.values()])


def _accessibility(out: dict[str, float], key: str, flags: list[tuple[str | None, Any]],
                   capabilities: list[str]) -> None:
    known = [(cap, bool(f)) for cap, f in flags if f is not None]
    if not known:
        return
    out[key] = _mean([f for _, f in known])
    for cap in capabilities:
        mine = [f for c, f in known if c == cap]
        if mine:
            out[f"{key}:{cap}"] = _mean(mine)


@hookimpl
def register_metrics(register):
    register(VQAMetric)
