"""`pathkit bench --export` and `--merge`: two labs' exports merged give the leaderboard of one suite
that ran every cell; rows whose protocol differs are refused; every identity is in the export."""

from __future__ import annotations

import polars as pl
import pytest

from pathkit_bench.suite.exchange import IDENTITY_COLUMNS, KEY, merge_exports, read_export
from tests.plugins.datasets import catalogue_replicas as replicas

SUITE = """
name = "{name}"
encoders = [{encoders}]
generators = ["knn"]
[[tasks]]
name = "bracs"
dataset = "bracs"
dataset_root = "{root}"
compare = "balanced_accuracy"
[tasks.hparams]
k = {k}
"""


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    base = tmp_path_factory.mktemp("merge")
    root = replicas.bracs(base / "bracs")
    work = base / "work"
    out = {}
    from typer.testing import CliRunner

    from pathkit_core.cli import build_app

    for name, encoders, k in (("lab-a", '"tiny-vit"', 1), ("lab-b", '"tiny-vit-wide"', 1),
                              ("both", '"tiny-vit", "tiny-vit-wide"', 1), ("lab-c", '"tiny-vit-wide"', 3)):
        config = base / f"{name}.toml"
        config.write_text(SUITE.format(name=name, encoders=encoders, root=root, k=k))
        result = CliRunner().invoke(build_app(), ["bench", "--config", str(config), "--workdir", str(work), "--cpu",
                                                  "--export", str(base / f"{name}.parquet")], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        out[name] = base / f"{name}.parquet"
    return base, work, out


def _plain(frame):
    return frame.drop("suite").sort(KEY)


@pytest.mark.slow  # four small suites: `make test-suite`
def test_two_exports_merge_into_the_leaderboard_of_one_suite(cli, exports):
    base, work, files = exports
    a = read_export(files["lab-a"])
    assert all(a[c].str.len_chars().min() > 0 for c in IDENTITY_COLUMNS)  # every identity filled
    assert a["encoder_weights"][0] == "random-init:seed=0" and set(a["compare"]) == {"balanced_accuracy"}
    merged, refused = merge_exports(a, read_export(files["lab-b"]))
    assert refused == []
    both = read_export(files["both"])
    assert _plain(merged).equals(_plain(both))
    result = cli("bench", "--merge", files["lab-a"], files["lab-b"], "--workdir", work)
    assert result.exit_code == 0, result.output
    board = pl.read_parquet(work / "suites" / "merged" / "leaderboard.parquet")
    assert _plain(board.select(both.columns)).equals(_plain(both))
    report = (work / "suites" / "merged" / "report.html").read_text()
    assert "tiny-vit-wide" in report and "Pairwise differences within each task" in report
    comparisons = pl.read_csv(work / "suites" / "merged" / "comparisons.csv")
    assert comparisons.height == 1 and comparisons["score"][0] == "balanced_accuracy"


@pytest.mark.slow
def test_rows_of_another_protocol_are_refused(cli, exports):
    _, work, files = exports
    a, c = read_export(files["lab-a"]), read_export(files["lab-c"])  # lab-c's kNN has k = 3
    merged, refused = merge_exports(a, c)
    assert len(refused) == c.height and "bracs/tiny-vit-wide/knn/seed0" in refused[0]
    assert _plain(merged).equals(_plain(a))
    result = cli("bench", "--merge", files["lab-a"], files["lab-c"], "--workdir", work)
    assert result.exit_code == 0 and "whose protocol differs" in " ".join(result.output.split())
