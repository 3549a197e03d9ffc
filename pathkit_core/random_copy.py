"""The random-weight copy of an encoder: `NAME+random` is encoder NAME with its weights initialised from
its `random_init_seed` instead of its checkpoint (docs/encoders.md). It is no registered row: the
registry answers `NAME+random` for any registered NAME."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pathkit_core.contracts import Encoder, PathkitError

RANDOM_SUFFIX = "+random"


def random_base(name: str) -> str | None:
    """The encoder name a `NAME+random` name copies, or None when `name` is no random copy."""
    base = name[: -len(RANDOM_SUFFIX)] if name.endswith(RANDOM_SUFFIX) else ""
    return base or None


def _rebuilt(base: type[Encoder]) -> Encoder:
    return random_copy(base).__new__(random_copy(base))


@functools.cache
def random_copy(base: type[Encoder]) -> type[Encoder]:
    """The class of `base` with random weights (one class per base, so that lookups agree)."""
    if random_base(base.name):
        return base

    def ships_checkpoint(self: Encoder) -> bool:
        return False

    def load(self: Encoder, device: str = "cpu", weights_path: str | Path | None = None, **kwargs: Any) -> Any:
        if weights_path is not None:
            raise PathkitError(f"encoder {self.name!r} is {base.name!r} with random weights: it loads no "
                               f"checkpoint (drop the weights path {str(weights_path)!r})")
        return base.load(self, device, None, **kwargs)

    def __reduce__(self: Encoder) -> tuple[Any, ...]:  # workers rebuild it from the base class
        return _rebuilt, (base,), dict(self.__dict__)

    attrs = {"name": f"{base.name}{RANDOM_SUFFIX}", "is_pathology_model": False,
             "description": f"{base.name}'s architecture with random weights (seed {base.random_init_seed})",
             "ships_checkpoint": ships_checkpoint, "load": load, "__reduce__": __reduce__,
             "__module__": base.__module__, "__qualname__": f"{base.__qualname__}_random"}
    return type(f"{base.__name__}_random", (base,), attrs)


__all__ = ["RANDOM_SUFFIX", "random_base", "random_copy"]
