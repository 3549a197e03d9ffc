"""Task `multiple-choice-vqa`: a question, its choices and a case's slides in, one choice out.

A case's `meta` holds "question" and "choices" (two or more distinct strings) and may hold
"capability", "group" (e.g. an ESG quartet id), "condition" and "candidate_sets"; its target is
the 0-based index of the right choice. The answer never reaches a model: items carry the model
target only in training, and readers get the question and choices from `meta`.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pathkit_core.contracts import INPUT_FEATURES, INPUT_SLIDES, TASK_MULTIPLE_CHOICE_VQA, Case, Dataset, Task
from pathkit_core.tasks._common import most_frequent

LETTERS = string.ascii_uppercase


def choice_problem(meta: Any) -> str | None:
    """Why a case's question and choices are unusable (None when they are fine)."""
    if not isinstance(meta, Mapping):
        return "meta holds no question"
    question, choices = meta.get("question"), meta.get("choices")
    if not isinstance(question, str) or not question.strip():
        return "meta['question'] is not a non-empty string"
    if not isinstance(choices, list | tuple) or len(choices) < 2:
        return f"meta['choices'] must list at least two choices, got {choices!r}"
    if not all(isinstance(c, str) and c.strip() for c in choices):
        return "every choice must be a non-empty string"
    if len({c.strip().lower() for c in choices}) != len(choices):
        return f"duplicate choices {list(choices)}"
    return None


class MultipleChoiceVQATask(Task):
    """Budgeted multiple-choice VQA over whole cases (PathoArgus, WSI-VQA closed questions)."""

    name: ClassVar[str] = TASK_MULTIPLE_CHOICE_VQA
    description: ClassVar[str] = "multiple-choice question answering over a case's slides (PathoArgus, WSI-VQA)"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES)
    target_format: ClassVar[str] = (
        'the 0-based index of the right choice; meta holds "question" and "choices" (>= 2 distinct), '
        'optionally "capability", "group", "condition", "candidate_sets"'
    )
    prediction_format: ClassVar[str] = (
        'a dict {"answer": choice index or letter "A".., or null for no answer} (other keys kept), '
        'or the index or letter itself; written as {"answer", "letter", ...}'
    )
    baselines: ClassVar[tuple[str, ...]] = ("majority-position",)

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        problem = choice_problem(case.meta)
        if problem:
            return problem
        n = len(case.meta["choices"])
        if isinstance(case.target, bool) or not isinstance(case.target, int) or not 0 <= case.target < n:
            return f"answer {case.target!r} is not a choice index 0..{n - 1}"
        return None

    def reference(self, case: Case, dataset: Dataset) -> Any:
        meta = case.meta
        return {"answer": case.target, "n_choices": len(meta["choices"]),
                **{k: meta[k] for k in ("capability", "group", "condition") if meta.get(k) is not None}}

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

    def report_sections(self, run: Any) -> list[Any]:
        """Accuracy per capability with intervals, QExact, evidence accessibility per selector, the
        evidence budget, every question with its answers."""
        from pathkit_core.report.vqa import vqa_sections

        return vqa_sections(run)
