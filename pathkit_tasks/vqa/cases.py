"""The case format of the multiple-choice VQA task: choices and answers, candidate slide sets,
planted-evidence records and what a reader may see of a case's meta."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from pathkit_core.contracts import Case

LETTERS = string.ascii_uppercase
# Case meta that metrics get and readers never see (an ESG row's condition is its answer).
READER_HIDDEN = ("group", "condition", "evidence")

_SPACES = re.compile(r"\s+")
# A strict answer: the letter alone, maybe bracketed, maybe after "Answer:" / "The answer is",
# maybe followed by "." / ")" / ":" and the text of that very choice; nothing else parses.
_ANSWER = re.compile(
    r"^\s*(?:(?:the\s+)?(?:correct\s+)?answer(?:\s+is)?\s*[:\-]?\s*)?"
    r"[(\[]?(?P<letter>[A-Z])[)\]]?(?:\s*[.:)]\s*(?P<rest>.*?))?\s*[.]?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def normalise_text(text: str) -> str:
    """White space collapsed and case folded: the second match WSI-VQA answers get."""
    return _SPACES.sub(" ", str(text)).strip().casefold()


def parse_answer(text: Any, choices: Sequence[str] | int) -> int | None:
    """The choice index a free-text answer names, by the strict rule above, else None.

    `choices` is the choice texts (trailing text after the letter must then be that choice's
    text) or just their number. Lower-case lone letters are refused ("a" is also a word)."""
    if not isinstance(text, str):
        return None
    n = choices if isinstance(choices, int) else len(choices)
    match = _ANSWER.match(text)
    if match is None:
        return None
    letter = match.group("letter")
    if not letter.isupper():
        return None
    index = LETTERS.index(letter)
    if index >= n:
        return None
    rest = match.group("rest")
    if rest:
        if isinstance(choices, int) or normalise_text(rest).rstrip(".") != normalise_text(choices[index]).rstrip("."):
            return None
    return index


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
    if len({normalise_text(c) for c in choices}) != len(choices):
        return f"duplicate choices {list(choices)}"
    if len(choices) > len(LETTERS):
        return f"{len(choices)} choices; at most {len(LETTERS)} can be lettered"
    return None


def candidate_set_problem(meta: Mapping[str, Any], n_inputs: int) -> str | None:
    """Why meta['candidate_sets'] does not describe the case's `n_inputs` slides (None when fine)."""
    sets = meta.get("candidate_sets")
    if sets is None:
        return None
    if not isinstance(sets, list | tuple) or not sets:
        return f"meta['candidate_sets'] must list one or more candidate sets, got {sets!r}"
    for k, members in enumerate(sets):
        if not isinstance(members, list | tuple) or not members:
            return f"candidate set {k + 1} names no slide"
    total = sum(len(members) for members in sets)
    if total != n_inputs:
        return f"the candidate sets name {total} slide(s) but the case has {n_inputs} slide or feature file(s)"
    return None


def slide_sets(case: Case) -> tuple[int, ...]:
    """The candidate set (0, 1, ...) of each of the case's slides or feature files, in order."""
    n = len(case.features or case.slides)
    sets = case.meta.get("candidate_sets")
    if not sets:
        return (0,) * n
    return tuple(k for k, members in enumerate(sets) for _ in members)


def evidence_problem(evidence: Any, n_inputs: int, n_sets: int) -> str | None:
    """Why meta['evidence'] (planted evidence: regions and/or sets) is malformed."""
    if evidence is None:
        return None
    if not isinstance(evidence, Mapping) or not (evidence.get("regions") or evidence.get("sets")):
        return f'meta[\'evidence\'] must be {{"regions": [...], "sets": [...]}}, got {evidence!r}'
    for region in evidence.get("regions") or ():
        slide, box = (region.get("slide"), region.get("box")) if isinstance(region, Mapping) else (None, None)
        if isinstance(slide, bool) or not isinstance(slide, int) or not 0 <= slide < n_inputs:
            return f"evidence region {region!r}: 'slide' must be a slide ordinal 0..{n_inputs - 1}"
        if not isinstance(box, list | tuple) or len(box) != 4 or not all(isinstance(v, int | float) for v in box) \
                or box[2] <= box[0] or box[3] <= box[1]:
            return f"evidence region {region!r}: 'box' must be [x0, y0, x1, y1] level-0 pixels with x1 > x0, y1 > y0"
    for s in evidence.get("sets") or ():
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < n_sets:
            return f"evidence set {s!r} is not a candidate set 0..{n_sets - 1}"
    overlap = evidence.get("min_overlap", 0.5)
    if isinstance(overlap, bool) or not isinstance(overlap, int | float) or not 0 < overlap <= 1:
        return f"evidence min_overlap {overlap!r} must be a fraction of a tile in (0, 1]"
    return None


def reader_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The case meta a reader gets: everything but the metric-only keys."""
    return {k: v for k, v in meta.items() if k not in READER_HIDDEN}
