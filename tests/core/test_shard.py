"""Deterministic sharding: each slide in exactly one (shard, rank), stable under reordering."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_core.shard import (
    Shard,
    current_shard,
    parse_shard,
    process_rank,
    shard_from_environment,
    slide_hash,
)

IDS = [f"TCGA-{i:02d}-{j:04d}-01Z-00-DX1" for i in range(20) for j in range(50)]


def test_the_hash_is_sha256_and_never_changes_between_versions():
    # Shards of one cohort may run different pathkit versions: the assignment is part of the format.
    import hashlib

    assert slide_hash("CMU-1") == int(hashlib.sha256(b"CMU-1").hexdigest()[:16], 16) == 0x5FDC988F723CCCCD
    # 0x...CD mod 4 == 1: CMU-1 is in shard 2/4, rank (0x5FDC988F723CCCCD // 4) mod 2 == 1 of 2
    assert [Shard(index=i, count=4).owns("CMU-1") for i in range(4)] == [False, True, False, False]
    assert Shard(index=1, count=4).within(1, 2).owns("CMU-1")


@pytest.mark.parametrize("count, world", [(1, 1), (3, 1), (4, 2), (7, 3)])
def test_every_slide_is_in_exactly_one_shard_and_rank(count, world):
    owners = Counter()
    for i in range(count):
        for r in range(world):
            owners.update(Shard(index=i, count=count).within(r, world).select(IDS))
    assert set(owners) == set(IDS) and set(owners.values()) == {1}


def test_the_split_is_stable_under_reordering_and_under_added_slides():
    shard = Shard(index=1, count=3)
    shuffled = IDS[:]
    random.Random(0).shuffle(shuffled)
    assert set(shard.select(shuffled)) == set(shard.select(IDS))
    assert shard.select(shuffled) == [s for s in shuffled if s in set(shard.select(IDS))]  # order kept
    fewer = IDS[::2]
    assert set(shard.select(fewer)) == set(shard.select(IDS)) & set(fewer)


def test_the_outer_split_does_not_depend_on_the_ranks_inside_a_shard():
    outer = Shard(index=2, count=5)
    alone = set(outer.select(IDS))
    for world in (2, 3, 8):
        assert set().union(*(outer.within(r, world).select(IDS) for r in range(world))) == alone


def test_shards_are_balanced_within_binomial_noise():
    sizes = [len(Shard(index=i, count=8).select(IDS)) for i in range(8)]
    expected = len(IDS) / 8  # 125, standard deviation ~10.5
    assert all(abs(n - expected) < 4 * 10.5 for n in sizes), sizes


def test_parse_shard_counts_from_one_and_explains_mistakes():
    assert parse_shard("2/4") == Shard(index=1, count=4, source="--shard")
    for bad in ("0/4", "5/4", "2", "a/b", "1/0", "-1/3"):
        with pytest.raises(PathkitError, match="expected i/N with 1 <= i <= N"):
            parse_shard(bad)


def test_slurm_array_tasks_are_numbered_from_min_in_steps():
    env = {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "2",
           "SLURM_ARRAY_TASK_STEP": "3"}  # --array=2-11:3 -> tasks 2, 5, 8, 11
    assert shard_from_environment(env) == Shard(index=1, count=4, source="SLURM_ARRAY_TASK_ID")
    assert shard_from_environment({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "8"}).index == 0
    assert shard_from_environment({}) is None
    with pytest.raises(PathkitError, match="pass --shard i/N explicitly"):
        # --array=1,4,9: a list, not a range
        shard_from_environment({"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_COUNT": "3",
                                "SLURM_ARRAY_TASK_MIN": "1"})
    # what Slurm 22.05 sets for --array=1,4,9 (measured): task 1 is refused too, not taken as shard 1/3
    for task in ("1", "4", "9"):
        with pytest.raises(PathkitError, match="pass --shard i/N explicitly"):
            shard_from_environment({"SLURM_ARRAY_TASK_ID": task, "SLURM_ARRAY_TASK_COUNT": "3",
                                    "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "9",
                                    "SLURM_ARRAY_TASK_STEP": "1"})
    ranged = {"SLURM_ARRAY_TASK_ID": "30", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
              "SLURM_ARRAY_TASK_MAX": "30", "SLURM_ARRAY_TASK_STEP": "10"}  # --array=0-30:10
    assert shard_from_environment(ranged).index == 3
    with pytest.raises(PathkitError, match="not an integer"):
        shard_from_environment({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "3"})


def test_current_shard_prefers_the_option_then_slurm_and_splits_by_rank():
    slurm = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "RANK": "1", "WORLD_SIZE": "2"}
    assert current_shard(None, slurm) == Shard(index=3, count=4, rank=1, world=2, source="SLURM_ARRAY_TASK_ID")
    assert current_shard("1/2", slurm) == Shard(index=0, count=2, rank=1, world=2, source="--shard")
    assert current_shard("1/1", slurm).outer().whole  # an array used for something else
    assert current_shard(None, {}) == Shard() and Shard().whole
    assert process_rank({"RANK": "3", "WORLD_SIZE": "4"}) == (3, 4) and process_rank({"RANK": "0"}) == (0, 1)
    assert current_shard(None, {}, rank=1, world=3) == Shard(rank=1, world=3)


def test_a_rank_cannot_be_applied_twice_differently():
    shard = Shard(index=0, count=2).within(1, 2)
    assert shard.within(1, 2) is shard
    with pytest.raises(PathkitError, match="already rank 1 of 2"):
        shard.within(0, 4)
    with pytest.raises(PathkitError):
        Shard(index=2, count=2)


def test_labels():
    assert Shard().label() == "all slides"
    assert parse_shard("2/4").within(1, 2).label() == "shard 2/4 (--shard), rank 1/2"
