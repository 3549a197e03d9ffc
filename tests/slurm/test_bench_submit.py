"""`pathkit bench --slurm` against a stand-in `sbatch` that records its arguments (fast; the real
cluster run is tests/slurm/test_bench_slurm.py): one array of one task per cell, the report job
after it with --dependency=afterok:<array id>, the options passed to both, the ids printed."""

from __future__ import annotations

import json
import shlex
import sys

SUITE = """
name = "tiny"
encoders = ["tiny-vit", "tiny-vit-wide"]
generators = ["gma-mil"]
seeds = [0, 1]

[[tasks]]
name = "colour"
dataset = "slides-csv"
dataset_root = "cohort"
"""

def test_cells_go_as_one_array_and_the_report_waits_for_it(tmp_path, fake_sbatch, cli):
    (tmp_path / "suite.toml").write_text(SUITE)
    result = cli("bench", "--config", tmp_path / "suite.toml", "--workdir", tmp_path / "ws", "--slurm", "--cpu",
                 "--sbatch-option=--partition=gpu", "--sbatch-option", "--time=02:00:00")
    assert result.exit_code == 0, result.output
    assert "array_job=4101 report_job=4102" in result.stdout
    array, report = json.loads(fake_sbatch.read_text())
    assert array[0] == report[0] == "--parsable"
    assert "--array=0-3" in array and "--dependency=afterok:4101" in report  # 4 cells: 2 encoders x 2 seeds
    for call in (array, report):
        assert {"--partition=gpu", "--time=02:00:00"} <= set(call)
        wrap = shlex.split(next(a for a in call if a.startswith("--wrap="))[len("--wrap="):])
        assert wrap == [sys.executable, "-m", "pathkit_core.cli", "bench", "--config",
                        str((tmp_path / "suite.toml").resolve()), "--workdir", str((tmp_path / "ws").resolve()),
                        "--cpu"]
    assert f"--output={(tmp_path / 'ws' / 'suites' / 'tiny' / 'slurm').resolve()}/cells-%A_%a.out" in array


def test_a_refused_submission_and_conflicting_options_are_one_line(tmp_path, fake_sbatch, cli):
    (tmp_path / "suite.toml").write_text(SUITE)
    base = ("bench", "--config", tmp_path / "suite.toml", "--workdir", tmp_path / "ws")
    refused = cli(*base, "--slurm", "--sbatch-option=--partition=refuse")
    assert refused.exit_code != 0
    assert "--slurm: sbatch refused the job: sbatch: error: invalid partition specified: refuse" in refused.output
    assert len(json.loads(fake_sbatch.read_text())) == 1  # no report job after a refused array
    for extra, says in ((("--shard", "1/2"), "leave out --shard"), (("--sbatch-option=--x",), "needs --slurm")):
        args = (*base, "--slurm", *extra) if "--shard" in extra else (*base, *extra)
        out = cli(*args)
        assert out.exit_code != 0 and says in out.output and "Traceback" not in out.output


def test_an_array_task_is_a_shard_and_takes_no_whole_run_lock(tmp_path, cli, monkeypatch):
    """Array tasks of one suite run at once: each is a shard (from SLURM_ARRAY_TASK_*), so none takes the
    lock of a whole run (which a second whole run is refused by): a task finds it held and goes on."""
    from pathkit_bench.suite.config import load_suite
    from pathkit_bench.suite.runner import suite_folder, suite_lock
    from pathkit_core.shard import Shard

    (tmp_path / "suite.toml").write_text(SUITE)
    suite = load_suite(tmp_path / "suite.toml")
    count = 8
    empty = next(k for k in range(count) if not Shard(k, count).select(suite.cells(), key=lambda c: c.label))
    folder = suite_folder(tmp_path / "ws", suite)
    held = suite_lock(folder).acquire()  # as another task, or the report job, would hold it
    try:
        base = ("bench", "--config", tmp_path / "suite.toml", "--workdir", tmp_path / "ws", "--cpu")
        refused = cli(*base)  # a whole run is still refused at once
        assert refused.exit_code != 0 and "is locked by" in refused.output
        monkeypatch.setenv("SLURM_ARRAY_TASK_ID", str(empty))
        monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", str(count))
        monkeypatch.setenv("SLURM_ARRAY_TASK_MIN", "0")
        monkeypatch.setenv("SLURM_ARRAY_TASK_MAX", str(count - 1))
        task = cli(*base)
        assert task.exit_code == 0, task.output
        assert f"shard {empty + 1}/{count} (SLURM_ARRAY_TASK_ID): 0 of 4 cell(s)" in task.output
    finally:
        held.release()
