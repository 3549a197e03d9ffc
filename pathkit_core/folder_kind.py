"""Which kind of folder pathkit wrote a path is, told by the files pathkit writes there
(docs/file-formats.md), and the nearest workspace above a folder, found as `git` finds its
repository. Read-only: names and small headers only. `folder_kind` tests a run folder first: it holds
parquet files too, as a tile store does."""

from __future__ import annotations

from pathlib import Path

from pathkit_core.workspace import DEFAULT_WORKDIR

WORKSPACE_PARTS = ("tiles", "features", "runs", "suites", "datasets", "image-features")
KINDS = ("run", "suite", "tile store", "feature store", "image-feature store", "dataset store", "workspace")


def _has(folder: Path, *names: str) -> bool:
    return any((folder / n).is_file() for n in names)


def _any(folder: Path, pattern: str) -> bool:
    try:
        return next(iter(folder.glob(pattern)), None) is not None
    except OSError:
        return False


def is_workspace(folder: Path) -> bool:
    folder = Path(folder)
    try:
        return any((folder / part).is_dir() for part in WORKSPACE_PARTS) or any(
            p.is_dir() for p in folder.glob("features-*"))
    except OSError:
        return False


def is_tile_store(folder: Path) -> bool:
    from pathkit_core.wsi.tiling import STATUS_FILE

    return _has(folder, STATUS_FILE) or _any(folder, "*.parquet")


def is_feature_store(folder: Path) -> bool:
    from pathkit_core.features.store import FEATURE_SUFFIX, STATUS_FILE

    return _has(folder, STATUS_FILE) or _any(folder, f"*{FEATURE_SUFFIX}")


def folder_kind(folder: str | Path) -> str | None:
    """The kind (one of `KINDS`) of a folder pathkit wrote; None when it is none of them."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    if _has(folder, "stages.json", "metrics.json"):
        return "run"
    if _has(folder, "leaderboard.parquet") and _has(folder, "cells.csv"):
        return "suite"
    if folder.parent.name == "datasets" and is_workspace(folder.parent.parent):
        return "dataset store"
    if is_tile_store(folder):
        return "tile store"
    if _any(folder, "shard-*.safetensors"):
        return "image-feature store"
    if is_feature_store(folder):
        return "feature store"
    if is_workspace(folder):
        return "workspace"
    return None


def nearest_workspace(start: str | Path) -> Path | None:
    """The workspace `start` is in, or the nearest above it (a folder that is one, or that holds
    `pathkit-work/`, the default --workdir), as `git` walks up to its repository; None when no
    folder up to the root is one."""
    here = Path(start).absolute()
    for folder in (here, *here.parents):
        if (folder / DEFAULT_WORKDIR).is_dir():  # before the folder itself: a project's own data/ is no workspace
            return folder / DEFAULT_WORKDIR
        if folder_kind(folder) == "workspace":
            return folder
    return None


def default_status_folder(cwd: str | Path = ".") -> Path | None:
    """What `pathkit status` reads with no path: the nearest workspace at or above `cwd`, else
    `cwd` itself when it is a folder pathkit wrote (a tile or feature store outside any workspace)."""
    found = nearest_workspace(cwd)
    if found is not None:
        return found
    return Path(cwd) if folder_kind(cwd) is not None else None


__all__ = ["KINDS", "WORKSPACE_PARTS", "default_status_folder", "folder_kind", "is_feature_store", "is_tile_store",
           "is_workspace", "nearest_workspace"]
