"""The benchmark matrix: every encoder x generator cell, resume of finished cells, summary views."""

from __future__ import annotations

import polars as pl

from pathkit_core import hookimpl
from pathkit_core.contracts import TileSpec
from tests.core._toy import Precomputed
from tests.core.test_pipeline_orchestration import MeanPool, toy_plugin, toy_root  # noqa: F401


class OtherEncoder(Precomputed):
    name = "precomputed-b"
    tile_spec = TileSpec(256, 0.5)


class WiderPool(MeanPool):
    name = "wider-pool"
    default_hparams = {"hidden": 8}


class MatrixPlugin:
    @hookimpl
    def register_encoders(self, register):
        register(OtherEncoder)

    @hookimpl
    def register_generators(self, register):
        register(WiderPool)


def test_matrix_runs_every_cell_resumes_and_writes_views(fresh_registry, cli, toy_root, tmp_path):  # noqa: F811
    fresh_registry({"toy": toy_plugin(), "matrix": MatrixPlugin()})
    workdir = tmp_path / "ws"
    common = ["run", "-d", "toy-cohort", "--dataset-root", toy_root, "--workdir", workdir, "--cpu"]
    # a first, interrupted campaign finished only one cell
    MeanPool.built = 0
    first = cli(*common, "-e", "precomputed", "-g", "mean-pool")
    assert first.exit_code == 0, first.stderr
    assert MeanPool.built == 2  # train + predict
    full = cli(*common, "-e", "precomputed,precomputed-b", "-g", "mean-pool,wider-pool")
    assert full.exit_code == 0, full.stderr
    assert MeanPool.built == 2 + 3 * 2, "only the three missing cells may train"
    assert full.stdout.count("this cell is finished") == 1
    board_dir = workdir / "leaderboards" / "toy-cohort"
    board = pl.read_parquet(board_dir / "leaderboard.parquet")
    assert board.height == 4 and set(board["encoder"]) == {"precomputed", "precomputed-b"}
    assert pl.read_csv(board_dir / "leaderboard.csv").height == 4
    by_gen = pl.read_csv(board_dir / "by_generator.csv")
    assert by_gen["generator"].to_list() == ["mean-pool", "wider-pool"] and by_gen["cells"].to_list() == [2, 2]
    by_enc = pl.read_csv(board_dir / "by_encoder.csv")
    mean_a = board.filter(pl.col("encoder") == "precomputed")["accuracy"].mean()
    assert by_enc.filter(pl.col("encoder") == "precomputed")["accuracy"][0] == mean_a
    assert "per generator" in full.stdout
    assert "per encoder" in full.stdout
