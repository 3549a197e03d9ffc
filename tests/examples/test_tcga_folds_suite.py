"""examples/suites/tcga-folds.toml on tiny replicas of GDC downloads with tiny-vit (make test-suite):
fold 0 of each task (tcga-brca with abmil, tcga-luad-os with abmil-cox) runs through `pathkit bench`
to a leaderboard row. It checks the machinery, not any encoder."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def replica_suite(tmp_path: Path) -> Path:
    """The suite with tiny-vit for uni, one epoch, fold 0 only; the replicas at its dataset roots."""
    from tests.plugins.datasets import _slide_replicas as replicas

    text = (REPO / "examples" / "suites" / "tcga-folds.toml").read_text()
    header, *tasks = text.split("\n[[tasks]]\n")
    kept = [t for t in tasks if not re.search(r'name = "tcga-[a-z-]+-fold[1-9]"', t)]
    assert len(tasks) == 10 and len(kept) == 2
    header = header.replace('encoders = ["uni"]', 'encoders = ["tiny-vit"]').replace("resamples = 1000",
                                                                                   "resamples = 100")
    header = header.replace("[run]\n", "[run]\nmax_tiles = 8\n").replace("[run.train]\n",
                                                                       "[run.train]\nmax_epochs = 1\n")
    config = tmp_path / "tcga-folds.toml"
    config.write_text("\n[[tasks]]\n".join([header, *kept]))
    cache = tmp_path / "cache"
    cache.mkdir()
    replicas.tcga(tmp_path / "data" / "tcga-brca", cache, ("BRCA",), n=10)
    replicas.tcga(tmp_path / "data" / "tcga-luad", cache, ("LUAD",), n=10, cdr=True)
    return config


def test_the_tcga_folds_suite_runs_fold_0_on_replicas_with_tiny_vit(tmp_path):
    from typer.testing import CliRunner

    from pathkit_core.cli import build_app

    config = replica_suite(tmp_path)
    work = tmp_path / "work"
    result = CliRunner().invoke(build_app(), ["bench", "--config", str(config), "--workdir", str(work), "--cpu"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "2 cell(s) finished (0 reused), 0 failed" in result.output
    board = pl.read_parquet(work / "suites" / "tcga-folds" / "leaderboard.parquet")
    assert set(board["task"].to_list()) == {"tcga-brca-fold0", "tcga-luad-os-fold0"}
    assert "fold 0 of 5" in result.output  # the split each cell used, said in its log
