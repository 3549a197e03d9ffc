"""Reruns of a finished suite, as issue 47's reproductions 3 and 4 left them to check (no training:
the planted suite folder): `--report-only` after a task's compared score changed in the TOML is
refused and the report kept; a second whole `pathkit bench` of a suite another holds is one line
before any cell runs."""

from __future__ import annotations

import shutil

import pytest

from pathkit_core.contracts import PathkitError

PLANTED = {"name": "planted", "encoders": ["strong", "small", "tiny"], "generators": ["g1", "g2"], "seeds": [0, 1, 2],
           "resamples": 400}


@pytest.mark.parametrize("easy, hard, changed", [
    ("accuracy", "accuracy", "easy: 'AUROC' -> 'accuracy'"),
    ("AUROC", "AUROC", "hard: 'accuracy' -> 'AUROC'"),
    ("", "accuracy", "easy: 'AUROC' -> ''"),
])
def test_report_only_after_the_compared_score_changed_is_refused(tmp_path, planted_suite, easy, hard, changed):
    from pathkit_bench.cli.bench import _check_report_only
    from pathkit_bench.suite.config import parse_suite

    folder = shutil.copytree(planted_suite, tmp_path / "suites" / "planted")
    report = (folder / "report.html").read_bytes() if (folder / "report.html").exists() else None
    tasks = [{"name": "easy", "dataset": "x1", **({"compare": easy} if easy else {})},
             {"name": "hard", "dataset": "x2", "compare": hard}]
    suite = parse_suite({**PLANTED, "tasks": tasks}, tmp_path / "suite.toml")
    with pytest.raises(PathkitError, match="the compared score changed since the cells ran") as info:
        _check_report_only(suite, folder)
    assert changed in str(info.value) and "run without --report-only" in str(info.value)
    assert ((folder / "report.html").read_bytes() if report is not None else None) == report
    same = parse_suite({**PLANTED, "tasks": [{"name": "easy", "dataset": "x1", "compare": "AUROC"},
                                             {"name": "hard", "dataset": "x2", "compare": "accuracy"}]},
                       tmp_path / "suite.toml")
    _check_report_only(same, folder)  # unchanged: rebuilt


SUITE = """name = "held"
encoders = ["tiny-vit"]
generators = ["gma-mil"]

[[tasks]]
name = "colour"
dataset = "slides-csv"
dataset_root = "cohort"
"""


def test_a_second_whole_bench_of_a_held_suite_is_one_line_before_any_cell(tmp_path, cli):
    from pathkit_bench.suite.runner import suite_lock

    (tmp_path / "cohort").mkdir()
    (tmp_path / "suite.toml").write_text(SUITE)
    folder = tmp_path / "work" / "suites" / "held"
    folder.mkdir(parents=True)
    with suite_lock(folder):
        result = cli("bench", "--config", tmp_path / "suite.toml", "--workdir", tmp_path / "work", "--cpu")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert ".suite.lock is locked by pid" in " ".join(result.stderr.split())
    assert len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["suites"]  # no cell ran
