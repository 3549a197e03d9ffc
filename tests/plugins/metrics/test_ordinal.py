"""The ordinal metric against scikit-learn's quadratic weighted kappa."""

from __future__ import annotations

import numpy as np
import pytest
from pathkit_metrics.ordinal import OrdinalMetric, kappa_statistic
from sklearn.metrics import cohen_kappa_score, mean_absolute_error

from pathkit_core.contracts import PathkitError

CLASSES = ["1", "2", "3", "4", "5"]


def _score(y, p, **options):
    preds = [{"label": int(v)} for v in p]
    refs = [{"label": int(v)} for v in y]
    return OrdinalMetric().compute(preds, refs, context={"options": {"classes": "1,2,3,4,5", "n_resamples": 0,
                                                                     **options}})


def test_hand_case():
    # grades 1,2,3 against 1,2,4: one error of one step
    s = _score([1, 2, 3], [1, 2, 4]).summary
    assert s["accuracy"] == pytest.approx(2 / 3) and s["mean_abs_grade_error"] == pytest.approx(1 / 3)
    assert s["qwk"] == pytest.approx(cohen_kappa_score([1, 2, 3], [1, 2, 4], weights="quadratic"), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_qwk_equals_scikit_learn_on_random_tables(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 6, 70)
    p = np.clip(y + rng.integers(-2, 3, 70), 1, 5)
    s = _score(y, p).summary
    assert abs(s["qwk"] - cohen_kappa_score(y, p, weights="quadratic")) < 1e-12
    assert abs(s["mean_abs_grade_error"] - mean_absolute_error(y, p)) < 1e-12
    assert s["accuracy"] == pytest.approx(float((y == p).mean()))


def test_kappa_statistic_of_resamples_equals_scikit_learn():
    rng = np.random.default_rng(9)
    y, p = rng.integers(0, 4, 30), rng.integers(0, 4, 30)
    block = rng.integers(0, 30, (5, 30))
    got = kappa_statistic(np.stack([y, p], axis=1)[block])
    want = [cohen_kappa_score(y[b], p[b], weights="quadratic") for b in block]
    assert np.allclose(got, want, atol=1e-12)


def test_class_names_and_dicts_as_the_run_writes_them():
    preds = [{"label": 0, "class": "low", "probabilities": [1, 0, 0]}, {"label": 2, "class": "high"}]
    result = OrdinalMetric().compute(preds, ["low", "mid"], context={"class_names": ["low", "mid", "high"],
                                                                     "options": {"n_resamples": 0}})
    assert result.summary["accuracy"] == 0.5 and result.summary["mean_abs_grade_error"] == 0.5


def test_bootstrap_interval():
    rng = np.random.default_rng(2)
    y = rng.integers(1, 6, 80)
    p = np.clip(y + rng.integers(-1, 2, 80), 1, 5)
    s = _score(y, p, n_resamples=300).summary
    assert s["qwk_ci_low"] < s["qwk"] < s["qwk_ci_high"]


def test_a_grade_outside_the_classes_is_refused():
    with pytest.raises(PathkitError, match="grade '7' is not one of"):
        _score([1, 7], [1, 2])
    with pytest.raises(PathkitError, match="ordered classes are unknown"):
        OrdinalMetric().compute([1], [1], context={"options": {}})
