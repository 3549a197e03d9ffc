"""classification metric, K classes: the HepatoBench seed's recipe, scikit-learn, per-class scores,
the confusion matrix, bootstrap CIs of the macro scores, and `pathkit score` on class names."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from pathkit_metrics.classification import ClassificationMetric, confusion_matrix, macro_scores

from pathkit_core.contracts import PathkitError

HEPATO = ["TUM", "FIB", "INF", "NEC", "NOR", "REA", "STE"]


def seed_recipe(preds, gold, classes=HEPATO):
    """The seed paper's scoring recipe, transcribed as the oracle (accuracy and macro F1)."""
    acc = sum(p == g for p, g in zip(preds, gold, strict=True)) / len(gold)
    f1s = []
    for cls in classes:
        tp = sum(1 for p, g in zip(preds, gold, strict=True) if p == cls and g == cls)
        fp = sum(1 for p, g in zip(preds, gold, strict=True) if p == cls and g != cls)
        fn = sum(1 for p, g in zip(preds, gold, strict=True) if p != cls and g == cls)
        prec = tp / (tp + fp) if (tp + fp) > 0 else 0
        rec = tp / (tp + fn) if (tp + fn) > 0 else 0
        f1s.append(2 * prec * rec / (prec + rec) if (prec + rec) > 0 else 0)
    return acc, sum(f1s) / len(f1s)


def compute(preds, refs, classes=None, **options):
    context = {"options": {"n_resamples": 0, **options}}
    if classes is not None:
        context["class_names"] = list(classes)
    return ClassificationMetric().compute(preds, refs, ids=[f"p{i}" for i in range(len(refs))], context=context)


def test_hand_example_per_class_and_macro():
    # A: tp 1 fp 1 fn 1 -> P .5 R .5 F1 .5; B: tp 2 fp 1 -> P 2/3 R 1 F1 .8; C never predicted -> 0;
    # D never present, predicted once -> P 0, R 0, F1 0.
    refs = ["A", "A", "B", "B", "C", "C"]
    preds = ["A", "B", "B", "B", "A", "D"]
    s = compute(preds, refs, classes="ABCD").summary
    assert s["accuracy"] == pytest.approx(0.5)
    assert s["macro_F1"] == pytest.approx((0.5 + 0.8 + 0 + 0) / 4) and s["F1"] == s["macro_F1"]
    assert s["macro_precision"] == pytest.approx((0.5 + 2 / 3) / 4)
    assert s["macro_recall"] == pytest.approx((0.5 + 1) / 4)
    assert s["balanced_accuracy"] == pytest.approx((0.5 + 1 + 0) / 3)  # classes present in the references
    assert s["F1_A"] == 0.5 and s["F1_B"] == pytest.approx(0.8) and s["F1_C"] == 0 and s["F1_D"] == 0
    assert s["precision_B"] == pytest.approx(2 / 3) and s["recall_B"] == 1.0 and s["precision_C"] == 0.0


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")  # REA is absent by design
def test_matches_the_seed_recipe_and_scikit_learn_on_seven_classes():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    gold = rng.choice(HEPATO, size=300, p=[0.3, 0.3, 0.1, 0.1, 0.1, 0.0, 0.1])  # REA absent
    preds = np.where(rng.random(300) < 0.6, gold, rng.choice(["TUM", "FIB", "NOR", "REA"], size=300))
    preds[preds == "INF"] = "TUM"  # INF never predicted: precision 0 by the recipe
    gold, preds = gold.tolist(), preds.tolist()
    s = compute(preds, gold, classes=HEPATO).summary
    acc, f1 = seed_recipe(preds, gold)
    assert s["accuracy"] == pytest.approx(acc, abs=1e-12) and s["macro_F1"] == pytest.approx(f1, abs=1e-12)
    assert s["macro_F1"] == pytest.approx(
        sklearn_metrics.f1_score(gold, preds, labels=HEPATO, average="macro", zero_division=0), abs=1e-12)
    # scikit-learn's own default label set (classes seen on either side) agrees when no class is
    # absent from both: REA is predicted here, so every class is seen
    assert s["macro_F1"] == pytest.approx(sklearn_metrics.f1_score(gold, preds, average="macro", zero_division=0))
    assert s["balanced_accuracy"] == pytest.approx(sklearn_metrics.balanced_accuracy_score(gold, preds))
    per_class = sklearn_metrics.f1_score(gold, preds, labels=HEPATO, average=None, zero_division=0)
    assert [s[f"F1_{c}"] for c in HEPATO] == pytest.approx(per_class.tolist())


