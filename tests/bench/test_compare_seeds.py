"""`pathkit compare` of multi-seed runs (`pathkit_bench.compare_seeds`): several run folders per side,
paired by their recorded seed, compared by the suites' seeds x cases inference; the numbers checked
against the variance terms computed here by hand and against scikit-learn's per-seed AUROC; one run per
side exactly as before; two seeds say how little they show; refusals name the runs and seeds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from pathkit_bench.compare import compare_runs
from pathkit_bench.compare_seeds import compare_seed_runs
from pathkit_bench.stats.seeds import generalized_p, pairwise_seeds_auroc
from pathkit_core.contracts import PathkitError
from pathkit_core.report.run_folder import RunFolder
from tests.bench.suite._suite import classification_run

N, SEEDS = 80, (0, 1, 2)


@pytest.fixture(scope="module")
def seed_runs(tmp_path_factory):
    """Runs of A (the better model) and B for seeds 0, 1, 2 on the same 80 cases; their probabilities."""
    root = tmp_path_factory.mktemp("seed-runs")
    rng = np.random.default_rng(7)
    y = (np.arange(N) % 2).astype(int)
    own = {"A": rng.normal(0, 1, N), "B": rng.normal(0, 1, N)}  # each model's errors, shared by its seeds
    runs, probs = {"A": [], "B": []}, {"A": [], "B": []}
    for s in SEEDS:
        for side, skill in (("A", 1.2), ("B", 0.7)):
            logit = (skill + rng.normal(0, 0.2)) * (2 * y - 1) + own[side] + rng.normal(0, 0.6, N)
            p = 1 / (1 + np.exp(-logit))
            runs[side].append(classification_run(root / f"{side}{s}", np.stack([1 - p, p], 1), y, encoder=side,
                                                 seed=s))
            probs[side].append(p)
    return runs, {k: np.asarray(v) for k, v in probs.items()}, y


def _folders(paths):
    return [RunFolder(p) for p in paths]


def test_three_seeds_use_the_seeds_x_cases_terms(seed_runs):
    runs, probs, y = seed_runs
    rows, skipped, seeds = compare_seed_runs(_folders(runs["A"]), _folders(runs["B"][::-1]), ["AUROC", "accuracy"])
    assert seeds == [0, 1, 2] and skipped == []  # B given in another order: paired by the recorded seed
    auroc, acc = rows
    # AUROC: the mean over seeds of each seed's AUROC difference (scikit-learn), the p of stats.seeds
    per_seed = [roc_auc_score(y, probs["A"][s]) - roc_auc_score(y, probs["B"][s]) for s in range(3)]
    assert auroc.difference == pytest.approx(np.mean(per_seed), abs=1e-12)
    ref = pairwise_seeds_auroc(np.stack([probs["A"], probs["B"]], -1), y)
    assert (auroc.p_value, auroc.ci_low, auroc.ci_high) == pytest.approx(
        (ref.p_value[0, 1], ref.diff_low[0, 1], ref.diff_high[0, 1]), abs=1e-12)
    assert auroc.test == "seeds x cases (AUROC)" and auroc.n_cases == N and "3 seeds" in auroc.note
    assert auroc.a == pytest.approx(np.mean([roc_auc_score(y, p) for p in probs["A"]]))
    # accuracy: the two-way table of per-case correctness differences, its mean squares by hand
    right = {k: ((v >= 0.5) == (y == 1)).astype(float) for k, v in probs.items()}
    d = right["A"] - right["B"]  # (seeds, cases)
    S, n = d.shape
    case_term = d.mean(0).var(ddof=1) / n
    seed_term = d.mean(1).var(ddof=1) / S
    resid = d - d.mean(0, keepdims=True) - d.mean(1, keepdims=True) + d.mean()
    inter = (resid**2).sum() / ((n - 1) * (S - 1)) / (n * S)
    assert acc.difference == pytest.approx(d.mean(), abs=1e-12)
    assert acc.p_value == pytest.approx(float(generalized_p(d.mean(), max(case_term - inter, 0.0), seed_term, S)),
                                        abs=1e-12)
    assert acc.test == "seeds x cases" and "correct" in acc.note
    # Holm over the two scores
    assert max(r.p_adjusted for r in rows) == pytest.approx(min(1.0, max(2 * min(auroc.p_value, acc.p_value),
                                                                         max(auroc.p_value, acc.p_value))))


def test_one_run_per_side_is_compared_exactly_as_before(seed_runs):
    runs, _, _ = seed_runs
    a, b = RunFolder(runs["A"][0]), RunFolder(runs["B"][0])
    rows, skipped, seeds = compare_seed_runs([a], [b], ["AUROC", "accuracy"], n_resamples=200)
    before, skipped_before = compare_runs(a, b, ["AUROC", "accuracy"], n_resamples=200)
    assert seeds == [] and skipped == skipped_before
    assert [r.row() for r in rows] == [r.row() for r in before]


def test_two_seeds_say_how_little_they_can_show(seed_runs):
    runs, _, _ = seed_runs
    rows, _, seeds = compare_seed_runs(_folders(runs["A"][:2]), _folders(runs["B"][:2]), ["AUROC"])
    assert seeds == [0, 1] and "two seeds" in rows[0].note and "1 df" in rows[0].note


def test_unpaired_seeds_and_different_cases_are_refused_by_name(seed_runs, tmp_path):
    runs, probs, y = seed_runs
    with pytest.raises(PathkitError, match=r"seed\(s\) 2 only in A"):
        compare_seed_runs(_folders(runs["A"]), _folders(runs["B"][:2]))
    with pytest.raises(PathkitError, match="A holds two runs of seed 0"):
        compare_seed_runs(_folders([runs["A"][0], runs["A"][0]]), _folders(runs["B"][:2]))
    p = probs["A"][1][:-1]  # seed 1 of A scored one case fewer
    short = classification_run(tmp_path / "short", np.stack([1 - p, p], 1), y[:-1], encoder="A", seed=1)
    with pytest.raises(PathkitError, match="different test cases: 1 only in A"):
        compare_seed_runs(_folders([runs["A"][0], short]), _folders(runs["B"][:2]))


def test_cli_compares_several_seeds_and_keeps_the_one_seed_output(cli, seed_runs, tmp_path):
    import polars as pl

    runs, _, _ = seed_runs
    args = ["compare", runs["A"][0], runs["B"][0], "--also-a", runs["A"][1], "--also-b", runs["B"][1],
            "--also-a", runs["A"][2], "--also-b", runs["B"][2], "--metric", "AUROC"]
    shown = cli(*args, "--out", tmp_path / "three.csv")
    assert shown.exit_code == 0, shown.output
    assert "x 3 seeds (0, 1, 2)" in " ".join(shown.output.split())
    assert pl.read_csv(tmp_path / "three.csv")["seeds"].to_list() == ["0;1;2"]
    found = json.loads(cli(*args, "--json").output)
    assert found["seeds"] == [0, 1, 2] and found["comparisons"][0]["test"] == "seeds x cases (AUROC)"
    assert "two seeds" in " ".join(cli(*args[:7], "--metric", "AUROC").output.split())
    one = cli("compare", runs["A"][0], runs["B"][0], "--metric", "AUROC", "--out", tmp_path / "one.csv")
    assert one.exit_code == 0 and "seeds" not in pl.read_csv(tmp_path / "one.csv").columns
    refused = cli("compare", runs["A"][0], runs["B"][0], "--also-a", runs["A"][1])
    assert refused.exit_code == 2 and "seed(s) 1 only in A" in " ".join(refused.output.split())
