"""`pathkit compare` and `pathkit_bench.compare`: two run folders scored on the same test
cases, each score by the test its metric declares (DeLong, McNemar, paired bootstrap); refusals
that name the differing cases."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pathkit_bench.compare import compare_runs
from pathkit_bench.stats import delong_test, delong_test_ovr, mcnemar_exact
from pathkit_core.contracts import PathkitError
from pathkit_core.report.run_folder import RunFolder
from tests.bench.suite._suite import classification_run


def binary_pair(tmp_path, n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    pa = 1 / (1 + np.exp(-(2.0 * y - 1 + rng.normal(0, 1, n))))
    pb = 1 / (1 + np.exp(-(0.6 * y - 0.3 + rng.normal(0, 1, n))))
    a = classification_run(tmp_path / "A", np.stack([1 - pa, pa], 1), y)
    b = classification_run(tmp_path / "B", np.stack([1 - pb, pb], 1), y)
    return a, b, y, pa, pb


def test_auroc_by_delong_and_accuracy_by_mcnemar(tmp_path):
    a, b, y, pa, pb = binary_pair(tmp_path)
    rows, skipped = compare_runs(RunFolder(a), RunFolder(b), ["AUROC", "accuracy"], n_resamples=500)
    by_key = {r.key: r for r in rows}
    ref = delong_test(pa, pb, y == 1)
    auroc = by_key["AUROC"]
    assert auroc.test == "DeLong" and skipped == []
    assert (auroc.difference, auroc.p_value) == pytest.approx((ref.difference, ref.p_value), abs=1e-12)
    assert auroc.a == pytest.approx(ref.auc_a) and auroc.b == pytest.approx(ref.auc_b)
    acc = by_key["accuracy"]
    mc = mcnemar_exact((pa >= 0.5) == (y == 1), (pb >= 0.5) == (y == 1))
    assert acc.test == "McNemar exact" and acc.p_value == pytest.approx(mc.p_value, abs=1e-12)
    assert acc.difference == pytest.approx(mc.difference)
    # Holm over the two scores: never below the raw p-values
    assert all(r.p_adjusted >= r.p_value for r in rows)
    assert max(r.p_adjusted for r in rows) == pytest.approx(min(1.0, max(min(r.p_value for r in rows) * 2,
                                                                         max(r.p_value for r in rows))))


def test_multiclass_auroc_is_one_vs_rest_delong(tmp_path):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 90)
    pa = rng.dirichlet(np.ones(3), 90) + np.eye(3)[y]
    pb = rng.dirichlet(np.ones(3), 90) + 0.3 * np.eye(3)[y]
    pa, pb = pa / pa.sum(1, keepdims=True), pb / pb.sum(1, keepdims=True)
    a = classification_run(tmp_path / "A", pa, y)
    b = classification_run(tmp_path / "B", pb, y)
    rows, _ = compare_runs(RunFolder(a), RunFolder(b), ["AUROC"])
    ref = delong_test_ovr(pa, pb, y)
    assert rows[0].difference == pytest.approx(ref.difference, abs=1e-9)
    assert rows[0].p_value == pytest.approx(ref.p_value, abs=1e-9)
    assert "one-vs-rest" in rows[0].note


def test_identical_runs_differ_by_zero_with_p_one(tmp_path):
    a, _, y, pa, _ = binary_pair(tmp_path)
    same = classification_run(tmp_path / "A2", np.stack([1 - pa, pa], 1), y)
    rows, _ = compare_runs(RunFolder(a), RunFolder(same), ["AUROC", "accuracy"], n_resamples=200)
    assert [r.difference for r in rows] == [0.0, 0.0] and [r.p_value for r in rows] == [1.0, 1.0]


def test_default_keys_skip_scores_without_per_case_values(tmp_path):
    a, b, *_ = binary_pair(tmp_path)
    rows, skipped = compare_runs(RunFolder(a), RunFolder(b))
    assert [r.key for r in rows] == ["AUROC"]  # the headline scores: AUROC, macro_F1
    assert any(s.startswith("macro_F1") for s in skipped) or not skipped
    with pytest.raises(PathkitError, match="'F1' has no per-case values"):
        compare_runs(RunFolder(a), RunFolder(b), ["F1"])
    with pytest.raises(PathkitError, match="no score 'nope'"):
        compare_runs(RunFolder(a), RunFolder(b), ["nope"])


def test_different_test_cases_are_refused_by_name(tmp_path):
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 20)
    p = rng.random((20, 2))
    ids = [f"C{i:03d}" for i in range(20)]
    a = classification_run(tmp_path / "A", p, y, ids)
    b = classification_run(tmp_path / "B", p, y, ids[:18] + ["X1", "X2"])
    with pytest.raises(PathkitError, match=r"different test cases: 2 only in A \(C018, C019\); 2 only in B "
                                           r"\(X1, X2\)"):
        compare_runs(RunFolder(a), RunFolder(b))
    c = classification_run(tmp_path / "C", p, 1 - y, ids)
    with pytest.raises(PathkitError, match="different references for 20 test case"):
        compare_runs(RunFolder(a), RunFolder(c))


def test_cli_compare_prints_refuses_and_writes_csv(cli, tmp_path):
    a, b, *_ = binary_pair(tmp_path)
    out = tmp_path / "cmp.csv"
    result = cli("compare", a, b, "--metric", "AUROC,accuracy", "--out", out)
    assert result.exit_code == 0, result.output
    assert "shared test cases" in result.output and "accuracy: discordant cases:" in " ".join(result.output.split())
    import polars as pl

    written = pl.read_csv(out)
    assert written["test"].to_list() == ["DeLong", "McNemar exact"]
    assert written.columns[:6] == ["key", "metric", "test", "a", "b", "difference"]
    as_json = json.loads(cli("compare", a, b, "--json", "--metric", "AUROC").output)
    assert as_json["comparisons"][0]["key"] == "AUROC"
    other = classification_run(tmp_path / "D", np.random.default_rng(3).random((5, 2)), [0, 1, 0, 1, 0],
                               ["Z1", "Z2", "Z3", "Z4", "Z5"])
    refused = cli("compare", a, other)
    assert refused.exit_code == 2 and "different test cases" in refused.output and "Z1" in refused.output
    missing = cli("compare", a, tmp_path / "nowhere")
    assert missing.exit_code == 2 and "is not a run folder" in missing.output


def test_report_metrics_compare_per_case_scores_and_name_corpus_level(tmp_path):
    from tests.core.report._runs import report_run

    run = report_run(tmp_path / "R1")
    rows, _ = compare_runs(RunFolder(run), RunFolder(run), ["CRQS", "BLEU-4"], n_resamples=100)
    crqs, bleu = rows
    assert crqs.test == "paired bootstrap" and crqs.difference == 0.0 and crqs.p_value == 1.0
    assert "corpus-level" in bleu.note and "mean per-case BLEU-4" in bleu.note
