"""The shipped endpoints suite: survival, ordinal and retrieval on their synthetic demos over two
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
    assert set(cells["task"]) == {"survival", "grading", "retrieval"} and cells.height == 6
    comparisons = pl.read_csv(folder / "comparisons.csv")
    assert set(comparisons["task"]) == {"survival", "grading", "retrieval"}
    report = (folder / "report.html").read_text()
    for task in ("survival", "grading", "retrieval"):
        assert task in report
