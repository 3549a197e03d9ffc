"""`pathkit bench --slurm` on the real single-node cluster (tests.slurm.cluster): a two-cell suite
over synthetic slides, the cells as an array, the report after it (--dependency=afterok); a
resubmission reuses both cells and writes the same leaderboard."""

from __future__ import annotations

import re
import subprocess
import sys

import polars as pl
import pytest

from tests.bench.suite._suite import write_suite
from tests.slurm.test_slurm_arrays import _env

pytestmark = pytest.mark.slow

SUITE = """
name = "on-slurm"
encoders = ["tiny-vit"]
generators = ["gma-mil"]
seeds = [0, 1]
resamples = 100

[run]
max_tiles = 16
export_attention = false

[run.train]
max_epochs = 1
progress = false

[[tasks]]
name = "colour"
dataset = "slides-csv"
dataset_root = "cohort"
dataset_options = {table = "colour.csv"}
"""


def _submit(slurm, config, workdir) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "bench", "--config", str(config), "--workdir",
                           str(workdir), "--slurm", "--cpu", "--sbatch-option=--cpus-per-task=1"],
                          env={**_env(), **slurm.env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = re.search(r"array_job=(\d+) report_job=(\d+)", done.stdout)
    assert found, done.stdout
    return found.group(1), found.group(2)


def _logs_of(logs, job: str) -> str:
    """The last lines of every log of `job`'s tasks (what a failed task said)."""
    return " || ".join(f"{p.name}: " + " | ".join(p.read_text(errors="replace").splitlines()[-8:])
                       for p in sorted(logs.glob(f"*{job}*.out")))


def test_suite_cells_as_an_array_then_the_report_and_a_rerun_reuses_them(slurm, tmp_path):
    config = write_suite(tmp_path)
    config.write_text(SUITE)
    work = tmp_path / "ws"
    array, report = _submit(slurm, config, work)
    logs = work / "suites" / "on-slurm" / "slurm"
    assert set(slurm.wait(array, timeout=900).values()) == {"COMPLETED"}, (slurm.states(array), _logs_of(logs, array))
    assert slurm.wait(report, timeout=300) == {report: "COMPLETED"}, _logs_of(logs, report)
    board = pl.read_parquet(work / "suites" / "on-slurm" / "leaderboard.parquet")
    assert sorted(set(board["seed"].to_list())) == [0, 1]
    assert "tidy leaderboard:" in (logs / f"report-{report}.out").read_text()

    array2, report2 = _submit(slurm, config, work)
    assert set(slurm.wait(array2, timeout=600).values()) == {"COMPLETED"}, _logs_of(logs, array2)
    assert slurm.wait(report2, timeout=300) == {report2: "COMPLETED"}, _logs_of(logs, report2)
    cells = "".join(p.read_text() for p in logs.glob(f"cells-{array2}_*.out"))
    counts = [(int(a), int(b)) for a, b in re.findall(r"(\d+) cell\(s\) finished \((\d+) reused\)", cells)]
    assert len(counts) == 2 and sum(a for a, _ in counts) == sum(b for _, b in counts) == 2, cells  # both reused
    assert pl.read_parquet(work / "suites" / "on-slurm" / "leaderboard.parquet").equals(board)
    assert "2 cell(s) finished (2 reused)" in (logs / f"report-{report2}.out").read_text()
