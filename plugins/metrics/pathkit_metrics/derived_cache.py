"""Values computed from a metric's own source code, kept from one process to the next.

Some tables a metric needs are a pure function of its code: CRQS's built-in vocabulary is its
curated phrases, each normalised by the same rules that prepare a report (17 ms of a cold
scoring process, for 1,073 phrases), and that vocabulary's prefix-tree pattern (6 ms).
`derived(name, folder, build)` returns `build()` and keeps the value in pathkit's cache folder
(`$XDG_CACHE_HOME/pathkit/derived/NAME.marshal`, else under `~/.cache`) with the sha256 of every
`.py` file of `folder` and of the interpreter's version: the next process whose code and
interpreter are byte-for-byte the same reads the value instead of computing it; any edit to a file
of the folder (or another Python) computes it afresh and replaces the file. Only values `marshal`
can hold are kept. A file that does not read back whole, or names other sources, is recomputed; a
folder that cannot be written costs the next process the computing, nothing else.
`PATHKIT_DERIVED_CACHE=off` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_DERIVED_CACHE = "PATHKIT_DERIVED_CACHE"
FORMAT = 1


def cache_file(name: str) -> Path | None:
    """Where the value `name` is kept (None: the cache is off)."""
    if os.environ.get(ENV_DERIVED_CACHE) == "off":
        return None
    from pathkit_core.plugins import cache_home

    return cache_home() / "derived" / f"{name}.marshal"


def sources_key(folder: Path) -> str:
    """The sha256 of the interpreter's version and of every `.py` file of `folder` (name and bytes)."""
    digest = hashlib.sha256(f"{FORMAT}\0{sys.version}\0".encode())
    for path in sorted(folder.glob("*.py")):
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def derived(name: str, folder: Path, build: Callable[[], Any]) -> Any:
    """`build()`, kept per the source files of `folder` (module docstring)."""
    path = cache_file(name)
    if path is None:
        return build()
    key = sources_key(folder)
    try:
        kept_key, value = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        pass
    else:
        if kept_key == key:
            return value
    value = build()
    payload = marshal.dumps((key, value))  # ValueError for a value marshal cannot hold: a caller's bug
    from pathkit_core.contracts import PathkitError
    from pathkit_core.workspace import atomic_write_bytes  # only when the value was computed

    with contextlib.suppress(OSError, PathkitError):
        atomic_write_bytes(path, payload)
    return value


__all__ = ["ENV_DERIVED_CACHE", "cache_file", "derived", "sources_key"]
