"""DeLong's test against an independent O(n1 n0) implementation of DeLong 1988's structural
components (written here from the paper's equations, not from the module's midrank algorithm), and
the AUROCs against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from pathkit_bench.stats import auroc_covariance, delong_test, delong_test_ovr
from pathkit_core.contracts import PathkitError


def psi(x: float, y: float) -> float:
    return 1.0 if x > y else 0.5 if x == y else 0.0


def reference_delong(a, b, y):
    """DeLong, DeLong & Clarke-Pearson (1988), equations (2)-(5), with explicit pairwise comparisons."""
    a, b, y = np.asarray(a, float), np.asarray(b, float), np.asarray(y, bool)
    comps = []
    for s in (a, b):
        xs, ys = s[y], s[~y]
        v10 = np.array([np.mean([psi(x, v) for v in ys]) for x in xs])
        v01 = np.array([np.mean([psi(x, v) for x in xs]) for v in ys])
        comps.append((v10.mean(), v10, v01))
    n1, n0 = int(y.sum()), int((~y).sum())

    def s(u, w):
        return float(np.sum((u - u.mean()) * (w - w.mean())) / (len(u) - 1))

    (t1, v10a, v01a), (t2, v10b, v01b) = comps
    var = (s(v10a, v10a) + s(v10b, v10b) - 2 * s(v10a, v10b)) / n1 + (s(v01a, v01a) + s(v01b, v01b)
                                                                      - 2 * s(v01a, v01b)) / n0
    z = (t1 - t2) / math.sqrt(var)
    return t1, t2, z, 2 * norm.sf(abs(z))


# a small table with ties within and across the classes (pROC's midrank convention counts ties 1/2)
TABLE_Y = [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
TABLE_A = [0.9, 0.8, 0.8, 0.7, 0.55, 0.4, 0.35, 0.8, 0.5, 0.45, 0.4, 0.3, 0.2, 0.2, 0.1, 0.05]
TABLE_B = [0.7, 0.9, 0.3, 0.6, 0.6, 0.2, 0.5, 0.6, 0.6, 0.1, 0.5, 0.4, 0.3, 0.2, 0.3, 0.1]


def test_binary_matches_structural_components_to_1e6():
    ref = reference_delong(TABLE_A, TABLE_B, TABLE_Y)
    got = delong_test(TABLE_A, TABLE_B, TABLE_Y)
    assert got.auc_a == pytest.approx(roc_auc_score(TABLE_Y, TABLE_A), abs=1e-12)
    assert got.auc_b == pytest.approx(roc_auc_score(TABLE_Y, TABLE_B), abs=1e-12)
    assert (got.auc_a, got.auc_b, got.z, got.p_value) == pytest.approx(ref, abs=1e-6)
    assert got.ci_low < got.difference < got.ci_high


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_tables_match_reference(seed):
    rng = np.random.default_rng(seed)
    y = rng.random(60) < 0.4
    a = np.round(y * 0.8 + rng.normal(0, 1, 60), 1)  # rounded: ties
    b = np.round(a * 0.5 + rng.normal(0, 1, 60), 1)
    ref = reference_delong(a, b, y)
    got = delong_test(a, b, y)
    assert (got.auc_a, got.auc_b, got.z, got.p_value) == pytest.approx(ref, abs=1e-6)


def test_covariance_of_many_models_matches_pairwise_tests():
    rng = np.random.default_rng(3)
    y = rng.random(80) < 0.5
    scores = y * 0.6 + rng.normal(0, 1, (4, 80))
    aucs, cov = auroc_covariance(scores, y)
    assert aucs == pytest.approx([roc_auc_score(y, s) for s in scores])
    for i, j in ((0, 1), (2, 3)):
        z = (aucs[i] - aucs[j]) / math.sqrt(cov[i, i] + cov[j, j] - 2 * cov[i, j])
        assert z == pytest.approx(reference_delong(scores[i], scores[j], y)[2], abs=1e-9)


def test_identical_scores_give_no_difference():
    got = delong_test(TABLE_A, TABLE_A, TABLE_Y)
    assert got.difference == 0 and got.p_value == 1.0


def test_one_class_is_refused():
    with pytest.raises(PathkitError, match="positives and negatives"):
        delong_test([0.1, 0.2], [0.3, 0.4], [1, 1])


def test_ovr_with_two_classes_is_the_binary_test():
    p1a, p1b = np.array(TABLE_A), np.array(TABLE_B)
    pa = np.stack([1 - p1a, p1a], axis=1)
    pb = np.stack([1 - p1b, p1b], axis=1)
    got = delong_test_ovr(pa, pb, TABLE_Y)
    ref = delong_test(TABLE_A, TABLE_B, TABLE_Y)
    assert (got.auc_a, got.auc_b, got.se, got.p_value) == pytest.approx((ref.auc_a, ref.auc_b, ref.se, ref.p_value),
                                                                        abs=1e-12)


def reference_ovr_variance(pa, pb, y):
    """The stratified variance of the macro difference from O(n^2) components per class."""
    k_used = [k for k in range(pa.shape[1]) if 0 < (y == k).sum() < y.size]
    phi = np.zeros(y.size)
    for k in k_used:
        for sign, p in ((1.0, pa), (-1.0, pb)):
            pos = np.flatnonzero(y == k)
            neg = np.flatnonzero(y != k)
            for i in pos:
                phi[i] += sign * np.mean([psi(p[i, k], p[j, k]) for j in neg]) / len(pos) / len(k_used)
            for j in neg:
                phi[j] += sign * np.mean([psi(p[i, k], p[j, k]) for i in pos]) / len(neg) / len(k_used)
    return sum((y == g).sum() * np.var(phi[y == g], ddof=1) for g in np.unique(y))


def test_ovr_macro_matches_sklearn_and_reference_variance():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 45)
    logits_a = np.eye(3)[y] * 1.2 + rng.normal(0, 1, (45, 3))
    logits_b = np.eye(3)[y] * 0.6 + rng.normal(0, 1, (45, 3))
    pa = np.exp(logits_a) / np.exp(logits_a).sum(1, keepdims=True)
    pb = np.exp(logits_b) / np.exp(logits_b).sum(1, keepdims=True)
    got = delong_test_ovr(pa, pb, y)
    assert got.auc_a == pytest.approx(roc_auc_score(y, pa, multi_class="ovr", average="macro"), abs=1e-12)
    assert got.auc_b == pytest.approx(roc_auc_score(y, pb, multi_class="ovr", average="macro"), abs=1e-12)
    assert got.se ** 2 == pytest.approx(reference_ovr_variance(pa, pb, y), abs=1e-9)
    assert got.p_value == pytest.approx(2 * norm.sf(abs(got.difference / got.se)), abs=1e-12)


def test_weighted_auroc_is_the_auroc_of_repeated_cases():
    from pathkit_bench.stats import weighted_auroc

    rng = np.random.default_rng(8)
    y = rng.random(40) < 0.4
    s = np.round(rng.normal(0, 1, 40) + y, 1)
    w = rng.integers(0, 4, (3, 40)).astype(float)
    got = weighted_auroc(s, y, w)
    for row, weights in zip(got, w, strict=True):
        keep = np.repeat(np.arange(40), weights.astype(int))
        assert row == pytest.approx(roc_auc_score(y[keep], s[keep]), abs=1e-12)
    assert weighted_auroc(s, y, np.ones(40))[0] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_bootstrap_auroc_comparison_agrees_with_delong():
    from pathkit_bench.stats import pairwise_bootstrap_auroc

    rng = np.random.default_rng(9)
    y = rng.random(300) < 0.5
    a = y * 1.0 + rng.normal(0, 1, 300)
    b = y * 0.4 + rng.normal(0, 1, 300)
    boot = pairwise_bootstrap_auroc(np.stack([a, b], axis=1)[None], y, 2000)
    dl = delong_test(a, b, y)
    assert boot.difference[0, 1] == pytest.approx(dl.difference, abs=1e-12)
    assert (boot.diff_low[0, 1], boot.diff_high[0, 1]) == pytest.approx((dl.ci_low, dl.ci_high), abs=0.02)
    assert boot.p_value[0, 1] < 0.01 and dl.p_value < 0.01
    # multi-class: the observed macro AUROC is sklearn's
    y3 = rng.integers(0, 3, 120)
    p = rng.dirichlet(np.ones(3), (1, 120, 2))
    boot3 = pairwise_bootstrap_auroc(p, y3, 200)
    assert boot3.mean[1] == pytest.approx(roc_auc_score(y3, p[0, :, 1], multi_class="ovr"), abs=1e-12)
