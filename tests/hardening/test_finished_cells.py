"""Finished cells and their result files: damage is recomputed, never reused; a suite folder's
report is rebuilt as a suite report or refused; tampered per-case tables given to `pathkit
compare` are one-line errors; HTML in case ids is text in every report. No training: the run
folders are written as the pipeline writes them (tests/bench/suite/_suite.py)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest

from tests.bench.suite._suite import classification_run

N = 40


def _probs(seed: int, skill: float = 1.0):
    rng = np.random.default_rng(seed)
    y = (np.random.default_rng(0).random(N) < 0.5).astype(int)
    p = 1 / (1 + np.exp(-(skill * (2 * y - 1) + rng.normal(0, 1, N))))
    return np.stack([1 - p, p], 1), y


class _Ctx:
    def __init__(self, run_dir):
        self.run_dir, self.lines = run_dir, []

    def log(self, line):
        self.lines.append(line)


@pytest.fixture(scope="module")
def run_template(tmp_path_factory):
    probs, y = _probs(1)
    return classification_run(tmp_path_factory.mktemp("run") / "r", probs, y)


@pytest.mark.parametrize("damage", [
    lambda r: (r / "metrics.json").write_text('{"metrics": {"classification": {"AUROC": 0.'),
    lambda r: (r / "metrics.json").unlink(),
    lambda r: (r / "metrics.json").write_text('{"metrics": {"classification": {"AUROC": "high"}}}'),
    lambda r: (r / "per_case.parquet").write_bytes((r / "per_case.parquet").read_bytes()[:100]),
    lambda r: (r / "test_cases.jsonl").write_bytes(b"\xff\xfe"),
])
def test_a_damaged_finished_score_stage_is_scored_again(tmp_path, run_template, damage):
    from pathkit_core.run.score import saved_scores

    run = shutil.copytree(run_template, tmp_path / "r")
    assert saved_scores(_Ctx(run)) is not None
    damage(run)
    ctx = _Ctx(run)
    assert saved_scores(ctx) is None and "scoring again" in ctx.lines[0]


@pytest.fixture(scope="module")
def suite_folder(tmp_path_factory):
    from pathkit_bench.suite.config import parse_suite
    from pathkit_bench.suite.runner import CellResult, write_leaderboard
    from pathkit_core.report.run_folder import RunFolder

    root = tmp_path_factory.mktemp("suite")
    config = parse_suite({"name": "tiny", "encoders": ["e1", "e2"], "generators": ["g"], "seeds": [0, 1],
                          "resamples": 100, "tasks": [{"name": "t", "dataset": "x", "compare": "AUROC"}]},
                         root / "tiny.toml")
    results = []
    for k, cell in enumerate(config.cells()):
        probs, y = _probs(10 + k, 2.0 if cell.encoder == "e1" else 0.5)
        run = classification_run(root / "runs" / cell.encoder / f"seed{cell.seed}", probs, y,
                                 encoder=cell.encoder, seed=cell.seed)
        results.append(CellResult(cell, run, RunFolder(run).summary))
    folder = root / "work" / "suites" / "tiny"
    folder.mkdir(parents=True)
    write_leaderboard(config, results, folder)
    return folder


def test_report_of_a_suite_folder_rebuilds_the_suite_report_or_refuses(tmp_path, suite_folder, cli):
    folder = shutil.copytree(suite_folder, tmp_path / "suites" / "tiny")
    result = cli("report", folder)
    assert result.exit_code == 0, result.output
    html = (folder / "report.html").read_text()
    assert "pathkit suite" in html and "pathkit matrix" not in html
    before = (folder / "report.html").read_bytes()
    (folder / "suite.json").unlink()
    refused = cli("report", folder)
    assert refused.exit_code == 2 and "--report-only" in refused.stderr
    assert (folder / "report.html").read_bytes() == before
    assert cli("report", tmp_path / "suites").exit_code == 2  # the folder of suites: name one


def test_status_reads_a_suite_folder_as_a_suite(suite_folder, cli):
    report = json.loads(cli("status", suite_folder, "--json").stdout)
    assert report["kind"] == "suite" and len(report["runs"]) == 4 and report["stores"] == []


def test_cells_sharing_no_seed_are_noted_not_a_crash(suite_folder):
    from pathkit_bench.suite.analysis import TaskComparison, compare_task

    task = TaskComparison("t", "AUROC", "higher", [("e1", "g"), ("e2", "g")], [], {}, {})
    assert compare_task(task, correction="holm", level=0.95, resamples=100).note.startswith("not compared")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair")
    (pa, y), (pb, _) = _probs(3, 2.0), _probs(4, 0.5)
    return classification_run(root / "a", pa, y), classification_run(root / "b", pb, y)


def _tamper_rows_removed(run):
    table = pl.read_parquet(run / "per_case.parquet")
    table.head(N - 3).write_parquet(run / "per_case.parquet")


def _tamper_duplicate(run):
    table = pl.read_parquet(run / "per_case.parquet")
    pl.concat([table, table.head(2)]).write_parquet(run / "per_case.parquet")


def _tamper_nan(run):
    table = pl.read_parquet(run / "per_case.parquet")
    column = next(c for c in table.columns if table[c].dtype == pl.List(pl.Float64))
    values = table[column].to_list()
    values[0] = [float("nan"), 1.0]
    table.with_columns(pl.Series(column, values)).write_parquet(run / "per_case.parquet")


def _references_differ(run):
    (run / "test_cases.jsonl").unlink()
    table = pl.read_parquet(run / "per_case.parquet")
    table.with_columns((1 - pl.col("target")).alias("target")).write_parquet(run / "per_case.parquet")


@pytest.mark.parametrize("tamper, problem", [
    (_tamper_rows_removed, "lacks 3 test case"),
    (_tamper_duplicate, "more than once"),
    (_tamper_nan, "NaN or inf"),
    (lambda r: (r / "per_case.parquet").write_bytes((r / "per_case.parquet").read_bytes()[:200]), "parquet"),
    (lambda r: (r / "per_case.parquet").write_bytes(b""), "parquet"),
    (lambda r: ((r / "per_case.parquet").unlink(), (r / "per_case.parquet").mkdir()), "is a folder"),
    (lambda r: (r / "test_cases.jsonl").write_bytes(b"\xff\xfe\n"), "not UTF-8"),
    (lambda r: (r / "metrics.json").write_text('{"metrics": {"classification": []}}'), "damaged"),
])
def test_tampered_runs_given_to_compare_are_one_line(tmp_path, two_runs, cli, tamper, problem):
    a = shutil.copytree(two_runs[0], tmp_path / "a")
    b = shutil.copytree(two_runs[1], tmp_path / "b")
    if tamper in (_tamper_nan, _references_differ):
        (a / "test_cases.jsonl").unlink(missing_ok=True)
    tamper(b)
    result = cli("compare", a, b, "--metric", "AUROC", "--resamples", "100")
    assert result.exit_code == 2, result.output
    assert problem in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_references_that_differ_without_test_cases_are_refused(tmp_path, two_runs, cli):
    a = shutil.copytree(two_runs[0], tmp_path / "a")
    b = shutil.copytree(two_runs[1], tmp_path / "b")
    (a / "test_cases.jsonl").unlink()
    _references_differ(b)
    result = cli("compare", a, b, "--metric", "AUROC")
    assert result.exit_code == 2 and "different references" in result.stderr


def test_a_nan_score_in_metrics_json_is_noted(tmp_path, two_runs, cli):
    a = shutil.copytree(two_runs[0], tmp_path / "a")
    b = shutil.copytree(two_runs[1], tmp_path / "b")
    record = json.loads((b / "metrics.json").read_text())
    record["metrics"]["classification"]["AUROC"] = float("nan")
    (b / "metrics.json").write_text(json.dumps(record))
    result = cli("compare", a, b, "--metric", "AUROC")
    assert result.exit_code == 0, result.output
    assert "B's metrics.json records AUROC as NaN or inf" in " ".join(result.stdout.split())


def _tiny_suite(root, encoders, task="t"):
    from pathkit_bench.suite.config import parse_suite
    from pathkit_bench.suite.runner import CellResult, write_leaderboard
    from pathkit_core.report.run_folder import RunFolder

    config = parse_suite({"name": "tiny", "encoders": encoders, "generators": ["g"], "seeds": [0, 1],
                          "resamples": 100, "tasks": [{"name": task, "dataset": "x", "compare": "AUROC"}]},
                         root / "tiny.toml")
    results = []
    for k, cell in enumerate(config.cells()):
        probs, y = _probs(10 + k, 2.0 if cell.encoder == encoders[0] else 0.5)
        run = classification_run(root / "runs" / f"e{encoders.index(cell.encoder)}" / f"seed{cell.seed}", probs, y,
                                 encoder=cell.encoder, seed=cell.seed)
        results.append(CellResult(cell, run, RunFolder(run).summary))
    folder = root / "work" / "suites" / "tiny"
    folder.mkdir(parents=True)
    return write_leaderboard(config, results, folder)


def test_html_in_names_and_case_ids_is_text_in_the_reports(tmp_path, cli):
    from pathkit_core.report.html import write_run_report

    hostile = "<img src=x onerror=alert(1)>"
    folder = _tiny_suite(tmp_path, [hostile, "plain"], task="<i>t")
    assert cli("report", folder).exit_code == 0
    html = (folder / "report.html").read_text()
    assert hostile not in html and "&lt;img src=x onerror=alert(1)&gt;" in html and "<i>t" not in html
    probs, y = _probs(5)
    ids = [f"<script>alert({i})</script>" if i < 3 else f"C{i}" for i in range(N)]
    run = classification_run(tmp_path / "r", probs, y, ids)
    assert "<script>alert(" not in write_run_report(run).read_text()