def test_a_class_absent_from_both_sides_counts_zero_as_in_the_recipe():
    refs, preds = ["TUM", "FIB", "FIB"], ["TUM", "FIB", "FIB"]
    s = compute(preds, refs, classes=HEPATO).summary
    assert s["accuracy"] == 1.0
    assert s["macro_F1"] == pytest.approx(seed_recipe(preds, refs)[1]) == pytest.approx(2 / 7)


def test_confusion_matrix_and_per_class_table_in_details():
    refs = [0, 0, 1, 2, 2, 2]
    probs = [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6]]
    result = compute(probs, refs, classes=["x", "y", "z"])
    d = result.details
    assert d["classes"] == ["x", "y", "z"]
    assert d["confusion_matrix"] == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]  # rows: reference, columns: prediction
    assert d["per_class"][2] == {"class": "z", "support": 3, "predicted": 2, "precision": 1.0, "recall": 2 / 3,
                                 "F1": pytest.approx(0.8)}
    assert result.per_case["predicted_class"].to_list() == ["x", "y", "y", "z", "x", "z"]
    assert confusion_matrix([0, 1], [1, 1], 2).tolist() == [[0, 1], [0, 1]]
    # binary scores keep their form and also get the matrix
    binary = compute([0.2, 0.9, 0.6], [0, 1, 0])
    assert binary.details["confusion_matrix"] == [[1, 1], [0, 1]] and "macro_F1" not in binary.summary


def test_macro_scores_vectorise_over_resamples():
    confusions = np.array([[[2, 0], [1, 1]], [[0, 0], [0, 3]]])
    out = macro_scores(confusions)
    assert out["accuracy"].tolist() == [0.75, 1.0]
    # second: class 0 never present nor predicted -> F1 0 for it (macro .5); balanced accuracy over class 1 only
    assert out["macro_F1"][1] == 0.5 and out["balanced_accuracy"][1] == 1.0


def test_bootstrap_intervals_of_the_macro_scores():
    rng = np.random.default_rng(3)
    gold = rng.integers(0, 4, 200)
    preds = np.where(rng.random(200) < 0.7, gold, rng.integers(0, 4, 200))
    s = compute(preds.tolist(), gold.tolist(), classes="ABCD", n_resamples=300, seed=1).summary
    for key in ("macro_F1", "balanced_accuracy", "accuracy", "macro_precision", "macro_recall"):
        assert s[f"{key}_ci_low"] < s[key] < s[f"{key}_ci_high"], key
    # the interval agrees with a slow per-resample loop over the same resamples
    from pathkit_sdk.bootstrap import resample_indices

    values = []
    for block in resample_indices(200, 300, 1):
        for row in block:
            values.append(macro_scores(confusion_matrix(gold[row], preds[row], 4))["macro_F1"])
    assert s["macro_F1_ci_low"] == pytest.approx(float(np.quantile(values, 0.025)))
    assert s["macro_F1_ci_high"] == pytest.approx(float(np.quantile(values, 0.975)))
    assert math.isnan(compute(preds.tolist(), gold.tolist(), classes="ABCD", selection=True).summary.get(
        "macro_F1_ci_low", math.nan))


def test_multiclass_probability_scores():
    refs = [0, 1, 2, 2]
    probs = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3]]
    s = compute(probs, refs, classes="abc").summary
    # one-vs-rest: classes 0 and 1 ranked perfectly; class 2 positives .7, .3 vs negatives .1, .3:
    # pairs 1 + 1 + 1 + one tie (.5) -> 3.5 / 4
    assert s["AUROC"] == pytest.approx((1.0 + 1.0 + 0.875) / 3)
    # class 2 AP: threshold .7 (R .5, P 1), .3 (R 1, P 2/3) -> .5 + .5 * 2/3; classes 0 and 1: 1
    assert s["AUPR"] == s["AP"] == pytest.approx((1.0 + 1.0 + 0.5 + 1 / 3) / 3)


