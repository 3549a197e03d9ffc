"""The seeds x cases inference (`stats.seeds`): its variance terms against a two-way ANOVA and a crossed
mixed model (statsmodels), its p-value against Student's t and the normal at the two ends, its AUROC
terms against DeLong's test, and its interval against its own p-value."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pathkit_bench.stats import delong_test, delong_test_ovr
from pathkit_bench.stats.seeds import (
    generalized_interval,
    generalized_p,
    pairwise_seeds,
    pairwise_seeds_auroc,
    seed_case_variance,
)
from pathkit_core.contracts import PathkitError

S, N = 4, 30


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(S, N, 2)) + rng.normal(0, 0.5, (S, 1, 2)) + rng.normal(0, 1, (1, N, 2)))


@pytest.fixture(scope="module")
def long(table):
    pd = pytest.importorskip("pandas")
    d = table[:, :, 0] - table[:, :, 1]
    return pd.DataFrame({"d": d.ravel(), "seed": np.repeat(np.arange(S), N), "case": np.tile(np.arange(N), S)})


def test_terms_are_the_mean_squares_of_the_two_way_anova(table, long):
    smf = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    anova = anova_lm(smf.ols("d ~ C(case) + C(seed)", long).fit())
    ms = anova["sum_sq"] / anova["df"]
    case, seed, resid = (ms[k] / (N * S) for k in ("C(case)", "C(seed)", "Residual"))
    result = pairwise_seeds(table)
    assert result.var_cases[0, 1] == pytest.approx(case - resid, rel=1e-10)
    assert result.var_seeds[0, 1] == pytest.approx(seed, rel=1e-10)
    assert result.var_interaction[0, 1] == pytest.approx(resid, rel=1e-10)
    assert result.se[0, 1] ** 2 == pytest.approx(case + seed - resid, rel=1e-10)
    assert result.difference[0, 1] == pytest.approx(long["d"].mean())


def test_variance_is_the_mixed_model_reml_variance_of_the_mean(table, long):
    """Balanced crossed table: REML's variance components are the ANOVA ones, and the variance of the
    fixed intercept is sigma_c^2 / n + sigma_g^2 / S + sigma_e^2 / (n S)."""
    smf = pytest.importorskip("statsmodels.formula.api")

    model = smf.mixedlm("d ~ 1", long, groups=np.ones(len(long)), re_formula="0",
                        vc_formula={"case": "0 + C(case)", "seed": "0 + C(seed)"})
    fit = model.fit(reml=True)
    result = pairwise_seeds(table)
    sigma_c, sigma_g = fit.vcomp  # in the order of the names: case, seed
    assert sigma_c / N == pytest.approx(result.var_cases[0, 1], rel=1e-3)
    assert sigma_g / S == pytest.approx(result.var_seeds[0, 1] - result.var_interaction[0, 1], rel=1e-3)
    assert fit.scale / (N * S) == pytest.approx(result.var_interaction[0, 1], rel=1e-3)
    assert fit.bse["Intercept"] ** 2 == pytest.approx(result.se[0, 1] ** 2, rel=1e-3)


def test_seeds_alone_give_students_t_and_cases_alone_the_normal():
    rng = np.random.default_rng(1)
    shifts = rng.normal(0.3, 1.0, (5, 1, 2))
    only_seeds = np.broadcast_to(shifts, (5, 40, 2))  # every case alike within a seed
    r = pairwise_seeds(only_seeds)
    per_seed = shifts[:, 0, 0] - shifts[:, 0, 1]
    assert r.p_value[0, 1] == pytest.approx(stats.ttest_1samp(per_seed, 0.0).pvalue, rel=1e-9)
    low, high = stats.t.interval(0.95, 4, loc=per_seed.mean(), scale=stats.sem(per_seed))
    assert (r.diff_low[0, 1], r.diff_high[0, 1]) == pytest.approx((low, high), rel=1e-6)
    cases = rng.normal(0.0, 1.0, (1, 40, 2)) + np.array([0.4, 0.0])
    only_cases = np.broadcast_to(cases, (3, 40, 2))  # every seed alike
    r = pairwise_seeds(only_cases)
    d = cases[0, :, 0] - cases[0, :, 1]
    z = d.mean() / (d.std(ddof=1) / np.sqrt(40))
    assert r.p_value[0, 1] == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-9)


@pytest.mark.parametrize("t_value", [2.0, 12.7, 60.0])
@pytest.mark.parametrize("seeds", [2, 3, 5, 10])
def test_the_quadrature_is_students_t_to_1e_10(seeds, t_value):
    p = generalized_p(t_value, 0.0, 1.0, seeds)  # |Z| / sqrt(U / (S - 1)) is Student's t
    exact = 2 * stats.t.sf(t_value, seeds - 1)
    assert p == pytest.approx(exact, rel=1e-9)


def test_interval_ends_where_the_p_value_is_one_minus_the_level(table):
    r = pairwise_seeds(table, level=0.9)
    v = seed_case_variance(np.asarray(table).mean(axis=1), [np.asarray(table)])
    half = r.diff_high[0, 1] - r.difference[0, 1]
    assert generalized_p(half, v.cases[0, 1], v.seeds[0, 1], S) == pytest.approx(0.1, abs=1e-9)
    low, high = generalized_interval(0.0, v.cases[0, 1], v.seeds[0, 1], S, 0.9)
    assert high == pytest.approx(half) and low == pytest.approx(-half)
    assert r.ci_low[0] < r.mean[0] < r.ci_high[0]
    assert np.all(np.diag(r.p_value) == 1.0) and r.p_value[0, 1] == r.p_value[1, 0]


def test_auroc_terms_with_alike_seeds_are_delongs():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 80)
    scores = y[:, None] * np.array([1.0, 0.6]) + rng.normal(0, 1, (80, 2))
    seeds = np.broadcast_to(scores, (3, 80, 2))
    r = pairwise_seeds_auroc(seeds, y)
    ref = delong_test(scores[:, 0], scores[:, 1], y == 1)
    assert r.difference[0, 1] == pytest.approx(ref.difference)
    assert r.se[0, 1] == pytest.approx(ref.se, rel=1e-10)
    assert r.p_value[0, 1] == pytest.approx(ref.p_value, rel=1e-8)
    from sklearn.metrics import roc_auc_score

    assert r.mean[1] == pytest.approx(roc_auc_score(y, scores[:, 1]))
    k3 = rng.integers(0, 3, 90)
    probs = rng.dirichlet(np.ones(3), (90, 2)) + 0.4 * np.eye(3)[k3][:, None, :] * np.array([1.0, 0.5])[None, :, None]
    r = pairwise_seeds_auroc(np.broadcast_to(probs, (2, 90, 2, 3)), k3)
    ref = delong_test_ovr(probs[:, 0], probs[:, 1], k3)
    assert r.difference[0, 1] == pytest.approx(ref.difference) and r.se[0, 1] == pytest.approx(ref.se, rel=1e-10)


def test_auroc_seed_term_is_the_spread_of_the_per_seed_aurocs():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    y = np.arange(60) % 2
    scores = y[None, :, None] * rng.normal(1.0, 0.5, (4, 1, 2)) + rng.normal(0, 1, (4, 60, 2))
    r = pairwise_seeds_auroc(scores, y)
    per_seed = np.array([[roc_auc_score(y, scores[s, :, m]) for m in range(2)] for s in range(4)])
    diffs = per_seed[:, 0] - per_seed[:, 1]
    assert r.var_seeds[0, 1] == pytest.approx(np.var(diffs, ddof=1) / 4)
    assert r.mean == pytest.approx(per_seed.mean(axis=0))


def test_one_seed_and_bad_shapes_are_refused():
    with pytest.raises(PathkitError, match="at least two seeds"):
        pairwise_seeds(np.zeros((1, 10, 2)))
    with pytest.raises(PathkitError, match="class scores must be"):
        pairwise_seeds_auroc(np.zeros((2, 10)), np.zeros(10))
    with pytest.raises(PathkitError, match="level"):
        pairwise_seeds(np.zeros((2, 10, 2)), level=1.5)
