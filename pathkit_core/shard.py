"""Which slides this process works on: deterministic shards by a hash of the slide id, over a
cluster (`--shard i/N`, a Slurm array) and over the ranks of one launch (`RANK`/`WORLD_SIZE`); the
rule and its properties: docs/scale.md, "Which slides a process takes"."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from pathkit_core.contracts import PathkitError

T = TypeVar("T")


def slide_hash(slide_id: str) -> int:
    """A stable 64-bit integer for a slide id (the same in every process, Python and run)."""
    return int.from_bytes(hashlib.sha256(slide_id.encode("utf-8")).digest()[:8], "big")


@dataclass(frozen=True)
class Shard:
    """Outer shard `index` of `count` (0-based), and rank `rank` of `world` inside it."""

    index: int = 0
    count: int = 1
    rank: int = 0
    world: int = 1
    source: str = ""  # where the outer shard came from: "--shard", "SLURM_ARRAY_TASK_ID", ""

    def __post_init__(self) -> None:
        if not (self.count >= 1 and 0 <= self.index < self.count):
            raise PathkitError(f"shard {self.index + 1}/{self.count}: needs 1 <= i <= N")
        if not (self.world >= 1 and 0 <= self.rank < self.world):
            raise PathkitError(f"rank {self.rank} of world size {self.world}: needs 0 <= rank < world size")

    @property
    def whole(self) -> bool:
        """True when this process takes every slide."""
        return self.count == 1 and self.world == 1

    def owns(self, slide_id: str) -> bool:
        h = slide_hash(slide_id)
        return h % self.count == self.index and (h // self.count) % self.world == self.rank

    def select(self, items: Iterable[T], key: Callable[[T], str] = str) -> list[T]:
        """The items whose `key(item)` (a slide id) this process owns, in their given order."""
        return [item for item in items if self.owns(key(item))]

    def within(self, rank: int, world: int) -> Shard:
        """This outer shard split further across the `world` processes of a launch."""
        if world == self.world and rank == self.rank:
            return self
        if self.world != 1:
            raise PathkitError(f"rank {rank} of {world} given, but this shard is already rank {self.rank} of "
                               f"{self.world}")
        return replace(self, rank=rank, world=world)

    def outer(self) -> Shard:
        """The outer shard alone (all ranks of the launch together)."""
        return replace(self, rank=0, world=1)

    def label(self) -> str:
        """`shard 2/4 (--shard)`, `shard 1/8 (SLURM_ARRAY_TASK_ID), rank 0/2`, or `all slides`."""
        parts = []
        if self.count > 1:
            parts.append(f"shard {self.index + 1}/{self.count}" + (f" ({self.source})" if self.source else ""))
        if self.world > 1:
            parts.append(f"rank {self.rank}/{self.world}")
        return ", ".join(parts) or "all slides"


def parse_shard(text: str, source: str = "--shard") -> Shard:
    """`"2/4"` (1-based, as users count array tasks) -> Shard(index=1, count=4)."""
    index, sep, count = str(text).strip().partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not (1 <= i <= n):
        raise PathkitError(f"{source} {text!r}: expected i/N with 1 <= i <= N, e.g. --shard 1/4")
    return Shard(index=i - 1, count=n, source=source)


def _env_int(env: Mapping[str, str], name: str, default: int | None = None) -> int | None:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError:
        raise PathkitError(f"environment variable {name}={raw!r} is not an integer") from None


def shard_from_environment(env: Mapping[str, str] | None = None) -> Shard | None:
    """The outer shard of a Slurm job array task (task id `min + k*step` is shard k of the count), or
    None outside one; an array given as a list of ids (`--array=1,4,9`) is refused."""
    env = os.environ if env is None else env
    task = _env_int(env, "SLURM_ARRAY_TASK_ID")
    count = _env_int(env, "SLURM_ARRAY_TASK_COUNT")
    if task is None or count is None:
        return None
    first = _env_int(env, "SLURM_ARRAY_TASK_MIN", 0) or 0
    step = _env_int(env, "SLURM_ARRAY_TASK_STEP", 1) or 1
    last = _env_int(env, "SLURM_ARRAY_TASK_MAX")
    offset = task - first
    # a list (--array=1,4,9) comes as min 1, max 9, step 1, count 3: a range min..max would hold other ids
    not_a_range = last is not None and first + (count - 1) * step != last
    if not_a_range or offset < 0 or offset % step or offset // step >= count:
        raise PathkitError(f"Slurm array task {task} (min {first}, step {step}, count {count}) does not number the "
                           "shards 0..count-1; use a range (--array=0-N) or pass --shard i/N explicitly")
    return Shard(index=offset // step, count=count, source="SLURM_ARRAY_TASK_ID")


def process_rank(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(rank, world size) of a torchrun / `accelerate launch` process; (0, 1) otherwise."""
    env = os.environ if env is None else env
    world = _env_int(env, "WORLD_SIZE", 1) or 1
    rank = _env_int(env, "RANK", 0) or 0
    return (rank, world) if world > 1 else (0, 1)


def current_shard(option: str | None = None, env: Mapping[str, str] | None = None, *, rank: int | None = None,
                  world: int | None = None) -> Shard:
    """This process's shard: `option` ("i/N", from `--shard`; "1/1" takes every slide even inside a
    Slurm array) or the Slurm array task, split by the launch's rank (`rank`/`world` when given, else
    RANK/WORLD_SIZE from the environment)."""
    outer = parse_shard(option) if option else (shard_from_environment(env) or Shard())
    if rank is None or world is None:
        rank, world = process_rank(env)
    return outer.within(rank, world)


def shard_summary(shard: Shard, mine: int, total: int) -> str:
    """`shard 2/4 (--shard): 10 of 40 slides` for a log line ('' when not sharded)."""
    return "" if shard.whole else f"{shard.label()}: {mine} of {total} slides"


__all__ = ["Shard", "current_shard", "parse_shard", "process_rank", "shard_from_environment", "shard_summary",
           "slide_hash"]
