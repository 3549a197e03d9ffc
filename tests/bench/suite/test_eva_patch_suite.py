"""The shipped eva-patch suite on replicas of the seven public patch benchmarks (the layouts of
tests/plugins/datasets/catalogue_replicas.py) with two tiny encoders: every cell runs, and the
report shows datasets x encoders with balanced accuracy compared case by case, the
critical-difference diagram across the datasets, and eva's published numbers beside the cells."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from tests.plugins.datasets import catalogue_replicas as replicas

REPO = Path(__file__).resolve().parents[3]
SUITE = REPO / "examples" / "suites" / "eva-patch.toml"
FOLDERS = {"bach": "bach", "crc": "crc", "mhist": "mhist", "pcam": "pcam", "breakhis": "breakhis",
           "bracs": "bracs", "unitopatho": "unitopatho"}


def replica_suite(tmp_path: Path) -> Path:
    """eva-patch.toml as shipped, with the replicas as roots, two tiny encoders, one seed and fewer
    steps (the protocol's other lines unchanged)."""
    text = SUITE.read_text()
    for folder, build in FOLDERS.items():
        root = getattr(replicas, build)(tmp_path / "replicas" / folder)
        text = text.replace(f'dataset_root = "/data/{folder}"', f'dataset_root = "{root}"')
    assert "\"/data/" not in text  # every task's root replaced
    text = re.sub(r"(?ms)^encoders = \[.*?\]\n", 'encoders = ["tiny-vit", "tiny-vit-wide"]\n', text, count=1)
    text = text.replace("seeds = [0, 1, 2, 3, 4]", "seeds = [0]")
    text = text.replace("max_steps = 12500", "max_steps = 40").replace("val_every_steps = 250", "val_every_steps = 20")
    text = text.replace("lr = 0.0003", "lr = 0.01")
    path = tmp_path / "eva-patch.toml"
    path.write_text(text)
    return path


@pytest.mark.slow  # 14 cells: `make test-suite`
def test_eva_patch_suite_on_replicas(cli, tmp_path):
    config = replica_suite(tmp_path)
    work = tmp_path / "work"
    result = cli("bench", "--config", config, "--workdir", work, "--cpu")
    assert result.exit_code == 0, result.output
    assert "14 cell(s) finished (0 reused), 0 failed" in " ".join(result.output.split())
    folder = work / "suites" / "eva-patch"
    board = pl.read_parquet(folder / "leaderboard.parquet")
    compared = board.filter(pl.col("score") == "balanced_accuracy")
    assert compared.height == 14 and set(compared["encoder"]) == {"tiny-vit", "tiny-vit-wide"}
    assert set(compared["dataset"]) == {"bach", "crc-100k", "mhist", "pcam", "breakhis", "bracs", "unitopatho"}
    comparisons = pl.read_csv(folder / "comparisons.csv")
    assert comparisons.height == 7 and set(comparisons["score"]) == {"balanced_accuracy"}  # one pair per dataset
    report = (folder / "report.html").read_text()
    assert "Published scores beside pathkit&#x27;s" in report or "Published scores beside pathkit's" in report
    assert "eva leaderboard" in report and "0.9150" in report and "not run" in report
    assert "Critical-difference diagram of the encoders" in report
    assert (folder / "figures").is_dir() and any((folder / "figures").glob("cd_encoder*"))
    # cost columns: every cell's device, time per stage, throughput and memory; the suite's device-hours
    cells = board.unique(subset=["task", "encoder", "generator", "seed"])
    assert cells.height == 14 and cells["wall_seconds"].min() > 0 and cells["features_seconds"].min() > 0
    assert cells["tiles_per_second"].min() > 0 and cells["device"].str.starts_with("CPU: ").all()
    assert (cells["n_tiles"] > 0).all() and cells["peak_host_memory_mb"].min() > 0
    total = cells["wall_seconds"].sum() / 3600
    assert f"{total:.4f} device-hours" in report and f"cost: {total:.4f} device-hours over 14 cell(s)" in \
        " ".join(result.output.split())
