"""`pathkit bench`: a two-task suite over shared slides, sharded, resumed, with its tidy leaderboard,
comparisons, ranks and report."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow  # 12 cells: `make test-suite`, which CI runs after `make test`
def test_every_cell_runs_once_across_shards_and_the_last_run_reuses_them(shared_suite):
    first, second, whole = shared_suite["outputs"]
    assert "shard 1/2 (--shard)" in first and "shard 2/2 (--shard)" in second
    assert "run without --shard" in first
    cells = pl.read_csv(shared_suite["folder"] / "cells.csv")
    assert cells.height == (2 * 2 + 2 * 1) * 2  # encoders x (colour's 2 + parity's 1 generator) x seeds
    assert cells["reused"].all() and (cells["error"].fill_null("") == "").all()
    assert "12 cell(s) finished (12 reused), 0 failed" in " ".join(whole.split())


@pytest.mark.slow  # 12 cells: `make test-suite`, which CI runs after `make test`
def test_a_slide_shared_by_two_tasks_is_extracted_once(shared_suite):
    work = shared_suite["work"]
    for encoder in ("tiny-vit", "tiny-vit-wide"):
        files = sorted(p.stem for p in (work / "features" / encoder).glob("*.safetensors"))
        assert files == [f"S{k:02d}" for k in range(12)]  # 12 slides, two tasks: one file each


@pytest.mark.slow  # 12 cells: `make test-suite`, which CI runs after `make test`
def test_tidy_leaderboard_has_one_row_per_cell_and_score(shared_suite):
    board = pl.read_parquet(shared_suite["folder"] / "leaderboard.parquet")
    from pathkit_bench.suite.runner import COST_COLUMNS

    # the cell's identity and score, then what the cell cost (docs/file-formats.md, the leaderboard)
    assert board.columns == ["suite", "task", "dataset", "encoder", "generator", "seed", "metric", "score", "value",
                             "ci_low", "ci_high", "direction", "run_dir", *COST_COLUMNS]
    assert board["wall_seconds"].min() > 0 and all(d.startswith("CPU") for d in board["device"])
    auroc = board.filter(pl.col("score") == "AUROC")
    assert auroc.height == 12 and auroc.select(["task", "encoder", "generator", "seed"]).is_unique().all()
    row = auroc.row(0, named=True)
    metrics = json.loads((shared_suite["folder"].parent.parent / "runs").joinpath(
        *row["run_dir"].split("/runs/")[1].split("/")).joinpath("metrics.json").read_text())
    assert row["value"] == metrics["metrics"]["classification"]["AUROC"]
    low = metrics["metrics"]["classification"]["AUROC_ci_low"]
    # an interval the small test set cannot estimate (NaN in metrics.json) is an empty cell of the tidy table
    assert row["ci_low"] == low if math.isfinite(low) else row["ci_low"] is None
    assert set(board.filter(pl.col("score") == "ECE")["direction"]) == {"lower"}
    csv = pl.read_csv(shared_suite["folder"] / "leaderboard.csv")
    assert csv.height == board.height


@pytest.mark.slow  # 12 cells: `make test-suite`, which CI runs after `make test`
def test_comparisons_ranks_and_report(shared_suite):
    folder = shared_suite["folder"]
    comparisons = pl.read_csv(folder / "comparisons.csv")
    # per task, every pair of its cells once (colour: 4 cells, parity: 2); adjusted never below raw
    assert comparisons.group_by("task").len().sort("task")["len"].to_list() == [6, 1]
    assert (comparisons["p_adjusted"] >= comparisons["p_value"] - 1e-12).all()
    assert set(comparisons.filter(pl.col("task") == "parity")["score"]) == {"accuracy"}
    assert set(comparisons.filter(pl.col("task") == "colour")["score"]) == {"AUROC"}
    assert set(comparisons["n_seeds"]) == {2}
    headline = pl.read_csv(folder / "headline.csv")
    assert headline.height == 6 and set(headline["seeds"]) == {2}
    ranks = pl.read_csv(folder / "ranks_encoder.csv")
    assert ranks["blocks"].to_list() == [3, 3]  # (task x generator) blocks: colour x 2, parity x 1
    generators = pl.read_csv(folder / "ranks_generator.csv")
    assert generators["blocks"].to_list() == [2, 2]  # colour x each encoder
    assert sum(ranks["average_rank"]) == 3.0  # two encoders share ranks 1 and 2
    for name in ("cd_encoder", "cd_generator", "pairwise_colour", "pairwise_parity", "seeds_colour"):
        assert (folder / "figures" / f"{name}.png").exists() and (folder / "figures" / f"{name}.csv").exists()
    html = (folder / "report.html").read_text()
    assert "Critical-difference" in html and "Per-seed spread" in html and html.count("run report") == 12


def _bench_shard(config, work, shard: str) -> subprocess.Popen:
    """`pathkit bench --shard SHARD` in a process of its own, one torch/BLAS thread (two shards share
    two cores)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COLUMNS="200")
    for name in ("WORLD_SIZE", "RANK", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"):
        env.pop(name, None)
    cmd = [sys.executable, "-c", "from pathkit_core.cli import main; main()", "bench", "--config", str(config),
           "--workdir", str(work), "--cpu", "--shard", shard]
    return subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_all_tasks_synthetic_suite_runs_and_reruns_reusing_every_cell(cli, tmp_path):
    """The shipped CI suite: every task's synthetic miniature, two tiny encoders, two seeds. Run as
    CI runs it on two cores: its two shards at once (separate processes on one workspace, one
    thread each), then the whole suite again, which reuses every cell the shards ran and writes
    the leaderboard, comparisons and report."""
    config = REPO / "examples" / "suites" / "all-tasks-synthetic.toml"
    work = tmp_path / "work"
    shards = [_bench_shard(config, work, f"{k}/2") for k in (1, 2)]
    try:
        outputs = [p.communicate(timeout=3600)[0] for p in shards]
    finally:
        for process in shards:  # a failed or timed-out shard leaves no process behind
            if process.poll() is None:
                process.kill()
                process.wait()
    for k, (process, output) in enumerate(zip(shards, outputs, strict=True), start=1):
        assert process.returncode == 0, f"shard {k}/2:\n{output}"
        assert f"shard {k}/2 (--shard)" in output and "run without --shard" in output
    finished = [re.search(r"(\d+) cell\(s\) finished \((\d+) reused\), 0 failed", " ".join(o.split()))
                for o in outputs]
    assert all(finished) and sum(int(m.group(1)) for m in finished) == 24  # the shards share the 24 cells
    again = cli("bench", "--config", config, "--workdir", work, "--cpu")
    assert again.exit_code == 0, again.output
    assert "24 cell(s) finished (24 reused), 0 failed" in " ".join(again.output.split())
    cells = pl.read_csv(work / "suites" / "all-tasks-synthetic" / "cells.csv")
    assert cells.height == 2 * 2 * 6 and cells["reused"].all()  # 6 task x generator pairs
    assert set(cells["task"]) == {"reports", "COAD-MSI", "liver-patches", "liver-slides", "vqa"}
    comparisons = pl.read_csv(work / "suites" / "all-tasks-synthetic" / "comparisons.csv")
    assert set(comparisons["task"]) == {"reports", "COAD-MSI", "liver-patches", "liver-slides", "vqa"}
    assert (work / "suites" / "all-tasks-synthetic" / "report.html").exists()


def test_failed_cells_are_named_and_the_others_kept(cli, tmp_path):
    config = tmp_path / "suite.toml"
    # every name is registered (an unknown one is refused before any cell: tests/hardening), but the
    # patch generator cannot solve the slide task: the cell fails when it runs
    config.write_text('name = "broken"\nencoders = ["tiny-vit"]\ngenerators = ["knn"]\n'
                      '[[tasks]]\ndataset = "slides-csv"\ndataset_root = "nowhere"\n')
    result = cli("bench", "--config", config, "--workdir", tmp_path / "w", "--cpu")
    assert result.exit_code == 2
    flat = " ".join(result.output.split())
    assert "1 cell(s) failed" in flat and "slides-csv/tiny-vit/knn/seed0" in flat
    cells = pl.read_csv(tmp_path / "w" / "suites" / "broken" / "cells.csv")
    assert cells["error"][0] and "patch-classification" in cells["error"][0]
    rebuilt = cli("bench", "--config", config, "--workdir", tmp_path / "w", "--report-only")
    assert rebuilt.exit_code == 0, rebuilt.output
    missing = cli("bench", "--config", config, "--workdir", tmp_path / "elsewhere", "--report-only")
    assert missing.exit_code == 2 and "holds no suite leaderboard" in missing.output
