"""Format versions of what pathkit writes, and the one check every reader makes of them
(docs/file-formats.md, "Format versions")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError

# What a file without a recorded version is: pathkit 0.1.0 wrote every format at version 1.
UNVERSIONED = 1

RUN_FOLDER_VERSION = 1  # metrics.json of a run folder and of `pathkit score --out`
# The suite folder's and the leaderboards' versions: pathkit_bench.leaderboard, their writer's and reader's.


def version_problem(found: Any, *, what: str, path: str | Path, current: int, oldest: int = 1,
                    redo: str) -> str | None:
    """None when `found` (a recorded version, None when there is none) is one this pathkit reads;
    else the one-line reason, naming the file, both versions and the command `redo` that redoes it."""
    import pathkit_core

    version = UNVERSIONED if found is None else found
    if isinstance(version, str) and version.strip().isdigit():
        version = int(version)
    if isinstance(version, bool) or not isinstance(version, int):
        return f"{path}: {what} format version {found!r} is not a version number; redo it with `{redo}`"
    reads = f"version {current}" if oldest == current else f"versions {oldest} to {current}"
    if version > current:
        return (f"{path}: {what} format version {version} is newer than pathkit {pathkit_core.__version__} reads "
                f"({reads}): upgrade pathkit (`pip install -U pathkit`) or redo it with `{redo}`")
    if version < oldest:
        return (f"{path}: {what} format version {version} is older than pathkit {pathkit_core.__version__} reads "
                f"({reads}): redo it with `{redo}`")
    return None


def check_version(found: Any, *, what: str, path: str | Path, current: int, oldest: int = 1, redo: str) -> int:
    """The version `found` stands for (None: 0.1.0's, version 1), or a PathkitError (`version_problem`)."""
    problem = version_problem(found, what=what, path=path, current=current, oldest=oldest, redo=redo)
    if problem:
        raise PathkitError(problem)
    return UNVERSIONED if found is None else int(found)


__all__ = ["RUN_FOLDER_VERSION", "UNVERSIONED", "check_version", "version_problem"]
