"""`pathkit tile --shard i/N` and Slurm array tasks: disjoint shards of one store, pending until done."""

from __future__ import annotations

import json

import pytest

from pathkit_core.shard import Shard

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")

FAST = ["--mpp", "2", "--tile-px", "64", "--min-tissue-area", "0", "--thumbnail-px", "256", "-q", "--json"]
NAMES = ("tissue", "aperio", "pen", "glass")


def _tiled(result):
    assert result.exit_code in (0, 1), result.output
    return {r["slide_id"] for r in json.loads(result.stdout)}


def _tile_counts(cli, out):
    (s,) = json.loads(cli("status", out, "--json").stdout)["stores"]
    return s["counts"], s["pending"]


def test_two_shards_tile_disjoint_halves_and_status_shows_the_rest_pending(cli, synthetic_slides, tmp_path,
                                                                           monkeypatch):
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    slides = [synthetic_slides[n] for n in NAMES]
    out = tmp_path / "tiles"
    first = cli("tile", *slides, "--out", out, "--shard", "1/2", *FAST)
    one = _tiled(first)
    assert one == set(Shard(index=0, count=2).select(NAMES))
    assert f"shard 1/2 (--shard): {len(one)} of 4 slides" in first.stderr
    counts, pending = _tile_counts(cli, out)
    assert counts["pending"] == 4 - len(one) and set(pending) == set(NAMES) - one
    two = _tiled(cli("tile", *slides, "--out", out, "--shard", "2/2", *FAST))
    assert one.isdisjoint(two) and one | two == set(NAMES)
    assert _tile_counts(cli, out) == ({"done": 4, "failed": 0, "pending": 0, "locked": 0}, [])


def test_a_slurm_array_task_takes_its_shard_and_shard_1_of_1_takes_all(cli, synthetic_slides, tmp_path,
                                                                       monkeypatch):
    slides = [synthetic_slides[n] for n in NAMES]
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "1")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "2")
    got = _tiled(cli("tile", *slides, "--out", tmp_path / "a", *FAST))
    assert got == set(Shard(index=1, count=2).select(NAMES))
    assert _tiled(cli("tile", *slides, "--out", tmp_path / "b", "--shard", "1/1", *FAST)) == set(NAMES)
    bad = cli("tile", *slides, "--out", tmp_path / "c", "--shard", "3/2", *FAST)
    assert bad.exit_code == 2 and "expected i/N" in bad.stderr


def test_list_prints_the_slides_of_this_shard_without_tiling(cli, synthetic_slides, tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    slides = [synthetic_slides[n] for n in NAMES]
    listed = cli("tile", *slides, "--out", tmp_path / "o", "--shard", "2/2", "--list")
    assert listed.exit_code == 0
    expected = [str(p) for p in slides if Shard(index=1, count=2).owns(p.stem)]
    assert listed.stdout.split() == expected and not (tmp_path / "o").exists()
