"""Regular expressions compiled on their first use, not at import.

The CRQS modules hold some 180 patterns; compiling them all costs a fresh process tens of
milliseconds before the first report is read, and a REG report (one line, no TNM, no synoptic
form) never runs most of the long-report ones (a gated pattern runs only when its keyword occurs).
`lazy(source)` stands for `re.compile(source)`: its source is at hand (`.pattern`, to build other
patterns from it) without compiling; the first use of any other attribute compiles it and keeps
the compiled pattern's methods on the instance, so every later call goes straight to them (no
Python-level wrapper on the warm path).
"""

from __future__ import annotations

import re
from typing import Any

# the compiled pattern's attributes copied onto the instance at first use
_FORWARDED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "groups", "groupindex")


class LazyPattern:
    """`re.compile(pattern, flags)`, made when first used (see the module docstring)."""

    __slots__ = ("pattern", "flags", *_FORWARDED)

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:
        # only reached while a forwarded slot is still empty (or for an unknown name)
        if name not in _FORWARDED:
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self.flags)
        for attribute in _FORWARDED:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """A pattern compiled on its first use (an `re.compile` that costs nothing at import)."""
    return LazyPattern(pattern, flags)


__all__ = ["LazyPattern", "lazy"]
