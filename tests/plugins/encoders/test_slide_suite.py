"""A slide-classification suite with two slide encoders beside two MIL heads (issue 40, make
test-suite): the slide embeddings are computed once over both seeds and read back, the
comparisons are printed, and a slide encoder over another patch encoder's features is refused
with a one-line error."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]


def test_slide_encoders_beside_mil_heads_embed_once_and_a_mismatch_is_refused(tmp_path, monkeypatch):
    from pathkit_encoders._slide import TableSlideEncoder
    from typer.testing import CliRunner

    from pathkit_core.cli import build_app
    from tests.bench.suite._suite import build_slides, write_cohort

    slides = build_slides(tmp_path)
    write_cohort(tmp_path / "cohort" / "colour.csv", slides, lambda k: "pink" if k % 2 == 0 else "purple",
                 lambda k: "train" if k < 6 else "val" if k < 8 else "test")
    config = tmp_path / "suite.toml"
    shutil.copy(REPO / "examples" / "suites" / "slide-encoders-synthetic.toml", config)
    calls: Counter = Counter()
    embed = TableSlideEncoder.embed

    def counted(self, model, features, coords, tile_px_level0=None):
        calls[(self.name, int(features.shape[0]), float(features.sum()))] += 1
        return embed(self, model, features, coords, tile_px_level0)

    monkeypatch.setattr(TableSlideEncoder, "embed", counted)
    work = tmp_path / "work"
    result = CliRunner().invoke(build_app(), ["bench", "--config", str(config), "--workdir", str(work), "--cpu"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "8 cell(s) finished (0 reused), 0 failed" in result.output
    for generator in ("gma-mil", "abmil", "mean-tiny-vit", "tiny-titan"):
        assert f"│ {generator}" in result.output  # the compared scores, one row per generator
    # 12 slides per slide encoder, each embedded once although two seeds fitted and predicted
    assert {name: n for name, n in Counter(k[0] for k in calls).items()} == {"mean-tiny-vit": 12, "tiny-titan": 12}
    assert set(calls.values()) == {1}
    store = work / "features" / "slide-embeddings"
    assert sorted(p.name for p in store.iterdir()) == ["mean-tiny-vit", "tiny-titan"]
    assert all(len(list((store / n).glob("*.safetensors"))) == 12 for n in ("mean-tiny-vit", "tiny-titan"))
    board = pl.read_parquet(work / "suites" / "slide-encoders-synthetic" / "leaderboard.parquet")
    assert set(board["generator"].to_list()) == {"gma-mil", "abmil", "mean-tiny-vit", "tiny-titan"}
    # tiny-titan over tiny-vit-wide features: refused with the file and the reason, one line
    wrong = CliRunner().invoke(build_app(), ["run", "-d", "slides-csv", "--dataset-root", str(tmp_path / "cohort"),
                                             "-o", "table=colour.csv", "-e", "tiny-vit-wide", "-g", "tiny-titan",
                                             "-w", str(work), "--cpu"])
    assert wrong.exit_code != 0
    error = [line for line in wrong.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "slide encoder 'tiny-titan' reads 'tiny-vit' patch features, not 'tiny-vit-wide'" \
        in error[0], wrong.output
    assert "Traceback" not in wrong.output
