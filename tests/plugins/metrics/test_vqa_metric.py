"""The `vqa` metric against hand-computed Overall, per-capability accuracy and QExact, unanswered
rows counted wrong, parse failures, constant groups, evidence accessibility, and `pathkit score`."""

from __future__ import annotations

import json

import pytest

from pathkit_core.contracts import PathkitError

# 15 rows: GR q1-q2, CSI q3, three ESG quartets g1 (all right), g2 (one unparseable), g3 (one constant answer)
REFERENCES = [
    {"id": "q1", "answer": 0, "capability": "GR"},
    {"id": "q2", "answer": "B", "capability": "GR"},
    {"id": "q3", "answer": 2, "capability": "CSI"},
    *({"id": f"e{k}", "answer": k - 1, "capability": "ESG", "group": "g1"} for k in range(1, 5)),
    *({"id": f"e{k}", "answer": 8 - k, "capability": "ESG", "group": "g2"} for k in range(5, 9)),
    *({"id": f"f{k}", "answer": k - 1, "capability": "ESG", "group": "g3"} for k in range(1, 5)),
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
# method "wilson", gives the same), as the report's capability table shows it
HAND = {"Overall": 10 / 15, "Overall_ci_low": 0.4171354774, "Overall_ci_high": 0.8482367556,
        "GR": 1 / 2, "CSI": 1.0, "ESG": 8 / 12, "QExact": 1 / 3, "n_groups": 3.0,
        "constant_group_fraction": 1 / 3, "unanswered_rate": 2 / 15, "parse_failure_rate": 1 / 15,
        "n_questions": 15.0}


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
