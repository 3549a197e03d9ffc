"""Leaderboards and cells tables carry a format version (docs/file-formats.md, "Format versions"):
leaderboard.parquet in its Parquet metadata, the suite's CSVs in suite.json. A version this pathkit
does not read is one line naming the file, and the report already there is kept; an old table
without a version still reads."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from pathkit_core.contracts import PathkitError


@pytest.fixture
def suite(tmp_path, planted_suite):
    return shutil.copytree(planted_suite, tmp_path / "suite")


def _board_version(path):
    return json.loads(pl.read_parquet_metadata(path)["pathkit.leaderboard"])


def test_a_suite_folder_records_the_versions_of_its_tables(suite):
    assert _board_version(suite / "leaderboard.parquet") == {"format": "pathkit.leaderboard", "format_version": 1}
    record = json.loads((suite / "suite.json").read_text())
    assert record["formats"] == {"leaderboard.csv": 1, "cells.csv": 1}


def _rewrite_board(suite, metadata):
    board = pl.read_parquet(suite / "leaderboard.parquet")
    board.write_parquet(suite / "leaderboard.parquet", metadata=metadata)


@pytest.mark.parametrize("metadata, problem", [
    ({"pathkit.leaderboard": '{"format": "pathkit.leaderboard", "format_version": 3}'},
     "leaderboard format version 3 is newer than"),
    ({"pathkit.leaderboard": "not json"}, "damaged pathkit.leaderboard metadata"),
    ({"pathkit.leaderboard": '{"format_version": "x"}'}, "format version 'x' is not a version number"),
])
def test_a_leaderboard_of_another_version_is_refused_and_the_report_kept(suite, cli, metadata, problem):
    _rewrite_board(suite, metadata)
    before = (suite / "report.html").read_bytes() if (suite / "report.html").exists() else None
    result = cli("report", suite)
    assert result.exit_code == 2 and problem in " ".join(result.stderr.split()), result.output
    assert str(suite / "leaderboard.parquet") in " ".join(result.stderr.split()).replace(" ", "") or \
        "leaderboard.parquet" in result.stderr
    assert "Traceback" not in result.output
    after = (suite / "report.html").read_bytes() if (suite / "report.html").exists() else None
    assert after == before


def test_a_cells_table_of_a_future_version_is_refused(suite):
    from pathkit_bench.suite.analysis import SuiteAnalysis

    record = json.loads((suite / "suite.json").read_text())
    record["formats"]["cells.csv"] = 2
    (suite / "suite.json").write_text(json.dumps(record))
    with pytest.raises(PathkitError, match=r"cells\.csv: cells\.csv format version 2 is newer than"):
        SuiteAnalysis(suite)


def test_tables_without_versions_still_read(suite):
    from pathkit_bench.suite.analysis import SuiteAnalysis

    _rewrite_board(suite, None)
    record = json.loads((suite / "suite.json").read_text())
    del record["formats"]
    (suite / "suite.json").write_text(json.dumps(record))
    analysis = SuiteAnalysis(suite)
    assert analysis.frame.height > 0 and analysis.cells.height > 0


def test_a_dataset_leaderboard_records_its_version_and_refuses_another(tmp_path):
    from pathkit_bench.report.matrix import Leaderboards, read_leaderboard

    folder = tmp_path / "leaderboards" / "demo"
    folder.mkdir(parents=True)
    board = pl.DataFrame({"dataset": ["demo"], "encoder": ["e"], "generator": ["g"], "metric": ["m"],
                          "score": ["AUROC"], "value": [0.5]})
    board.write_parquet(folder / "leaderboard.parquet")  # as 0.1.0 wrote it: no version
    assert read_leaderboard(folder / "leaderboard.parquet").height == 1
    board.write_parquet(folder / "leaderboard.parquet",
                        metadata={"pathkit.leaderboard": '{"format": "pathkit.leaderboard", "format_version": 2}'})
    with pytest.raises(PathkitError, match="leaderboard format version 2 is newer than"):
        _ = Leaderboards(tmp_path / "leaderboards").frame
