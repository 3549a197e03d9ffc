"""The `vqa` metric against hand-computed Overall, per-capability accuracy and QExact, unanswered
rows counted wrong, parse failures, constant groups, evidence accessibility, and `pathkit score`."""

from __future__ import annotations

import json

import pytest

from pathkit_core.contracts import PathkitError

# 15 rows: GR q1-q2, CSI q3, three ESG quartets g1 (all right), g2 (one unparseable), g3 (one constant answer);
# each quartet's rows are its four evidence states (g3 in another order)
STATES = ("set1", "set2", "set3", "absent")
REFERENCES = [
    {"id": "q1", "answer": 0, "capability": "GR"},
    {"id": "q2", "answer": "B", "capability": "GR"},
    {"id": "q3", "answer": 2, "capability": "CSI"},
    *({"id": f"e{k}", "answer": k - 1, "capability": "ESG", "group": "g1", "condition": STATES[k - 1]}
      for k in range(1, 5)),
    *({"id": f"e{k}", "answer": 8 - k, "capability": "ESG", "group": "g2", "condition": STATES[k - 5]}
      for k in range(5, 9)),
    *({"id": f"f{k}", "answer": k - 1, "capability": "ESG", "group": "g3", "condition": STATES[k - 2]}
      for k in range(1, 5)),
]
PREDICTIONS = [
    {"id": "q1", "answer": "A"},          # right (a letter)
    {"id": "q2", "answer": None},         # unanswered: wrong
    {"id": "q3", "answer": 2},            # right
    {"id": "e1", "answer": 0}, {"id": "e2", "answer": 1}, {"id": "e3", "answer": "C"}, {"id": "e4", "answer": 3},
    {"id": "e5", "answer": "D"},          # right
    {"id": "e6", "answer": "I think it is C"},  # free text the strict parser refuses: wrong, a parse failure
    {"id": "e7", "answer": 1}, {"id": "e8", "answer": 0},
    *({"id": f"f{k}", "answer": "B"} for k in range(1, 5)),  # one constant choice: only f2 right
]
# Overall's 95% interval: Wilson's score interval of 10 of 15 (scipy's binomtest(...).proportion_ci,
# method "wilson", gives the same), as the report's capability table shows it; QExact's of 1 of 3 groups
HAND = {"Overall": 10 / 15, "Overall_ci_low": 0.4171354774, "Overall_ci_high": 0.8482367556,
        "GR": 1 / 2, "CSI": 1.0, "ESG": 8 / 12, "QExact": 1 / 3, "n_groups": 3.0,
        "QExact_ci_low": 0.0614919447, "QExact_ci_high": 0.7923403992,
        "constant_group_fraction": 1 / 3, "unanswered_rate": 2 / 15, "parse_failure_rate": 1 / 15,
        "n_questions": 15.0,
        # per evidence state: set1 = e1, e5, f2 all right; set2 = e2 right, e6 unparseable, f3 wrong;
        # set3 = e3, e7 right, f4 wrong; absent = e4, e8 right, f1 wrong
        "ESG@set1": 1.0, "ESG@set2": 1 / 3, "ESG@set3": 2 / 3, "ESG@absent": 2 / 3}


def _metric():
    from pathkit_metrics.vqa import VQAMetric

    return VQAMetric()


def _fields(records):
    return [{k: v for k, v in r.items() if k != "id"} for r in records]


def test_hand_computed_scores():
    result = _metric().compute(_fields(PREDICTIONS), _fields(REFERENCES), ids=[r["id"] for r in REFERENCES])
    assert result.summary == pytest.approx(HAND)
    from scipy.stats import binomtest

    ci = binomtest(10, 15).proportion_ci(confidence_level=0.95, method="wilson")
    assert (result.summary["Overall_ci_low"], result.summary["Overall_ci_high"]) == pytest.approx(
        (ci.low, ci.high), abs=1e-9)
    ci = binomtest(1, 3).proportion_ci(confidence_level=0.95, method="wilson")
    assert (result.summary["QExact_ci_low"], result.summary["QExact_ci_high"]) == pytest.approx(
        (ci.low, ci.high), abs=1e-9)
    table = result.per_case
    assert table.filter(table["id"] == "e6")["parse_failed"].item() is True
    assert table.filter(table["id"] == "q2")["correct"].item() is False


def test_plain_answers_and_no_groups():
    result = _metric().compute([1, "b", None, "Answer: A"], [1, 1, 0, 0])
    # no capability, no group: Overall only; "b" is a letter, "Answer: A" parses strictly
    assert result.summary["Overall"] == pytest.approx(3 / 4)
    assert "QExact" not in result.summary and result.summary["parse_failure_rate"] == 0.0


@pytest.mark.parametrize(("prediction", "reference", "message"), [
    (5, {"answer": 0, "n_choices": 4}, "not a choice index 0..3"),
    (0, {"answer": None}, "has no answer"),
    (0, {"answer": "maybe"}, "not a choice index or letter"),
    ([0], {"answer": 0}, "not a choice index, letter"),
    (0, {"answer": 0, "capability": "Overall"}, "may not be called"),
])
def test_bad_rows_are_errors_naming_the_row(prediction, reference, message):
    with pytest.raises(PathkitError, match=message):
        _metric().compute([prediction], [reference], ids=["row-7"])


