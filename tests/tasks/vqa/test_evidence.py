"""The multiple-choice VQA task's evidence machinery: the selector component kind, the strict answer
parser, candidate sets and planted evidence, group checks, accessibility and the budget summary."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, PathkitError
from pathkit_tasks.vqa.cases import parse_answer, reader_meta
from pathkit_tasks.vqa.selection import EvidencePool, Selection, Selector
from pathkit_tasks.vqa.task import MultipleChoiceVQATask

CHOICES = ["adenocarcinoma", "lymphoma", "melanoma", "sarcoma"]


@pytest.mark.parametrize(("text", "expected"), [
    ("B", 1), (" (C) ", 2), ("Answer: D", 3), ("The answer is A.", 0), ("B. lymphoma", 1), ("[A]", 0),
    ("b", None),  # a lone lower-case letter is also a word
    ("B. melanoma", None),  # the letter and the text disagree
    ("E", None), ("I think B", None), ("", None), (None, None), ("B or C", None),
])
def test_strict_answer_parser(text, expected):
    assert parse_answer(text, CHOICES) == expected


def _case(**meta):
    base = {"question": "Which lesion?", "choices": CHOICES}
    return Case("q1", "p1", target=meta.pop("target", 0), features=meta.pop("files", ()), meta={**base, **meta})


def test_candidate_sets_and_evidence_checks():
    task = MultipleChoiceVQATask()
    files = ("a.safetensors", "b.safetensors", "c.safetensors")
    assert task.check_target(_case(files=files, candidate_sets=[["a", "b"], ["c"]]), None) is None
    for meta, why in (({"candidate_sets": [["a", "b"], []]}, "candidate set 2 names no slide"),
                      ({"candidate_sets": [["a"], ["c"]]}, "name 2 slide(s) but the case has 3"),
                      ({"candidate_sets": []}, "one or more candidate sets"),
                      ({"evidence": {"regions": [{"slide": 3, "box": [0, 0, 1, 1]}]}}, "slide ordinal 0..2"),
                      ({"evidence": {"regions": [{"slide": 0, "box": [5, 0, 1, 1]}]}}, "x1 > x0"),
                      ({"evidence": {"sets": [1]}}, "not a candidate set 0..0"),
                      ({"evidence": {}}, "must be"),
                      ({"evidence": {"sets": [0], "min_overlap": 0}}, "min_overlap 0 must be"),
                      ({"target": 4}, "not a choice index 0..3")):
        assert why in task.check_target(_case(files=files, **meta), None)


def test_group_members_must_share_question_choices_and_capacities():
    task = MultipleChoiceVQATask()
    rows = [Case(f"e{k}", "p", target=k, features=("a", "b", "c"),
                 meta={"question": "Which set holds melanoma?", "choices": ["Set 1", "Set 2", "Set 3", "None"],
                       "group": "g1", "candidate_sets": [["a"], ["b"], ["c"]]}) for k in range(4)]
    task.validate_cases({"test": rows}, type("D", (), {"name": "d"})())
    odd = Case("e9", "p", target=0, features=("a", "b", "c"),
               meta={**rows[0].meta, "candidate_sets": [["a", "b"], ["c"]]})
    with pytest.raises(PathkitError, match=r"group 'g1': e9 and e0 differ in their candidate-set capacities"):
        task.validate_cases({"test": [*rows, odd]}, type("D", (), {"name": "d"})())


def test_readers_never_see_the_metric_only_keys():
    meta = {"question": "q", "choices": ["a", "b"], "capability": "ESG", "group": "g", "condition": "set2",
            "evidence": {"sets": [0]}, "candidate_sets": [["x"]]}
    assert reader_meta(meta) == {"question": "q", "choices": ["a", "b"], "capability": "ESG",
                                 "candidate_sets": [["x"]]}


def _pool(sizes=(3, 2, 4), sets=(0, 0, 1)):
    slide = np.concatenate([np.full(n, j) for j, n in enumerate(sizes)])
    coords = np.stack([np.arange(len(slide)) * 100, np.zeros(len(slide))], axis=1)
    return EvidencePool(np.eye(len(slide), dtype=np.float16), coords, slide, sets, "q", ("a", "b"), "c1")


def test_selection_records_its_allocation_in_slide_order():
    pool = _pool()
    selection = Selection.of([7, 0, 3, 0, 8], pool, n_scored=5)
    assert selection.indices.tolist() == [0, 3, 7, 8]  # merged, de-duplicated, slide order restored
    assert selection.per_slide == [1, 1, 2] and selection.per_set == [2, 2]
    with pytest.raises(PathkitError, match="outside 0..8"):
        Selection.of([9], pool)
    assert pool.rows([1, 2]).dtype == np.float32 and pool.n_sets == 2


def test_accessibility_of_planted_evidence():
    from pathkit_tasks.vqa.evidence import evidence_accessible

    pool = _pool()  # row r sits at x = 100 r; tiles are 100 px wide
    region = {"regions": [{"slide": 2, "box": [660, 0, 900, 100]}]}  # 40% of row 6, all of rows 7 and 8
    assert evidence_accessible(region, Selection.of([8], pool), pool, [100.0] * 3)
    assert not evidence_accessible(region, Selection.of([6], pool), pool, [100.0] * 3)  # 40% < half
    assert evidence_accessible({**region, "min_overlap": 0.4}, Selection.of([6], pool), pool, [100.0] * 3)
    # row 8 lies in slide 2, but the region names slide 1: no hit
    assert not evidence_accessible({"regions": [{"slide": 1, "box": [800, 0, 900, 100]}]},
                                   Selection.of([8], pool), pool, [100.0] * 3)
    # an absence row needs every listed set seen
    assert evidence_accessible({"sets": [0, 1]}, Selection.of([0, 8], pool), pool, [100.0] * 3)
    assert not evidence_accessible({"sets": [0, 1]}, Selection.of([0, 1], pool), pool, [100.0] * 3)


def test_budget_summary_as_table_4():
    from pathkit_tasks.vqa.evidence import budget_summary

    records = {f"q{i}": {"answer": 0, "evidence": {"n_available": n, "n_selected": min(n, 512), "budget": 512,
                                                   "candidates": 10000, "selector": "pathoargus"}}
               for i, n in enumerate([300, 20_000, 60_000, 388_637])}
    out = budget_summary(records)
    assert out["available_total"] == 468_937 and out["selected_total"] == 300 + 3 * 512
    assert out["retention"] == pytest.approx(1836 / 468_937)
    assert out["available_median"] == 40_000 and out["available_max"] == 388_637
    assert out["above_10000_fraction"] == 0.75 and out["above_50000_fraction"] == 0.5
    assert out["budget_K"] == 512 and out["candidates_M"] == 10000
    assert budget_summary({"q": {"answer": 1}}) == {}


def test_selection_protocol_checks_the_dataset_options():
    from pathkit_tasks.vqa.evidence import selection_protocol

    class D:
        name = "d"
        task_defaults = {"budget": 12, "candidates": 48}

        def __init__(self, **options):
            self.options = options

    assert selection_protocol(D()).budget == 12 and selection_protocol(D()).selector == "uniform"
    assert selection_protocol(D(budget=None, candidates=64)).candidates == 64  # None: the default
    with pytest.raises(PathkitError, match="must be at least the budget"):
        selection_protocol(D(budget=100))
    with pytest.raises(PathkitError, match="positive number"):
        selection_protocol(D(budget=0))
    with pytest.raises(PathkitError, match="JSON object"):
        selection_protocol(D(selector_options="grid"))


class Everything(Selector):
    """A third-party selector: every row (for small cases)."""

    name = "everything"
    description = "every row"
    default_options = {"stride": 1}

    def select(self, pool, *, budget, candidates):
        return Selection.of(range(0, pool.n, self.options["stride"]), pool)


def test_a_third_party_selector_is_listed_and_described(fresh_registry, cli):
    class P:
        @hookimpl
        def register_selectors(self, register):
            register(Everything)

    registry = fresh_registry({"mine": P()})
    assert registry.names("selector") == ["everything"]
    listed = json.loads(cli("list", "selectors", "--json").stdout)
    assert listed[0]["name"] == "everything" and listed[0]["default_options"] == {"stride": 1}
    assert listed[0]["plugin"] == "mine"
    with pytest.raises(PathkitError, match="has no option"):
        Everything(step=2)


def test_register_selectors_refuses_a_class_that_is_not_a_selector(fresh_registry):
    class NotOne:
        name = "nope"

    class P:
        @hookimpl
        def register_selectors(self, register):
            register(NotOne)

    registry = fresh_registry({"bad": P()})
    assert registry.records["bad"].status == "error"
    assert "not a subclass of pathkit_tasks.vqa.selection.Selector" in registry.records["bad"].error
