"""Task `multiple-choice-vqa`: a question, its choices and a case's slides in, one choice out.

A case (PathoArgus-Bench, WSI-VQA closed questions) is one question. Its `meta` holds
"question" and "choices" (two or more distinct strings), optionally "capability" (GR, CSI, ...),
"candidate_sets" (one or more lists of slide names: the case's slides or feature files, in
order, are those sets concatenated; one set of all of them when absent), and, for metrics only,
"group" (an ESG quartet id), "condition" (which evidence state the row is) and "evidence" (where
planted evidence lies, synthetic data only: `{"regions": [{"slide": ordinal, "box": [x0, y0, x1,
y1]}], "sets": [set, ...]}`). Its target is the 0-based index of the right choice.

The reader never sees the answer: test items carry no target, and the task hands readers the
case meta without the metric-only keys (`READER_HIDDEN`: group and condition give an ESG answer
away). Before the reader, an evidence selector (`pathkit list selectors`) keeps at most K of
the case's N patch features, scoring at most M candidates; the dataset names it and the budget
(options `selector`, `budget`, `candidates`; see `pathkit_tasks.vqa.evidence`), and each
prediction records what was kept (`evidence`), summarised as the paper's table 4 in metrics.json.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pathkit_core.contracts import INPUT_FEATURES, INPUT_SLIDES, Case, Dataset, PathkitError, RunFacts, Task
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA
from pathkit_tasks._common import most_frequent
from pathkit_tasks.vqa.cases import (
    LETTERS,
    candidate_set_problem,
    choice_problem,
    evidence_problem,
    slide_sets,
)


class MultipleChoiceVQATask(Task):
    """Budgeted multiple-choice VQA over whole cases (PathoArgus, WSI-VQA closed questions)."""

    name: ClassVar[str] = TASK_MULTIPLE_CHOICE_VQA
    description: ClassVar[str] = ("multiple-choice question answering over a case's slides under an evidence "
                                  "budget (PathoArgus, WSI-VQA)")
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES)
    target_format: ClassVar[str] = (
        'the 0-based index of the right choice; meta holds "question" and "choices" (>= 2 distinct), '
        'optionally "capability", "candidate_sets" (lists of slide names, the case\'s slides in order), '
        'and for metrics only "group", "condition", "evidence"'
    )
    prediction_format: ClassVar[str] = (
        'a dict {"answer": choice index or letter "A".., or null for no answer} (other keys kept), '
        'or the index or letter itself; written as {"answer", "letter", "evidence", ...}'
    )
    baselines: ClassVar[tuple[str, ...]] = ("majority-position",)
    evaluate_inputs: ClassVar[tuple[str, ...]] = ("label", "text")

    # ------------------------------------------------------------------ targets

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        problem = choice_problem(case.meta)
        if problem:
            return problem
        n = len(case.meta["choices"])
        if isinstance(case.target, bool) or not isinstance(case.target, int) or not 0 <= case.target < n:
            return f"answer {case.target!r} is not a choice index 0..{n - 1}"
        n_inputs = len(case.features or case.slides)
        problem = candidate_set_problem(case.meta, n_inputs)
        if problem:
            return problem
        sets = slide_sets(case)
        return evidence_problem(case.meta.get("evidence"), n_inputs, max(sets) + 1 if sets else 1)

    def reference(self, case: Case, dataset: Dataset) -> Any:
        meta = case.meta
        return {"answer": case.target, "n_choices": len(meta["choices"]),
                **{k: meta[k] for k in ("capability", "group", "condition") if meta.get(k) is not None}}

    def validate_cases(self, splits: Mapping[str, Sequence[Case]], dataset: Dataset) -> None:
        """The per-case checks, then: the rows of one group (an ESG quartet) share their question,
        choices and candidate-set capacities (PathoArgus: only the target's location changes)."""
        super().validate_cases(splits, dataset)
        bad = group_problems([c for cases in splits.values() for c in cases])
        if bad:
            shown = "; ".join(f"group {g!r}: {a} and {b} differ in their {what}" for g, a, b, what in bad[:5])
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            raise PathkitError(f"dataset {dataset.name!r}: {shown}{more}")

    # ------------------------------------------------------------------ predictions

    @staticmethod
    def _answer(prediction: Any, n: int) -> tuple[int | None, dict[str, Any]]:
        extra: dict[str, Any] = {}
        value = prediction
        if isinstance(prediction, dict):
            if "answer" not in prediction:
                raise ValueError('a dict needs an "answer" (an index, a letter or null)')
            value = prediction["answer"]
            extra = {k: v for k, v in prediction.items() if k not in ("answer", "letter")}
        if value is None:
            return None, extra
        if isinstance(value, str) and len(value.strip()) == 1 and value.strip().upper() in LETTERS[:n]:
            return LETTERS.index(value.strip().upper()), extra
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
            raise ValueError(f"answer {value!r} is not a choice index 0..{n - 1} or a letter A-{LETTERS[n - 1]}")
        return value, extra

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        try:
            self._answer(prediction, len(case.meta["choices"]))
        except ValueError as exc:
            return str(exc)
        return None

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        answer, extra = self._answer(prediction, len(case.meta["choices"]))
        return {"answer": answer, "letter": None if answer is None else LETTERS[answer], **extra}

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        position = most_frequent([t for t in train_targets if t is not None])
        if position is None:
            return None
        out = {}
        for case in test_cases:
            # a question with fewer choices than the majority position gets no answer (counted wrong)
            answer = position if position < len(case.meta["choices"]) else None
            out[case.case_id] = self.output({"answer": answer}, case, dataset)
        return out

    # ------------------------------------------------------------------ evidence selection

    def items(self, cases: Sequence[Case], inputs: Mapping[str, Any], dataset: Dataset,
              facts: RunFacts, *, targets: bool = True) -> Sequence[dict[str, Any]]:
        """Each question's K selected features (`vqa_evidence.EvidenceItems`), never its answer on
        the test split; the selector is fitted on the first split given with targets (train)."""
        from pathkit_tasks.vqa.evidence import evidence_items

        return evidence_items(cases, inputs, dataset, facts, targets=targets)

    def predict(self, model: Any, items: Sequence[dict[str, Any]], facts: RunFacts, *,
                batch_size: int, cfg: Any) -> dict[str, Any]:
        """The reader's answers, each with the evidence record of its question's selection, and
        under a K sweep (`budget=64,128,256,512`) its answers at the other K ("sweep": {K: answer})."""
        from pathkit_core.training.trainer import predict
        from pathkit_tasks.vqa.evidence import attach_evidence, sweep_predictions

        def answers(these: Sequence[dict[str, Any]]) -> dict[str, Any]:
            return predict(model, these, batch_size=batch_size, cfg=cfg)

        out = attach_evidence(answers(items), items)
        for case_id, by_budget in sweep_predictions(answers, items).items():
            main = out[case_id]
            own = str(main["evidence"]["budget"])
            main["sweep"] = {own: main.get("answer"), **{k: (p.get("answer") if isinstance(p, Mapping) else p)
                                                         for k, p in by_budget.items()}}
        return out

    def components(self, dataset: Dataset) -> list[tuple[str, str]]:
        from pathkit_tasks.vqa.evidence import selection_protocol

        protocol = selection_protocol(dataset)
        return [("selector", name) for name in dict.fromkeys((protocol.selector, *protocol.audit))]

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        from pathkit_tasks.vqa.evidence import selection_protocol

        options = dataset.options
        scoring = {"drop_incomplete_groups": True} if options.get("drop_incomplete_groups") else {}
        return {"selection": selection_protocol(dataset).as_dict(), **({"options": scoring} if scoring else {})}

    def run_summary(self, predictions: Mapping[str, Any], references: Mapping[str, Any]) -> dict[str, Any]:
        from pathkit_tasks.vqa.evidence import budget_summary

        budget = budget_summary(predictions)
        return {"budget": budget, "report_sections": ["budget"]} if budget else {}


    # ------------------------------------------------------------------ report

    def report_sections(self, run: Any) -> list[Any]:
        """Accuracy per capability with intervals, QExact, evidence accessibility per selector, the
        evidence budget, every question with its answers."""
        from pathkit_tasks.vqa.sections import vqa_sections

        return vqa_sections(run)

def group_problems(cases: Sequence[Case]) -> list[tuple[str, str, str, str]]:
    """(group, case, first case of the group, what differs) for every row of a group (an ESG
    quartet) whose question, choices or candidate-set capacities differ from the group's first
    row (PathoArgus: across a quartet only the target's location changes)."""
    first: dict[str, Case] = {}
    out = []
    for case in cases:
        group = case.meta.get("group")
        if group is None:
            continue
        seen = first.setdefault(str(group), case)
        for what, key in (("question", lambda c: c.meta["question"]), ("choices", lambda c: list(c.meta["choices"])),
                          ("candidate-set capacities", _capacities)):
            if key(case) != key(seen):
                out.append((str(group), case.case_id, seen.case_id, what))
                break
    return out


def _capacities(case: Case) -> list[int]:
    sets = case.meta.get("candidate_sets")
    return [len(s) for s in sets] if sets else [len(case.features or case.slides)]