def test_evidence_accessibility_per_selector_and_capability():
    preds = [{"answer": 0, "evidence": {"accessible": True, "accessible_by": {"flat-topk": False, "uniform": False}}},
             {"answer": 0, "evidence": {"accessible": True, "accessible_by": {"flat-topk": True, "uniform": False}}},
             {"answer": 0, "evidence": {"accessible": False, "accessible_by": {"flat-topk": False, "uniform": True}}},
             {"answer": 0}]  # no evidence known: left out of accessibility
    refs = [{"answer": 0, "capability": "CSI"}, {"answer": 0, "capability": "ESG"},
            {"answer": 0, "capability": "ESG"}, {"answer": 0, "capability": "GR"}]
    summary = _metric().compute(preds, refs).summary
    assert summary["evidence_accessibility"] == pytest.approx(2 / 3)
    assert summary["evidence_accessibility:ESG"] == pytest.approx(1 / 2)
    assert summary["evidence_accessibility@flat-topk"] == pytest.approx(1 / 3)
    assert summary["evidence_accessibility@flat-topk:CSI"] == 0.0
    assert summary["evidence_accessibility@uniform:ESG"] == pytest.approx(1 / 2)
    assert "evidence_accessibility:GR" not in summary


def test_pathkit_score_on_json_lists(cli, tmp_path):
    (tmp_path / "p.json").write_text(json.dumps(PREDICTIONS))
    (tmp_path / "r.json").write_text(json.dumps(REFERENCES))
    result = cli("score", "--metric", "vqa", "--predictions", tmp_path / "p.json", "--references",
                 tmp_path / "r.json", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["vqa"] == pytest.approx(HAND)
    # whole records cannot be mixed with a metric that reads one value per record
    mixed = cli("score", "--metric", "vqa,classification", "--predictions", tmp_path / "p.json",
                "--references", tmp_path / "r.json")
    assert mixed.exit_code != 0 and "separate calls" in mixed.stdout + mixed.stderr


def test_qexact_refuses_incomplete_quartets_unless_told_to_drop_them():
    keep = [i for i, r in enumerate(REFERENCES) if r["id"] not in ("e6", "f3")]  # g2 and g3 lose a row each
    preds, refs = [_fields(PREDICTIONS)[i] for i in keep], [_fields(REFERENCES)[i] for i in keep]
    ids = [REFERENCES[i]["id"] for i in keep]
    with pytest.raises(PathkitError, match=r"2 group\(s\) are not: g2 \(3 of 4 rows\), g3 \(3 of 4 rows\).*"
                                           "drop_incomplete_groups=true"):
        _metric().compute(preds, refs, ids=ids)
    summary = _metric().compute(preds, refs, ids=ids, context={"options": {"drop_incomplete_groups": True}}).summary
    assert summary["n_groups_dropped"] == 2.0 and summary["n_groups"] == 1.0
    assert summary["QExact"] == 1.0 and summary["constant_group_fraction"] == 0.0  # g1 alone
    assert summary["Overall"] == pytest.approx(10 / 13)  # the rows themselves are all still scored
    # other group sizes by option
    pairs = _metric().compute([0, 0, 1, 1], [{"answer": 0, "group": "a"}, {"answer": 0, "group": "a"},
                                             {"answer": 1, "group": "b"}, {"answer": 0, "group": "b"}],
                              context={"options": {"group_size": 2}}).summary
    assert pairs["QExact"] == 0.5


def test_accuracy_at_each_k_of_a_budget_sweep():
    preds = [{"answer": 0, "sweep": {"16": 1, "64": 0}}, {"answer": 1, "sweep": {"16": 1, "64": "B"}},
             {"answer": None, "sweep": {"16": None, "64": 2}}, {"answer": 3, "sweep": {"16": 3, "64": 3}}]
    refs = [{"answer": 0, "capability": "GR"}, {"answer": 1, "capability": "CSI"}, {"answer": 2, "capability": "CSI"},
            {"answer": 0, "capability": "GR"}]
    summary = _metric().compute(preds, refs).summary
    assert summary["Overall@K=16"] == pytest.approx(1 / 4) and summary["Overall@K=64"] == pytest.approx(3 / 4)
    assert summary["CSI@K=64"] == 1.0 and summary["GR@K=16"] == 0.0 and summary["Overall"] == pytest.approx(2 / 4)


def test_a_run_passes_drop_incomplete_groups_from_the_dataset_option():
    from pathkit_datasets.pathoargus import PathoArgus

    from pathkit_core.evaluation.runner import context_for, metric_context
    from pathkit_tasks.vqa.task import MultipleChoiceVQATask

    task = MultipleChoiceVQATask()
    assert "options" not in task.metric_context(PathoArgus(None), None)
    ctx = task.metric_context(PathoArgus(None, drop_incomplete_groups="true"), None)
    assert context_for(_metric(), metric_context("pathoargus", ctx))["options"]["drop_incomplete_groups"] is True
