"""The shipped endpoints suite: survival, ordinal, retrieval and few-shot on their synthetic demos over two
encoders, each task's encoders compared on the same test cases, and the report's sections."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_endpoints_suite_compares_the_encoders_on_every_new_task(cli, tmp_path):
    import polars as pl

    config = REPO / "examples" / "suites" / "endpoints-synthetic.toml"
    result = cli("bench", "--config", config, "--workdir", tmp_path / "work", "--cpu")
    assert result.exit_code == 0, result.output
    folder = tmp_path / "work" / "suites" / "endpoints-synthetic"
    cells = pl.read_csv(folder / "cells.csv")
    tasks = {"survival", "grading", "retrieval", "few-shot"}
    assert set(cells["task"]) == tasks and cells.height == 8
    comparisons = pl.read_csv(folder / "comparisons.csv")
    # every task compared, the few-shot curve at each k besides its compared score (4 shots)
    points = {f"few-shot acc@{k}shot" for k in (1, 2, 8, 16, 32)}
    assert set(comparisons["task"]) == tasks | points, comparisons["task"].to_list()
    assert comparisons.height == 4 + len(points)  # two encoders: one pair per comparison
    by_task = {r["task"]: r for r in comparisons.iter_rows(named=True)}
    assert by_task["survival"]["test"].startswith("paired bootstrap of the statistic")  # C-index per resample
    assert by_task["grading"]["test"].startswith("paired bootstrap of the statistic")  # QWK per resample
    assert by_task["few-shot"]["score"] == "acc@4shot" and by_task["few-shot"]["n_cases"] == 36
    assert {r["encoder_a"] for r in by_task.values()} == {"tiny-vit"}
    assert {r["encoder_b"] for r in by_task.values()} == {"tiny-vit-wide"}
    ranks = pl.read_csv(folder / "ranks_encoder.csv")
    assert set(ranks["blocks"]) == {4}  # the curve's extra points do not count as tasks in the ranks
    report = (folder / "report.html").read_text()
    for task in (*tasks, *points):
        assert f"<h3>{task}</h3>" in report, task
