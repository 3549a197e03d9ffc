"""The suite analysis on planted cells (no training): the best cell is marked only when significant,
pairwise tests agree with the stats module, ranks and win/tie/loss follow the planted skills."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pathkit_bench.suite.analysis import SuiteAnalysis


@pytest.fixture(scope="module")
def planted(planted_suite):
    return SuiteAnalysis(planted_suite, resamples=400)


def test_best_cell_marked_only_when_significant(planted):
    headline = pl.DataFrame(planted.headline_rows())
    easy = headline.filter(pl.col("task") == "easy")
    # "strong" leads on both generators, but two strong cells (g1, g2) are alike: no single best cell
    assert not easy["best"].any()
    hard = headline.filter(pl.col("task") == "hard")
    assert not hard["best"].any()
    task = next(t for t in planted.tasks if t.task == "easy")
    strong = [i for i, c in enumerate(task.cells) if c[0] == "strong"]
    others = [i for i, c in enumerate(task.cells) if c[0] != "strong"]
    assert all(task.p_adjusted[i, j] < 0.05 and task.result.difference[i, j] > 0 for i in strong for j in others)
    assert task.p_adjusted[strong[0], strong[1]] > 0.05


def test_headline_means_are_the_seed_means_of_the_leaderboard(planted):
    board = planted.frame.filter((pl.col("score") == "AUROC") & (pl.col("task") == "easy"))
    row = next(r for r in planted.headline_rows() if r["task"] == "easy" and r["encoder"] == "tiny"
               and r["generator"] == "g1")
    values = board.filter((pl.col("encoder") == "tiny") & (pl.col("generator") == "g1"))["value"].to_list()
    assert row["mean"] == pytest.approx(np.mean(values)) and row["sd"] == pytest.approx(np.std(values, ddof=1))
    assert row["ci_low"] < row["mean"] < row["ci_high"] and row["seeds"] == 3


def test_ranks_friedman_and_win_tie_loss(planted):
    summary = planted.ranks("encoder")
    assert summary.names == ["small", "strong", "tiny"] and len(summary.blocks) == 4
    ranks = dict(zip(summary.names, summary.average_ranks, strict=True))
    assert ranks["strong"] == 1.0
    assert summary.cd == pytest.approx(2.343 * np.sqrt(3 * 4 / (6 * 4)), abs=2e-3)
    k = summary.names.index("strong")
    assert summary.wins[k].sum() >= 2  # strong beats the others significantly on the easy task
    assert (summary.wins + summary.ties + summary.losses)[k, k] == 0
    assert planted.ranks("generator").names == ["g1", "g2"]


def test_tables_written(planted):
    written = {p.name for p in planted.write_tables()}
    assert {"comparisons.csv", "headline.csv", "seeds.csv", "ranks_encoder.csv", "ranks_generator.csv",
            "win_tie_loss_encoder.csv"} <= written
    comparisons = pl.read_csv(planted.folder / "comparisons.csv")
    assert comparisons.height == 2 * 15 and (comparisons["p_adjusted"] >= comparisons["p_value"] - 1e-12).all()
    assert (comparisons["se"] ** 2).to_numpy() == pytest.approx((comparisons["var_cases"]
                                                                 + comparisons["var_seeds"]).to_numpy())
    assert comparisons["p_empirical"].null_count() == comparisons.height  # no resamples with several seeds


def test_a_task_whose_cells_differ_in_test_cases_is_not_compared(tmp_path):
    from pathkit_bench.suite.analysis import TaskComparison, compare_task

    from ._suite import classification_run

    rng = np.random.default_rng(0)
    a = classification_run(tmp_path / "a", rng.random((10, 2)), rng.integers(0, 2, 10))
    b = classification_run(tmp_path / "b", rng.random((10, 2)), rng.integers(0, 2, 10),
                           [f"Z{i}" for i in range(10)])
    task = TaskComparison("t", "AUROC", "higher", [("e1", "g"), ("e2", "g")], [0],
                          {("e1", "g"): {0: 0.5}, ("e2", "g"): {0: 0.5}},
                          {("e1", "g"): {0: str(a)}, ("e2", "g"): {0: str(b)}})
    compare_task(task, correction="holm", level=0.95, resamples=100)
    assert task.result is None and "different test cases" in task.note
    assert "10 only in e1/g (C000," in task.note and "10 only in e2/g (seed 0) (Z0," in task.note


def test_best_is_marked_when_one_cell_beats_every_other():
    from pathkit_bench.stats import pairwise_bootstrap
    from pathkit_bench.suite.analysis import TaskComparison

    rng = np.random.default_rng(3)
    scores = rng.random((2, 300, 1)) + np.array([0.0, 0.1, 0.3])[None, None, :] + rng.normal(0, 0.01, (2, 300, 3))
    cells = [("a", "g"), ("b", "g"), ("c", "g")]
    task = TaskComparison("t", "Dice", "higher", cells, [0, 1], {}, {})
    task.result = pairwise_bootstrap(scores, 500)
    task.p_adjusted = np.minimum(1, task.result.p_value * 3)
    assert task.best(0.05) == 2
    lower = TaskComparison("t", "ECE", "lower", cells, [0, 1], {}, {}, result=task.result,
                           p_adjusted=task.p_adjusted)
    assert lower.best(0.05) == 0  # lower is better: the smallest mean wins


def _subset(planted, name: str, seeds: list[int]):
    """A task of the planted suite compared again on some of its seeds."""
    from pathkit_bench.suite.analysis import TaskComparison, compare_task

    t = next(t for t in planted.tasks if t.task == name)
    task = TaskComparison(t.task, t.key, t.direction, t.cells, seeds,
                          {c: {s: v[s] for s in seeds} for c, v in t.seed_values.items()},
                          {c: {s: v[s] for s in seeds} for c, v in t.run_dirs.items()})
    return compare_task(task, correction="holm", level=0.95, resamples=400, registry=planted.registry)


def test_one_seed_is_compared_as_before_by_the_bootstrap(planted):
    """One seed: the case bootstrap, its rows with exactly the columns they always had."""
    from pathkit_bench.stats import PairwiseBootstrap, pairwise_bootstrap

    one = _subset(planted, "hard", [1])
    assert isinstance(one.result, PairwiseBootstrap) and one.note == ""
    assert one.test == "paired bootstrap of the mean per-case score (seeds x cases)"
    planted_one = SuiteAnalysis(planted.folder, resamples=400)
    planted_one.__dict__["tasks"] = [one]
    rows = planted_one.comparison_rows()
    assert list(rows[0]) == ["task", "score", "encoder_a", "generator_a", "encoder_b", "generator_b", "difference",
                             "ci_low", "ci_high", "p_value", "p_empirical", "p_adjusted", "correction", "test",
                             "n_cases", "n_seeds"]
    assert "note" not in planted_one.headline_rows()[0]
    from pathkit_bench.suite.analysis import _paired_data

    _, values, _ = _paired_data(one, planted.registry)
    again = pairwise_bootstrap(values, 400, 0, 0.95)
    assert np.array_equal(one.result.p_value, again.p_value) and np.array_equal(one.result.ci_low, again.ci_low)


def test_two_seeds_say_how_little_they_show(planted):
    from pathkit_bench.stats.seeds import PairwiseSeeds
    from pathkit_bench.suite.analysis import TWO_SEEDS

    two = _subset(planted, "easy", [0, 1])
    assert isinstance(two.result, PairwiseSeeds) and two.note == TWO_SEEDS
    assert "one degree of freedom" in two.note and "AUROC" in two.test
    three = next(t for t in planted.tasks if t.task == "easy")
    assert three.note == "" and three.result.n_seeds == 3
    # the same difference is less sure on two seeds than on three
    i, j = three.cells.index(("strong", "g1")), three.cells.index(("small", "g1"))
    assert two.result.p_value[i, j] > three.result.p_value[i, j]
    planted_two = SuiteAnalysis(planted.folder, resamples=400)
    planted_two.__dict__["tasks"] = [two]
    assert {r["note"] for r in planted_two.headline_rows()} == {TWO_SEEDS}
