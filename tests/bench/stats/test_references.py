"""The comparison statistics against independent reference implementations.

- DeLong's paired AUROC test and the interval of the difference against R's pROC
  (`roc.test(r1, r2, paired=TRUE, method="delong")`), on random and on heavily tied data, to 1e-9;
- McNemar's exact test, Holm, Benjamini-Hochberg, Wilson and Clopper-Pearson against statsmodels;
- Friedman's test against `scipy.stats.friedmanchisquare` and R's `friedman.test`, the Nemenyi
  critical difference against Demšar (2006)'s formula with R's `qtukey`;
- the paired bootstrap's and DeLong's false-positive rates for two equally good models (simulated).

R is a Debian package (`r-base-core`, `r-cran-proc`; `.ci/run` installs them): where `Rscript` or
pROC is missing the R comparisons skip with that reason; the others always run.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import numpy as np
import pytest
from scipy.stats import friedmanchisquare

from pathkit_bench.stats import (
    benjamini_hochberg,
    delong_test,
    friedman_test,
    holm,
    mcnemar_exact,
    nemenyi_cd,
)
from pathkit_sdk.intervals import proportion_ci

sm_tables = pytest.importorskip("statsmodels.stats.contingency_tables", reason="statsmodels is not installed")
sm_multitest = pytest.importorskip("statsmodels.stats.multitest")
sm_proportion = pytest.importorskip("statsmodels.stats.proportion")

R_SCRIPT = r"""
suppressMessages(library(pROC))
library(jsonlite)
"""

R_DRIVER = r"""
args <- commandArgs(trailingOnly = TRUE)
cases <- jsonlite::fromJSON(args[1], simplifyVector = FALSE)
out <- list()
for (i in seq_along(cases$delong)) {
  d <- lapply(cases$delong[[i]], unlist)
  r1 <- pROC::roc(d$y, d$a, levels = c(0, 1), direction = "<", quiet = TRUE)
  r2 <- pROC::roc(d$y, d$b, levels = c(0, 1), direction = "<", quiet = TRUE)
  t <- pROC::roc.test(r1, r2, paired = TRUE, method = "delong")
  out$delong[[i]] <- list(auc_a = as.numeric(pROC::auc(r1)), auc_b = as.numeric(pROC::auc(r2)),
                          z = unname(t$statistic), p = t$p.value, low = t$conf.int[1], high = t$conf.int[2])
}
for (i in seq_along(cases$friedman)) {
  rows <- cases$friedman[[i]]
  m <- matrix(unlist(rows), nrow = length(rows), byrow = TRUE)
  f <- friedman.test(m)
  out$friedman[[i]] <- list(chi2 = unname(f$statistic), p = f$p.value)
}
out$qtukey <- sapply(2:10, function(k) qtukey(0.95, k, Inf) / sqrt(2))
cat(jsonlite::toJSON(out, digits = NA, auto_unbox = TRUE))
"""


def _r_available() -> str:
    if shutil.which("Rscript") is None:
        return "Rscript is not installed (Debian r-base-core)"
    probe = subprocess.run(["Rscript", "-e", "library(pROC); library(jsonlite)"], capture_output=True, text=True)
    if probe.returncode != 0:
        return "R's pROC or jsonlite package is missing (Debian r-cran-proc, r-cran-jsonlite)"
    return ""


def _delong_cases():
    """Ten random tables and five with heavy ties (scores on a coarse grid, some shared by both models)."""
    rng = np.random.default_rng(20261204)
    cases = []
    for i in range(15):
        n = int(rng.integers(30, 200))
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        a = y * rng.normal(0.8, 1.0) + rng.normal(size=n)
        b = 0.6 * a + y * rng.normal(0.5, 0.5) + rng.normal(size=n)
        if i >= 10:
            a, b = np.round(a * 2) / 2, np.round(b * 2) / 2
            b[: n // 4] = a[: n // 4]
        cases.append({"y": y.tolist(), "a": a.tolist(), "b": b.tolist()})
    return cases


def _friedman_cases():
    rng = np.random.default_rng(7)
    tables = [rng.normal(size=(12, 4)) + np.array([0, 0.3, 0.5, 0.1]) for _ in range(3)]
    tables.append(np.round(rng.normal(size=(9, 5)), 1))  # ties within tasks
    return [t.tolist() for t in tables]


@pytest.fixture(scope="module")
def r_results(tmp_path_factory):
    reason = _r_available()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("r-reference")
    inputs = folder / "cases.json"
    inputs.write_text(json.dumps({"delong": _delong_cases(), "friedman": _friedman_cases()}))
    script = folder / "reference.R"
    script.write_text(R_SCRIPT + R_DRIVER)
    done = subprocess.run(["Rscript", str(script), str(inputs)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("index", range(15))
def test_delong_equals_pROC_to_1e9(r_results, index):
    case = _delong_cases()[index]
    reference = r_results["delong"][index]
    ours = delong_test(case["a"], case["b"], case["y"])
    assert ours.auc_a == pytest.approx(reference["auc_a"], abs=1e-12)
    assert ours.auc_b == pytest.approx(reference["auc_b"], abs=1e-12)
    assert ours.z == pytest.approx(reference["z"], abs=1e-9)
    assert ours.p_value == pytest.approx(reference["p"], abs=1e-9)
    assert ours.ci_low == pytest.approx(reference["low"], abs=1e-9)
    assert ours.ci_high == pytest.approx(reference["high"], abs=1e-9)


@pytest.mark.parametrize("index", range(4))
def test_friedman_equals_scipy_and_R(r_results, index):
    table = np.asarray(_friedman_cases()[index])
    ours = friedman_test(table)
    scipy_result = friedmanchisquare(*table.T)
    assert ours.statistic == pytest.approx(float(scipy_result.statistic), rel=1e-12)
    assert ours.p_value == pytest.approx(float(scipy_result.pvalue), rel=1e-12)
    assert ours.statistic == pytest.approx(r_results["friedman"][index]["chi2"], rel=1e-9)
    assert ours.p_value == pytest.approx(r_results["friedman"][index]["p"], rel=1e-7)


def test_nemenyi_cd_is_demsars_formula_with_R_qtukey(r_results):
    for k, q in zip(range(2, 11), r_results["qtukey"], strict=True):
        for n_tasks in (1, 5, 14, 30):
            assert nemenyi_cd(k, n_tasks) == pytest.approx(q * math.sqrt(k * (k + 1) / (6.0 * n_tasks)), rel=1e-7)


def test_friedman_equals_scipy_without_R():
    for table in _friedman_cases():
        table = np.asarray(table)
        ours = friedman_test(table)
        assert ours.statistic == pytest.approx(float(friedmanchisquare(*table.T).statistic), rel=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_mcnemar_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 120))
    a = rng.random(n) < rng.uniform(0.3, 0.9)
    b = np.where(rng.random(n) < 0.7, a, rng.random(n) < 0.6)
    ours = mcnemar_exact(a, b)
    table = [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]
    reference = sm_tables.mcnemar(table, exact=True)
    assert ours.p_value == pytest.approx(float(reference.pvalue), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_holm_and_bh_equal_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 0.2, int(rng.integers(2, 30)))
    p[:2] = p[0]  # a tie
    assert np.allclose(holm(p), sm_multitest.multipletests(p, method="holm")[1], atol=1e-14, rtol=0)
    assert np.allclose(benjamini_hochberg(p), sm_multitest.multipletests(p, method="fdr_bh")[1], atol=1e-14, rtol=0)


@pytest.mark.parametrize(("successes", "n"), [(0, 10), (1, 10), (7, 10), (10, 10), (37, 150), (149, 150)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_and_clopper_pearson_equal_statsmodels(successes, n, level):
    alpha = 1.0 - level
    wilson = proportion_ci(successes, n, level, "wilson")
    exact = proportion_ci(successes, n, level, "exact")
    assert wilson == pytest.approx(sm_proportion.proportion_confint(successes, n, alpha, method="wilson"), abs=1e-12)
    assert exact == pytest.approx(sm_proportion.proportion_confint(successes, n, alpha, method="beta"), abs=1e-9)


def test_delong_and_the_paired_bootstrap_hold_their_level_for_equal_models(load_benchmark):
    # benchmarks/bench_error_rates.py's simulation (1,000 repetitions there, docs/comparisons.md).
    # 400 repetitions: the binomial standard error of a 5 % rate is 1.1 points, so a rate of 10 %
    # (what a test that doubles its error rate gives) lies 4.5 standard errors above the bound.
    rates = load_benchmark("bench_error_rates").false_positive_rates(400, resamples=400)
    assert rates["delong"] <= 0.08, rates
    assert rates["paired_bootstrap"] <= 0.08, rates
    assert rates["delong"] >= 0.02 and rates["paired_bootstrap"] >= 0.02, rates  # not blind either