@pytest.mark.parametrize(
    ("preds", "refs", "context", "message"),
    [
        (["TUM", "XXX"], ["TUM", "FIB"], {"class_names": HEPATO}, "class 'XXX' is not one of"),
        ([{"label": "A", "probabilities": [0.5, 0.5]}], ["A"], {}, "no class order is known"),
        ([0], ["ZZZ"], {"class_names": ["A", "B", "C"]}, "not a class index"),
    ],
)
def test_bad_names_are_clear_errors(preds, refs, context, message):
    with pytest.raises(PathkitError, match=message):
        ClassificationMetric().compute(preds, refs, context={"options": {"n_resamples": 0}, **context})


def _write(path, records):
    path.write_text(json.dumps(records))
    return path


def test_score_command_on_class_names(cli, tmp_path, installed_registry):
    gold = ["TUM", "FIB", "FIB", "NEC", "STE", "INF", "NOR", "REA", "TUM", "FIB"]
    pred = ["TUM", "FIB", "TUM", "NEC", "STE", "TUM", "NOR", "NOR", "TUM", "FIB"]
    refs = _write(tmp_path / "refs.json", [{"id": f"p{i}", "label": g} for i, g in enumerate(gold)])
    preds = _write(tmp_path / "preds.json", [{"id": f"p{i}", "label": p} for i, p in enumerate(pred)])
    result = cli("score", "--metric", "classification", "--predictions", preds, "--references", refs,
                 "--json", "--option", "n_resamples=0")
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)["classification"]
    acc, f1 = seed_recipe(pred, gold)
    assert s["accuracy"] == pytest.approx(acc) and s["macro_F1"] == pytest.approx(f1)
    # with probabilities, the class order comes from --option classes (or a dataset's metric options)
    onehot = [{"id": f"p{i}", "label": p, "probabilities": [float(c == p) for c in HEPATO]}
              for i, p in enumerate(pred)]
    probs = _write(tmp_path / "probs.json", onehot)
    out = tmp_path / "out"
    result = cli("score", "--metric", "classification", "--predictions", probs, "--references", refs, "--json",
                 "--option", "n_resamples=0", "--option", f"classes={json.dumps(HEPATO)}", "--out", out)
    assert result.exit_code == 0, result.output
    s2 = json.loads(result.stdout)["classification"]
    assert s2["macro_F1"] == pytest.approx(f1) and s2["AUROC"] == s2["AUROC"]
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["details"]["classification"]["classes"] == HEPATO
    assert np.array(saved["details"]["classification"]["confusion_matrix"]).sum() == len(gold)
    result = cli("score", "--metric", "classification", "--predictions", probs, "--references", refs)
    assert result.exit_code == 2 and "no class order is known" in result.output


def test_balanced_accuracy_is_the_mean_of_its_per_case_terms():
    """The per-case term a paired test (and a suite comparing eva's score) averages gives
    scikit-learn's balanced accuracy exactly, a class absent from the targets included."""
    from sklearn.metrics import balanced_accuracy_score

    from pathkit_bench.compare import paired_test

    rng = np.random.default_rng(3)
    refs = rng.choice([0, 1, 3], size=41, p=[0.6, 0.3, 0.1]).tolist()  # class 2 never a target
    preds = rng.dirichlet(np.ones(4), size=41)
    preds[np.arange(41)[:25], np.asarray(refs)[:25]] += 1.0  # better than chance
    result = compute((preds / preds.sum(1, keepdims=True)).tolist(), refs, n_resamples=0)
    terms = result.per_case["balanced_accuracy_term"].to_numpy()
    expected = balanced_accuracy_score(refs, result.per_case["predicted"].to_list())
    assert result.summary["balanced_accuracy"] == pytest.approx(expected, abs=1e-12)
    assert terms.mean() == pytest.approx(expected, abs=1e-12)
    assert expected != pytest.approx(result.summary["accuracy"])  # the weights matter on this set
    assert paired_test(ClassificationMetric, "balanced_accuracy", result.per_case.columns) == (
        "mean", "balanced_accuracy_term")
