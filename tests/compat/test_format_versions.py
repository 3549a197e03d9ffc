"""File formats with a version (docs/file-formats.md, "Format versions"): what the v0.1.0 release
wrote (tests/compat/fixtures/v0.1.0, made by its code: fixtures/make_v010_fixtures.py) is read by
today's code, `pathkit report` rebuilding the old run's report; a version newer than this pathkit
reads is refused with one line naming the file, both versions and the command that redoes it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pathkit_bench.leaderboard import SUITE_VERSION
from pathkit_core.contracts import PathkitError
from pathkit_core.formats import RUN_FOLDER_VERSION, check_version, version_problem

V010 = Path(__file__).with_name("fixtures") / "v0.1.0"


@pytest.fixture
def old(tmp_path) -> Path:
    """A writable copy of everything v0.1.0 wrote."""
    return Path(shutil.copytree(V010, tmp_path / "v0.1.0"))


def _refusal(exc: pytest.ExceptionInfo, path: Path, found: int, command: str) -> None:
    text = str(exc.value)
    assert "\n" not in text and text.startswith(str(path)), text
    assert f"format version {found} is newer" in text and "reads (version 1)" in text, text
    assert command in text, text


# ---------------------------------------------------------------- tile manifests


def _rewrite_manifest_meta(path: Path, **changes) -> None:
    import pyarrow.parquet as pq

    from pathkit_core.wsi.manifest import META_KEY

    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[META_KEY.encode()])
    meta.update(changes)
    pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta)}), path)


def test_a_v010_tile_manifest_is_read(old):
    from pathkit_core.wsi.manifest import MANIFEST_VERSION, read_manifest

    manifest = read_manifest(old / "tiles" / "x4.parquet")
    assert manifest.meta["format_version"] == MANIFEST_VERSION == 1
    assert manifest.tiles.height == manifest.meta["n_tiles"] > 0


def test_a_tile_manifest_of_a_future_version_is_refused_in_one_line(old):
    from pathkit_core.wsi.manifest import read_manifest

    path = old / "tiles" / "x4.parquet"
    _rewrite_manifest_meta(path, format_version=2)
    with pytest.raises(PathkitError) as exc:
        read_manifest(path)
    _refusal(exc, path, 2, "pathkit tile ")


# ---------------------------------------------------------------- feature files


def test_a_v010_feature_file_is_read_and_verified(old):
    from pathkit_core.features.store import read_features

    found = read_features(old / "features" / "tiny-vit" / "x4.safetensors", verify=True)
    assert found.meta["format"] == "pathkit-features/1"
    assert found.features.shape[0] == int(found.meta["n_tiles"]) > 0


def test_a_feature_file_of_a_future_version_is_refused_in_one_line(old):
    from safetensors import safe_open
    from safetensors.numpy import save_file

    from pathkit_core.features.store import read_features

    path = old / "features" / "tiny-vit" / "x4.safetensors"
    with safe_open(str(path), framework="numpy") as fh:
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}  # noqa: SIM118 - safe_open has no iterator
        meta = dict(fh.metadata())
    save_file(tensors, str(path), metadata={**meta, "format": "pathkit-features/3"})
    with pytest.raises(PathkitError) as exc:
        read_features(path)
    _refusal(exc, path, 3, "pathkit extract --manifests TILES_DIR --encoder tiny-vit --out NEW_FOLDER")


# ---------------------------------------------------------------- run folders


def test_a_v010_run_folder_has_no_version_and_is_read(old):
    from pathkit_core.report.run_folder import RunFolder

    run = old / "run"
    assert "format_version" not in json.loads((run / "metrics.json").read_text())
    folder = RunFolder(run)
    assert set(folder.metrics["metrics"]["classification"]) >= {"AUROC", "accuracy"}
    assert folder.per_case.height == 2 and set(folder.test_cases) == {"x4", "x5"}


@pytest.mark.slow  # draws every figure of a report (3 s): make test-suite
def test_pathkit_report_rebuilds_the_report_of_a_v010_run_folder(old):
    from pathkit_core.cli.report import build_reports

    run = old / "run"
    (written,) = build_reports(run)
    assert written == run / "report.html"
    html = written.read_text(encoding="utf-8")
    assert "AUROC" in html and "gma-mil" in html


def test_a_run_folder_of_a_future_version_is_refused_by_pathkit_report_in_one_line(old):
    run = old / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, "format_version": 2}))
    done = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "report", str(run)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert f"{run / 'metrics.json'}: run folder format version 2 is newer" in lines[0].replace("error: ", "")
    assert "pathkit run" in lines[0] and not (run / "report.html").exists()


def test_written_metrics_record_the_run_folder_version(tmp_path):
    from pathkit_core.evaluation.runner import ScoreResult, write_results

    write_results(ScoreResult(summary={"m": {"score": 0.5}}, per_case=None), tmp_path)
    assert json.loads((tmp_path / "metrics.json").read_text())["format_version"] == RUN_FOLDER_VERSION == 1


# ---------------------------------------------------------------- suite folders


def test_a_v010_suite_folder_is_read(old):
    from pathkit_bench.suite.analysis import SuiteAnalysis, check_suite_version

    suite = old / "suite"
    assert not (suite / "suite.json").exists()
    assert check_suite_version(suite) == 1
    analysis = SuiteAnalysis(suite)
    assert analysis.name == "v010-fixture"
    assert set(analysis.frame["encoder"]) == {"tiny-vit"} and analysis.cells.height == 1


def test_a_suite_folder_of_a_future_version_is_refused_in_one_line(old):
    from pathkit_bench.suite.analysis import SuiteAnalysis

    suite = old / "suite"
    (suite / "suite.json").write_text(json.dumps({"format": "pathkit.suite", "format_version": 4}))
    with pytest.raises(PathkitError) as exc:
        SuiteAnalysis(suite)
    _refusal(exc, suite / "suite.json", 4, "pathkit bench --config SUITE.toml")


def test_a_written_suite_folder_records_its_version(old, tmp_path):
    from pathkit_bench.suite.config import load_suite
    from pathkit_bench.suite.runner import write_leaderboard

    config = tmp_path / "suite.toml"
    # 0.2 refuses fewer than 100 resamples (docs/comparisons.md, suite options); the fixture's 50 were valid in 0.1
    text = V010.joinpath("suite.toml").read_text().replace("/tmp/fx/cohort", str(tmp_path))
    config.write_text(text.replace("resamples = 50", "resamples = 100"))
    folder = write_leaderboard(load_suite(config), [], tmp_path / "out")
    record = json.loads((folder / "suite.json").read_text())
    assert {k: record[k] for k in ("format", "format_version", "suite")} == {
        "format": "pathkit.suite", "format_version": SUITE_VERSION, "suite": "v010-fixture"}


def test_a_v010_leaderboard_has_no_version_and_is_read_and_a_written_one_records_it(old, tmp_path):
    import polars as pl

    from pathkit_bench.leaderboard import LEADERBOARD_FORMAT, LEADERBOARD_VERSION
    from pathkit_bench.report.matrix import read_leaderboard

    board = old / "suite" / "leaderboard.parquet"
    assert LEADERBOARD_FORMAT not in pl.read_parquet_metadata(board)
    assert read_leaderboard(board).height == pl.read_parquet(board).height
    from pathkit_bench.suite.config import load_suite
    from pathkit_bench.suite.runner import write_leaderboard

    config = tmp_path / "suite.toml"
    text = V010.joinpath("suite.toml").read_text().replace("/tmp/fx/cohort", str(tmp_path))
    config.write_text(text.replace("resamples = 50", "resamples = 100"))
    folder = write_leaderboard(load_suite(config), [], tmp_path / "out")
    recorded = json.loads(pl.read_parquet_metadata(folder / "leaderboard.parquet")[LEADERBOARD_FORMAT])
    assert recorded == {"format": LEADERBOARD_FORMAT, "format_version": LEADERBOARD_VERSION}


# ---------------------------------------------------------------- the check itself


def test_the_check_reads_a_missing_version_as_v010s_and_names_both_ends_of_a_range():
    assert check_version(None, what="x", path="p", current=1, redo="c") == 1
    assert check_version("2", what="x", path="p", current=3, oldest=2, redo="c") == 2
    older = version_problem(1, what="tile manifest", path="p.parquet", current=3, oldest=2, redo="pathkit tile S")
    assert older.startswith("p.parquet: tile manifest format version 1 is older than pathkit ")
    assert older.endswith("reads (versions 2 to 3): redo it with `pathkit tile S`")
    assert "is not a version number" in version_problem("1.5", what="x", path="p", current=1, redo="c")
    assert "is not a version number" in version_problem(True, what="x", path="p", current=1, redo="c")
