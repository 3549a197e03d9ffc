"""classification metric: hand-computed AUROC, AP, F1, ECE, Brier, curves, CI and every error path."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pathkit_metrics.classification import (
    ClassificationMetric,
    _WeightedAuroc,
    auroc,
    average_precision,
    binary_curves,
    calibration_bins,
    expected_calibration_error,
    pr_points,
    reliability_table,
    roc_points,
)

from pathkit_core.contracts import PathkitError

# The textbook example: scores 0.1, 0.4, 0.35, 0.8 for labels 0, 0, 1, 1.
SCORES = [0.1, 0.4, 0.35, 0.8]
LABELS = [0, 0, 1, 1]


def compute(preds, refs, **options):
    return ClassificationMetric().compute(preds, refs, ids=[f"c{i}" for i in range(len(refs))],
                                          context={"options": options})


def test_binary_example_by_hand():
    result = compute(SCORES, LABELS, n_resamples=0)
    s = result.summary
    # AUROC: of the 4 (positive, negative) pairs, 0.35 < 0.4 is the only misordered one -> 3/4.
    assert s["AUROC"] == pytest.approx(0.75)
    # AP: thresholds 0.8 (R .5, P 1), 0.4 (R .5, P .5), 0.35 (R 1, P 2/3): 0.5*1 + 0.5*2/3.
    assert s["AP"] == pytest.approx(0.5 + 0.5 * 2 / 3)
    # argmax at 0.5: only 0.8 is called positive -> TP 1, FP 0, FN 1, TN 2.
    assert s["accuracy"] == pytest.approx(0.75)
    assert s["sensitivity"] == pytest.approx(0.5) and s["specificity"] == pytest.approx(1.0)
    assert s["balanced_accuracy"] == pytest.approx(0.75)
    assert s["F1"] == pytest.approx(2 * 1 / (2 * 1 + 0 + 1))
    # ECE, 10 bins: bins 1 (.1 vs 0), 3 (.35 vs 1), 4 (.4 vs 0), 8 (.8 vs 1), one case each.
    assert s["ECE"] == pytest.approx((0.1 + 0.65 + 0.4 + 0.2) / 4)
    # Brier: mean of .01, .16, .4225, .04.
    assert s["Brier"] == pytest.approx((0.01 + 0.16 + 0.4225 + 0.04) / 4)
    assert s["n_cases"] == 4 and s["n_positive"] == 2 and s["prevalence"] == 0.5
    # no bootstrap asked for: no AUROC bounds at all (NaN bounds would mean "not estimable")
    assert "AUROC_ci_low" not in s and "AUROC_ci_high" not in s


def test_ties_count_one_half():
    assert auroc([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1]) == pytest.approx(0.5)
    # pairs: (0.6,0.2)=1, (0.6,0.6)=0.5, (0.9,0.2)=1, (0.9,0.6)=1 -> 3.5/4
    assert auroc([0.2, 0.6, 0.6, 0.9], [0, 0, 1, 1]) == pytest.approx(0.875)
    assert auroc([0.9, 0.1], [0, 1]) == 0.0
    assert math.isnan(auroc([0.3, 0.4], [1, 1]))


def test_roc_and_pr_points_by_hand():
    roc = roc_points(SCORES, LABELS)
    assert roc["fpr"] == [0.0, 0.0, 0.5, 0.5, 1.0]
    assert roc["tpr"] == [0.0, 0.5, 0.5, 1.0, 1.0]
    assert roc["threshold"][0] == math.inf and roc["threshold"][1:] == [0.8, 0.4, 0.35, 0.1]
    pr = pr_points(SCORES, LABELS)
    assert pr["recall"] == [0.5, 0.5, 1.0, 1.0]
    assert pr["precision"] == pytest.approx([1.0, 0.5, 2 / 3, 0.5])
    # trapezoid area under the ROC points equals the rank AUROC
    assert np.trapezoid(roc["tpr"], roc["fpr"]) == pytest.approx(0.75)
    assert average_precision(SCORES, LABELS) == pytest.approx(5 / 6)
    assert math.isnan(average_precision([0.2, 0.3], [0, 0]))


def test_per_case_rows_rebuild_the_curves():
    table = compute(SCORES, LABELS, n_resamples=0).per_case.sort("prob_positive", descending=True)
    assert table["id"].to_list() == ["c3", "c1", "c2", "c0"]
    assert table["roc_fpr"].to_list() == [0.0, 0.5, 0.5, 1.0]
    assert table["roc_tpr"].to_list() == [0.5, 0.5, 1.0, 1.0]
    assert table["pr_precision"].to_list() == pytest.approx([1.0, 0.5, 2 / 3, 0.5])
    assert table["calibration_bin"].to_list() == [8, 4, 3, 1]
    assert table["correct"].to_list() == [True, True, False, True]


def test_calibration_bins_edges_and_reliability_table():
    # a value on an edge belongs to the upper bin (0.3 -> 3 despite 0.3*10 = 2.999...), 1.0 to the last
    assert calibration_bins(np.array([0.0, 0.3, 0.7, 0.99, 1.0]), 10).tolist() == [0, 3, 7, 9, 9]
    table = reliability_table([0.05, 0.15, 0.12, 0.95], [0, 1, 0, 1], n_bins=10)
    assert [r["count"] for r in table] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 1]
    assert table[1]["mean_predicted"] == pytest.approx(0.135) and table[1]["observed_rate"] == 0.5
    assert math.isnan(table[2]["mean_predicted"])
    # ECE by hand: (1*.05 + 2*|.135-.5| + 1*.05) / 4
    assert expected_calibration_error([0.05, 0.15, 0.12, 0.95], [0, 1, 0, 1]) == pytest.approx(
        (0.05 + 2 * 0.365 + 0.05) / 4)
    # 5 bins: bin 0 holds .05, .15, .12 (mean 0.32/3, observed 1/3), bin 4 holds .95 (observed 1)
    assert compute([0.05, 0.15, 0.12, 0.95], [0, 1, 0, 1], n_bins=5, n_resamples=0).summary["ECE"] == pytest.approx(
        (3 * abs(0.32 / 3 - 1 / 3) + 0.05) / 4)
    curves = binary_curves(SCORES, LABELS, n_bins=4)
    assert {"roc", "pr", "reliability"} <= set(curves) and len(curves["reliability"]) == 4


def test_prediction_formats_agree():
    as_float = compute(SCORES, LABELS, n_resamples=0).summary
    as_list = compute([[1 - p, p] for p in SCORES], LABELS, n_resamples=0).summary
    as_dict = compute([{"probabilities": [1 - p, p], "label": int(p > 0.5)} for p in SCORES], LABELS,
                      n_resamples=0).summary
    assert as_float == pytest.approx(as_list, nan_ok=True) and as_float == pytest.approx(as_dict, nan_ok=True)
    # the most-frequent-class baseline gives hard labels: one-hot probabilities
    hard = compute([0, 0, 0, 0], LABELS, n_resamples=0).summary
    assert hard["AUROC"] == 0.5 and hard["Brier"] == 0.5 and hard["balanced_accuracy"] == 0.5
    assert hard["F1"] == 0.0 and hard["ECE"] == pytest.approx(0.5)


def test_bootstrap_ci_matches_resampled_aurocs():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 60)
    scores = np.round((labels * 0.3 + rng.random(60)) / 1.3, 1)  # rounded: many ties
    block = rng.integers(0, 60, size=(25, 60))
    fast = _WeightedAuroc(scores, labels.astype(bool))(block)
    slow = [auroc(scores[row], labels[row]) for row in block]
    assert fast == pytest.approx(slow)
    s = compute(scores.tolist(), labels.tolist(), n_resamples=300, seed=3).summary
    assert s["AUROC_ci_low"] < s["AUROC"] < s["AUROC_ci_high"]
    again = compute(scores.tolist(), labels.tolist(), n_resamples=300, seed=3).summary
    assert again["AUROC_ci_low"] == s["AUROC_ci_low"]
    # epoch selection asks for the point estimate only
    sel = compute(scores.tolist(), labels.tolist(), selection=True).summary
    assert not any(k.endswith("_ci_low") for k in sel) and sel["AUROC"] == s["AUROC"]


def test_proportions_carry_wilson_intervals_worked_by_hand():
    """accuracy 3/4, sensitivity 1/2, specificity 2/2 of the hand example: Wilson score intervals
    in closed form (tests/sdk/test_intervals.py)."""
    from tests.sdk.test_intervals import wilson_by_hand as wilson

    result = compute(SCORES, LABELS, n_resamples=0)
    s = result.summary
    for key, (k, n) in {"accuracy": (3, 4), "sensitivity": (1, 2), "specificity": (2, 2)}.items():
        assert (s[f"{key}_ci_low"], s[f"{key}_ci_high"]) == pytest.approx(wilson(k, n)), key
    assert result.details["intervals"]["sensitivity"] == "Wilson score (1/2)"
    # exact (Clopper-Pearson) on request: 2/2 -> [(0.025)^(1/2), 1]
    exact = compute(SCORES, LABELS, n_resamples=0, proportion_ci="exact").summary
    assert exact["specificity_ci_low"] == pytest.approx(0.025 ** 0.5) and exact["specificity_ci_high"] == 1.0
    with pytest.raises(PathkitError, match="unknown method"):
        compute(SCORES, LABELS, n_resamples=0, proportion_ci="agresti")


def test_three_test_cases_give_no_interval_and_a_small_sample_warning():
    """The issue's example: 3 test cases, AUROC 1.0 printed as "[1.0000, 1.0000]"; the bootstrap
    cannot vary, so the table says "not estimable (n=3)" and warns that the set is small."""
    from pathkit_core.evaluation.scores import score_rows, table_cells

    result = compute([0.9, 0.2, 0.4], [1, 0, 1], n_resamples=1000)
    s = result.summary
    assert s["AUROC"] == 1.0 and math.isnan(s["AUROC_ci_low"]) and math.isnan(s["AUROC_ci_high"])
    sample = result.details["sample"]
    assert sample["small"] and sample["n_cases"] == 3 and sample["class_counts"] == {"0": 1, "1": 2}
    assert "3 test case(s) (fewer than 20)" in sample["warning"]
    rows = {r.key: r for r in score_rows({"classification": s}, details={"classification": result.details})}
    cells = table_cells(rows["AUROC"], [])
    assert cells[1] == "1.0000" and cells[2] == "not estimable (n=3) \u00b7 small test set"
    assert "[1.0000, 1.0000]" not in " ".join(cells)
    # the proportions keep real intervals, also flagged
    assert table_cells(rows["sensitivity"], [])[2].startswith("[0.0945, 0.9055]")
    # counts are informational: no direction arrow
    assert rows["n_cases"].better == "" and rows["prevalence"].better == "" and rows["AUROC"].better == "\u2191 higher"
    assert not rows["n_cases"].note


def test_a_large_test_set_carries_no_small_sample_warning():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], 15)
    result = compute((labels * 0.4 + rng.random(30) * 0.6).tolist(), labels.tolist(), n_resamples=200)
    assert not result.details["sample"]["small"] and "warning" not in result.details["sample"]
    s = result.summary
    assert s["AUROC_ci_low"] < s["AUROC_ci_high"]


def test_multiclass_macro_scores_by_hand():
    probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]]
    refs = [0, 1, 2, 1]
    s = compute(probs, refs, n_resamples=0).summary
    # one-vs-rest AUROCs: class 0 -> 1.0; class 1 -> scores .5,.4 vs .2,.3 -> 1.0; class 2 -> 1.0
    assert s["AUROC"] == pytest.approx(1.0)
    # argmax: 0, 1, 2, 0 (tie .4/.4 goes to the first) -> one error
    assert s["accuracy"] == pytest.approx(0.75)
    assert s["balanced_accuracy"] == pytest.approx((1 + 0.5 + 1) / 3)
    # F1 per class: c0 2*1/(2+1)=2/3, c1 2*1/(1+2)=2/3, c2 1 -> macro 7/9
    assert s["F1"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    brier = np.mean([0.09 + 0.04 + 0.01, 0.04 + 0.25 + 0.09, 0.01 + 0.09 + 0.16, 0.16 + 0.36 + 0.04])
    assert s["Brier"] == pytest.approx(brier)
    # top-label ECE: confidences .7 (bin 7, right), .5 (5, right), .6 (6, right), .4 (4, wrong)
    assert s["ECE"] == pytest.approx((0.3 + 0.5 + 0.4 + 0.4) / 4)


@pytest.mark.parametrize(
    ("preds", "refs", "message"),
    [
        ([0.2, 0.3], [0], "2 predictions for 1 references"),
        ([], [], "no cases"),
        ([float("nan"), 0.3], [0, 1], "NaN or infinite"),
        ([1.3, 0.3], [0, 1], "outside [0, 1]"),
        ([[0.5, 0.5, 0.0], 0.3], [0, 2], "single probability only describes a binary task"),
        ([[0.2, 0.8, 0.0]], [1], "3 probabilities for 2 classes"),
        ([{"score": 1}], [1], "dict without"),
        ([0.4], ["maybe"], "not a class index"),
        ([5], [1], "outside 0..1"),
    ],
)
def test_bad_input_is_a_clear_error(preds, refs, message):
    with pytest.raises(PathkitError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        ClassificationMetric().compute(preds, refs, context={"options": {"n_resamples": 0, "n_classes": 2}
                                                            if message.startswith("3 prob") else {}})


def test_one_class_references_give_nan_not_a_crash():
    s = compute([0.2, 0.7, 0.4], [0, 0, 0], n_resamples=50).summary
    assert math.isnan(s["AUROC"]) and math.isnan(s["AP"]) and math.isnan(s["sensitivity"])
    assert s["specificity"] == pytest.approx(2 / 3)


def test_runner_and_registry(fresh_registry):
    from pathkit_core.evaluation.runner import score

    fresh_registry(autoload=True)
    result = score(["classification"], dict(zip("abcd", SCORES, strict=True)), dict(zip("abcd", LABELS, strict=True)),
                   context={"options": {"n_resamples": 0}})
    assert result.summary["classification"]["AUROC"] == pytest.approx(0.75)
    assert result.per_case["id"].to_list() == list("abcd")


def test_hugging_face_evaluate_interface_keeps_scores_as_scores():
    pytest.importorskip("datasets")
    pytest.importorskip("evaluate")
    from pathkit_interop.evaluate_modules import as_evaluate_module

    module = as_evaluate_module(ClassificationMetric)
    # positive-class scores must not be cast to integer labels on the way in
    assert module.compute(predictions=SCORES, references=LABELS, n_resamples=0)["AUROC"] == pytest.approx(0.75)
    probs = [[1 - p, p] for p in SCORES]
    assert module.compute(predictions=probs, references=LABELS, n_resamples=0)["AP"] == pytest.approx(5 / 6)
    # hard multi-class labels arrive as numbers too
    assert module.compute(predictions=[0, 1, 2, 1], references=[0, 1, 2, 2], n_resamples=0)["accuracy"] == 0.75


# --------------------------------------------------------------------------- hardening (issue 28)


@pytest.mark.parametrize(("row", "total"), [([0.9, 0.9], "1.8"), ([0.0, 0.0, 0.0], "0")])
def test_class_probabilities_that_do_not_sum_to_one_are_refused(row, total):
    preds = [row, [1 / len(row)] * len(row)]
    with pytest.raises(PathkitError, match=rf"1 prediction\(s\) hold class probabilities that do not sum to 1, "
                                           rf"e\.g\. prediction 0: .* \(sum {total}\)"):
        compute(preds, [0, 1], n_resamples=0, n_classes=len(row))
    # within the tolerance (rounding in a file) they are scored as given
    assert compute([[0.6, 0.405], [0.3, 0.7]], [0, 1], n_resamples=0).summary["accuracy"] == 1.0


def test_unknown_options_are_warned_about_and_typed_ones_parsed_by_the_runner(fresh_registry):
    from pathkit_core.evaluation.runner import score

    fresh_registry(autoload=True)
    preds, refs = dict(zip("abcd", SCORES, strict=True)), dict(zip("abcd", LABELS, strict=True))
    with pytest.warns(UserWarning, match=r"classification: ignoring unknown option\(s\) foo; known: n_bins, "):
        result = score(["classification"], preds, refs, context={"options": {"foo": 1, "n_resamples": "0"}})
    assert result.summary["classification"]["AUROC"] == pytest.approx(0.75)
    with pytest.raises(PathkitError, match=r"metric 'classification': option seed='abc' is not a number"):
        score(["classification"], preds, refs, context={"options": {"seed": "abc"}})
    with pytest.raises(PathkitError, match=r"option n_bins=2\.5 is not a whole number"):
        score(["classification"], preds, refs, context={"options": {"n_bins": 2.5}})


def test_every_built_in_metric_declares_its_options(fresh_registry):
    registry = fresh_registry(autoload=True)
    for name in ("classification", "crqs", "hare", "nlg", "segmentation"):
        assert registry.get("metric", name).option_table, name
