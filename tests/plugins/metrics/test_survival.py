"""The survival metric against lifelines and scikit-survival, ties and censoring included."""

from __future__ import annotations

import numpy as np
import pytest
from lifelines.utils import concordance_index
from pathkit_metrics.survival import (
    SurvivalMetric,
    c_index_statistic,
    concordance_pairs,
    harrell_c,
    harrell_c_resampled,
)
from sksurv.metrics import concordance_index_ipcw, cumulative_dynamic_auc
from sksurv.util import Surv

from pathkit_core.contracts import PathkitError


def _records(risk, time, event):
    return ([{"risk": float(r)} for r in risk],
            [{"time": float(t), "event": int(e)} for t, e in zip(time, event, strict=True)])


def _score(risk, time, event, **options):
    preds, refs = _records(risk, time, event)
    return SurvivalMetric().compute(preds, refs, context={"options": {"n_resamples": 0, **options}})


def test_hand_case():
    # times 1 < 2 < 3 (events at 1 and 3, censored at 2); comparable pairs: (1,2), (1,3); risk
    # ranks case 1 highest, case 3 above case 2: both pairs concordant; C = 1.
    assert harrell_c(np.array([3.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([1, 0, 1])) == 1.0
    # a censored case at the same time as an event is comparable (lifelines): risk tie -> 1/2
    assert harrell_c(np.array([1.0, 1.0]), np.array([2.0, 2.0]), np.array([1, 0])) == 0.5


@pytest.mark.parametrize("seed", range(5))
def test_harrell_equals_lifelines_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = 40
    time = rng.integers(1, 8, n).astype(float)  # many tied times
    event = rng.integers(0, 2, n)
    risk = rng.integers(0, 4, n).astype(float)  # many tied risks
    got = _score(risk, time, event).summary["c_index"]
    assert abs(got - concordance_index(time, -risk, event)) < 1e-12


def test_uno_and_auc_equal_scikit_survival():
    rng = np.random.default_rng(3)
    n = 80
    time = np.round(rng.exponential(10, n), 1)
    event = (rng.random(n) < 0.6).astype(int)
    risk = -time + rng.normal(0, 5, n)
    result = _score(risk, time, event, horizons="3,6,9")
    y = Surv.from_arrays(event=event.astype(bool), time=time)
    assert abs(result.summary["uno_c"] - concordance_index_ipcw(y, y, risk)[0]) < 1e-12
    aucs, mean_auc = cumulative_dynamic_auc(y, y, risk, np.array([3.0, 6.0, 9.0]))
    assert abs(result.summary["auc@6"] - aucs[1]) < 1e-12
    assert abs(result.summary["mean_auc"] - mean_auc) < 1e-12
    assert result.summary["c_index"] > 0.6


def test_censoring_from_the_train_split():
    rng = np.random.default_rng(4)
    time, event, risk = rng.exponential(10, 50), rng.integers(0, 2, 50), rng.normal(size=50)
    train_t, train_e = rng.exponential(10, 200) + 1, rng.integers(0, 2, 200)
    preds, refs = _records(risk, time, event)
    result = SurvivalMetric().compute(preds, refs, context={
        "options": {"n_resamples": 0}, "train_survival": [[t, e] for t, e in zip(train_t, train_e, strict=True)]})
    train = Surv.from_arrays(event=train_e.astype(bool), time=train_t)
    test = Surv.from_arrays(event=event.astype(bool), time=time)
    assert abs(result.summary["uno_c"] - concordance_index_ipcw(train, test, risk)[0]) < 1e-12
    assert result.details["censoring_from"] == "train split"


def test_resampled_c_equals_c_of_the_resample():
    rng = np.random.default_rng(5)
    n = 25
    time, event, risk = rng.integers(1, 6, n).astype(float), rng.integers(0, 2, n), rng.integers(0, 3, n) * 1.0
    block = rng.integers(0, n, (6, n))
    fast = harrell_c_resampled(*concordance_pairs(risk, time, event), block)
    slow = [concordance_index(time[b], -risk[b], event[b]) for b in block]
    assert np.allclose(fast, slow, atol=1e-12)
    rows = np.stack([risk, time, event], axis=1)[block]
    assert np.allclose(c_index_statistic(rows), slow, atol=1e-12)


def test_bootstrap_interval_brackets_the_estimate():
    rng = np.random.default_rng(6)
    time, event = rng.exponential(10, 60), rng.integers(0, 2, 60)
    risk = -time + rng.normal(0, 3, 60)
    s = _score(risk, time, event, n_resamples=100).summary
    assert s["c_index_ci_low"] < s["c_index"] < s["c_index_ci_high"]
    assert s["uno_c_ci_low"] < s["uno_c_ci_high"]


def test_constant_risk_is_one_half():
    time = np.array([1.0, 2.0, 3.0, 4.0])
    assert _score(np.zeros(4), time, np.array([1, 1, 0, 1])).summary["c_index"] == 0.5


@pytest.mark.parametrize(("ref", "message"), [
    ({"time": -1, "event": 1}, "negative"),
    ({"time": None, "event": 1}, "missing"),
    ({"time": 3, "event": 2}, "not 0"),
    ({"time": 3}, "is not"),
])
def test_bad_references_refused(ref, message):
    with pytest.raises(PathkitError, match=message):
        SurvivalMetric().compute([{"risk": 1.0}], [ref], context={"options": {"n_resamples": 0}})


def test_horizon_outside_follow_up_refused():
    with pytest.raises(PathkitError, match="outside the follow-up"):
        _score([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1, 1, 1], horizons="50")


def test_follow_up_past_the_train_split_is_censored_at_its_end():
    rng = np.random.default_rng(8)
    time, event, risk = rng.exponential(10, 40) + 0.5, rng.integers(0, 2, 40), rng.normal(size=40)
    train = [[t, 1] for t in np.linspace(0.1, 8.0, 30)]
    preds, refs = _records(risk, time, event)
    result = SurvivalMetric().compute(preds, refs, context={"options": {"n_resamples": 0, "horizons": "2,4"},
                                                            "train_survival": train})
    over = time > 8.0
    y_train = Surv.from_arrays(event=np.ones(30, bool), time=np.linspace(0.1, 8.0, 30))
    y_test = Surv.from_arrays(event=(event.astype(bool) & ~over), time=np.where(over, 8.0, time))
    assert result.details["censored_at_train_end"] == int(over.sum()) > 0
    assert result.summary["uno_c"] == pytest.approx(concordance_index_ipcw(y_train, y_test, risk)[0], abs=1e-12)
    assert result.summary["mean_auc"] == pytest.approx(cumulative_dynamic_auc(y_train, y_test, risk, [2, 4])[1],
                                                       abs=1e-12)
    assert result.summary["c_index"] == pytest.approx(concordance_index(time, -risk, event), abs=1e-12)


# --------------------------------------------------------------------------- Brier scores of survival curves


def _curve_case(rng, n=40):
    time = np.round(rng.exponential(10, n)) + 1  # rounded: tied times
    event = (rng.random(n) < 0.7).astype(int)
    ends = [3.0, 6.0, 12.0, None]
    hazards = rng.uniform(0.05, 0.5, (n, 4))
    survival = np.cumprod(1 - hazards, axis=1)
    preds = [{"risk": float(-s.sum()), "survival": s.tolist(), "bin_ends": ends} for s in survival]
    return preds, time, event, survival


def test_survival_at_reads_the_step_curve_by_hand():
    from pathkit_metrics.survival import survival_at

    pred = {"survival": [0.9, 0.6, 0.3], "bin_ends": [2.0, 5.0, None]}
    np.testing.assert_allclose(survival_at([pred], [1.0, 2.0, 4.9, 5.0, 99.0])[0], [1.0, 0.9, 0.9, 0.6, 0.6])
    assert survival_at([{"risk": 1.0}], [1.0]) is None


def test_brier_and_integrated_brier_equal_scikit_survival_with_ties_and_censoring():
    from pathkit_metrics.survival import SurvivalMetric
    from sksurv.metrics import brier_score, integrated_brier_score
    from sksurv.util import Surv

    rng = np.random.default_rng(5)
    preds, time, event, survival = _curve_case(rng)
    train_t = np.round(rng.exponential(10, 60)) + 1
    train_e = (rng.random(60) < 0.7).astype(int)
    at = [4.0, 8.0, 10.0]
    context = {"options": {"horizons": at, "n_resamples": 0},
               "train_survival": np.stack([train_t, train_e], axis=1).tolist()}
    refs = [{"time": float(t), "event": int(e)} for t, e in zip(time, event, strict=True)]
    result = SurvivalMetric().compute(preds, refs, context=context)
    # by hand: S at 4 = past the bin ending at 3; at 8 and 10 = past the bins ending at 3 and 6
    by_hand = np.stack([survival[:, 0], survival[:, 1], survival[:, 1]], axis=1)
    last = train_t.max()
    tt, ee = np.where(time > last, last, time), np.where(time > last, 0, event)
    train, test = Surv.from_arrays(train_e.astype(bool), train_t), Surv.from_arrays(ee.astype(bool), tt)
    _, expected = brier_score(train, test, by_hand, at)
    for h, b in zip(at, expected, strict=True):
        assert result.summary[f"brier@{h:g}"] == pytest.approx(b, abs=1e-12)
    assert result.summary["ibs"] == pytest.approx(integrated_brier_score(train, test, by_hand, at), abs=1e-12)
    # a risk-only prediction has no curve: no Brier scores
    plain = SurvivalMetric().compute([{"risk": p["risk"]} for p in preds], refs, context=context)
    assert "ibs" not in plain.summary
