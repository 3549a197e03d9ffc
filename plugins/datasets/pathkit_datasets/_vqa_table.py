"""What the multiple-choice VQA datasets share: question rows to cases, the selection options,
slide-disjoint split checks and the answer-position audit.

A question row becomes a `Case` of task `multiple-choice-vqa` (pathkit_tasks.vqa.task): its
slides (or feature files) are its candidate sets concatenated in order, `meta` holds the
question, choices, capability, candidate sets and (for metrics only) group, condition and
planted evidence; the target is the answer index. Every rule on choices, answers, candidate
sets and evidence is the task's (`choice_problem`, `candidate_set_problem`, `evidence_problem`,
`group_problems`); here the problems are reported with the row they come from.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._reports import FEATURE_SUFFIXES
from pathkit_tasks.vqa.cases import LETTERS, candidate_set_problem, choice_problem, evidence_problem, slide_sets
from pathkit_tasks.vqa.task import group_problems


class JsonOption(DatasetOption):
    """An option whose value is a JSON object (given as one, or as JSON text on the command line)."""

    def parse(self, value: Any, dataset: str) -> Any:
        if value is None or isinstance(value, Mapping):
            return None if value is None else dict(value)
        try:
            parsed = json.loads(str(value))
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, Mapping):
            raise PathkitError(f"dataset {dataset!r}: option {self.name}={value!r} is not a JSON object")
        return dict(parsed)


class BudgetOption(DatasetOption):
    """K: one number, or several (64,128,256,512) for a K sweep."""

    def parse(self, value: Any, dataset: str) -> Any:
        from pathkit_tasks.vqa.evidence import budget_sweep

        sweep = budget_sweep(value, dataset)
        return list(sweep) if sweep else super().parse(value, dataset)


# The evidence-selection protocol (pathkit_tasks.vqa.evidence); None: the dataset's default.
SELECTION_OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("selector", "str", None, "evidence selector (pathkit list selectors); default pathoargus"),
    BudgetOption("budget", "int", None, "K: features a reader sees per question (PathoArgus: 512); several "
                  "(64,128,256,512) sweep K: the reader trains at the largest and answers every test question at "
                  "each (accuracy vs K in metrics.json and the report)"),
    DatasetOption("candidates", "int", None, "M: candidates a selector may score per question (PathoArgus: 10000)"),
    JsonOption("selector_options", "json", None, "the selector's own options as a JSON object, e.g. "
               "'{\"relevance\": \"learned\"}' (pathkit info SELECTOR)"),
    DatasetOption("audit_selectors", "str", None, "comma-separated selectors whose accessibility of planted evidence "
                  "is measured beside the run's (default: all, when the cases carry evidence)"),
    # scoring, not selection: the vqa metric's option, passed by the task (MultipleChoiceVQATask.metric_context)
    DatasetOption("drop_incomplete_groups", "bool", False, "leave ESG quartets missing a scored row out of QExact "
                  "(counted) instead of stopping"),
)


def answer_index(value: Any, choices: Sequence[str], where: str) -> int:
    """A 0-based index or a letter (also "2" from a CSV cell) as a choice index; errors name `where`."""
    n = len(choices)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        if len(text) == 1 and text.upper() in LETTERS[:n] and not text.isdigit():
            return LETTERS.index(text.upper())
        if text.lstrip("-").isdigit():
            value = int(text)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PathkitError(f"{where}: answer {value!r} is not a 0-based choice index or a letter A-{LETTERS[n - 1]}")
    if not 0 <= value < n:
        raise PathkitError(f"{where}: answer {value} is out of range for {n} choices (0-based: 0..{n - 1})")
    return value


def json_cell(value: Any, what: str, where: str) -> Any:
    """A list or object cell; JSON text (a CSV cell) is parsed."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{":
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise PathkitError(f"{where}: {what} is not valid JSON ({exc.msg})") from None
    return value


def candidate_sets(value: Any, where: str) -> list[list[str]]:
    """A row's candidate sets: a list of lists of slide names, a list of names (one set) or one name."""
    value = json_cell(value, "candidate_sets", where)
    if isinstance(value, str) and value.strip():
        return [[value.strip()]]
    if not isinstance(value, list) or not value:
        raise PathkitError(f"{where}: candidate_sets must list one or more candidate sets of slides, got {value!r}")
    if all(isinstance(v, str) for v in value):
        value = [value]
    sets = []
    for k, members in enumerate(value):
        if not isinstance(members, list) or not members:
            raise PathkitError(f"{where}: candidate set {k + 1} names no slide")
        if not all(isinstance(m, str) and m.strip() for m in members):
            raise PathkitError(f"{where}: candidate set {k + 1} holds a slide name that is not a non-empty string")
        sets.append([m.strip() for m in members])
    return sets


@dataclass
class QuestionRow:
    """One question row resolved into its case, with where it came from."""

    place: str
    case: Case
    split: str | None


def question_case(*, where: str, case_id: str, patient_id: str, question: Any, choices: Any, answer: Any,
                  files: Sequence[Path], sets: Sequence[Sequence[str]] | None, capability: Any = None,
                  group: Any = None, condition: Any = None, evidence: Any = None,
                  extra: Mapping[str, Any] | None = None) -> Case:
    """The Case of a question row, checked by the task's rules; errors name `where`."""
    choices = json_cell(choices, "choices", where)
    meta: dict[str, Any] = {"question": question, "choices": list(choices) if isinstance(choices, list) else choices}
    problem = choice_problem(meta)
    if problem:
        raise PathkitError(f"{where}: {problem}")
    target = answer_index(answer, meta["choices"], where)
    for key, value in (("capability", capability), ("group", group), ("condition", condition)):
        if value not in (None, ""):
            meta[key] = str(value)
    if sets is not None:
        meta["candidate_sets"] = [list(s) for s in sets]
    problem = candidate_set_problem(meta, len(files))
    if problem:
        raise PathkitError(f"{where}: {problem}")
    kinds = {"features" if f.suffix.lower() in FEATURE_SUFFIXES else "slides" for f in files}
    if len(kinds) > 1:
        raise PathkitError(f"{where}: mixes slide files and feature files; give one kind per question")
    evidence = json_cell(evidence, "evidence", where) if evidence not in (None, "") else None
    if evidence is not None:
        meta["evidence"] = evidence
    meta.update(extra or {})
    kind = kinds.pop() if kinds else "slides"
    case = Case(case_id, patient_id, target=target, meta=meta,
                **{kind: tuple(files)})  # type: ignore[arg-type]
    sets_of = slide_sets(case)
    problem = evidence_problem(evidence, len(files), max(sets_of) + 1 if sets_of else 1)
    if problem:
        raise PathkitError(f"{where}: {problem}")
    return case


def check_groups(rows: Sequence[QuestionRow], where: Path) -> None:
    """Rows of one group share question, choices and set capacities (the task's rule), by row."""
    place = {r.case.case_id: r.place for r in rows}
    bad = group_problems([r.case for r in rows])
    if bad:
        shown = "; ".join(f"group {g!r}: {place[a]} (question {a}) and {place[b]} (question {b}) differ in their "
                          f"{what}" for g, a, b, what in bad[:10])
        raise PathkitError(f"{where}: {len(bad)} row(s) disagree with their group: {shown}")


def check_slides_disjoint(parts: Mapping[str, Sequence[str]], cases: Mapping[str, Case], where: Path) -> None:
    """No slide (WSI) in questions of two parts (PathoArgus: patient- and WSI-disjoint splits)."""
    parts_of: dict[str, set[str]] = defaultdict(set)
    for part, ids in parts.items():
        for case_id in ids:
            for f in cases[case_id].slides or cases[case_id].features:
                parts_of[str(f)].add(part)
    leaked = {s: sorted(p) for s, p in parts_of.items() if len(p) > 1}
    if leaked:
        shown = ", ".join(f"{Path(s).name} ({' and '.join(p)})" for s, p in sorted(leaked.items())[:20])
        raise PathkitError(f"{where}: {len(leaked)} slide(s) are in questions of two parts (WSI leakage): {shown}")


def answer_position_audit(parts: Mapping[str, Sequence[Case]]) -> dict[str, dict[str, Any]]:
    """Answer positions per part and capability: {part: {"all" | capability: {"A": n, ...,
    "imbalance": max - min over the positions the questions offer}}}. PathoArgus balances them to
    within one question per split and two per bench capability."""
    out: dict[str, dict[str, Any]] = {}
    for part, cases in parts.items():
        if not cases:
            continue
        groups: dict[str, list[Case]] = {"all": list(cases)}
        for case in cases:
            if case.meta.get("capability"):
                groups.setdefault(str(case.meta["capability"]), []).append(case)
        out[part] = {}
        for name, members in groups.items():
            width = max(len(c.meta["choices"]) for c in members)
            counts = Counter(LETTERS[c.target] for c in members)
            row: dict[str, Any] = {LETTERS[j]: counts.get(LETTERS[j], 0) for j in range(width)}
            row["imbalance"] = max(row.values()) - min(row.values())
            row["questions"] = len(members)
            out[part][name] = row
    return out


def answer_option_audit(parts: Mapping[str, Sequence[Case]]) -> dict[str, dict[str, Any]]:
    """How often each answer option is the right one, per part and capability (PathoArgus audits
    "semantic choice support" apart from answer positions: balanced positions leave textual signal
    when one clinical option is usually right): {part: {"all" | capability: [{"option", "offered",
    "correct", "support" = correct / offered}, ...]}}, options (white space and case folded) by
    support, then by how often they are offered."""
    from pathkit_tasks.vqa.cases import normalise_text

    out: dict[str, dict[str, Any]] = {}
    for part, cases in parts.items():
        if not cases:
            continue
        tallies: dict[str, dict[str, list[int]]] = {}
        for case in cases:
            for name in ("all", *([str(case.meta["capability"])] if case.meta.get("capability") else [])):
                mine = tallies.setdefault(name, {})
                for j, choice in enumerate(case.meta["choices"]):
                    tally = mine.setdefault(normalise_text(choice), [0, 0])
                    tally[0] += 1
                    tally[1] += int(j == case.target)
        out[part] = {name: sorted(({"option": text, "offered": n, "correct": k, "support": k / n}
                                   for text, (n, k) in mine.items()),
                                  key=lambda r: (-r["support"], -r["offered"], r["option"]))
                     for name, mine in tallies.items()}
    return out
