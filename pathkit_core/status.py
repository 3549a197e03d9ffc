"""What is done, failed, pending and locked in a workspace, a tile store or a feature store
(`pathkit status`; the states: docs/user-guide.md, "A cluster")."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.folder_kind import is_feature_store, is_tile_store
from pathkit_core.readers import read_json_file
from pathkit_core.workspace import FileLock


@dataclass
class StoreStatus:
    """One stage's store: `stage` "tile" (name: the tile spec folder) or "extract" (name: the encoder)."""

    stage: str
    name: str
    path: str
    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    locked: dict[str, str] = field(default_factory=dict)
    stale_locks: dict[str, str] = field(default_factory=dict)
    unreadable: str = ""  # in a workspace: why this store's status record could not be read

    def counts(self) -> dict[str, int]:
        return {"done": len(self.done), "failed": len(self.failed), "pending": len(self.pending),
                "locked": len(self.locked)}

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["done"] = len(self.done)  # ids of done slides would drown the rest
        out["counts"] = self.counts()
        return out


@dataclass
class RunStatus:
    """One `pathkit run` cell: its finished stages and who holds it."""

    path: str
    stages: list[str]
    locked: str = ""


def _names(folder: Path, suffix: str, lock_suffix: str) -> tuple[set[str], set[str]]:
    """One listing of `folder`: the slide ids of its `<id><suffix>` files and of its
    `.<id><lock_suffix>` lock files."""
    files, locks = set(), set()
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return files, locks
    for name in names:
        if name.startswith("."):
            if name.endswith(lock_suffix):
                locks.add(name[1: -len(lock_suffix)])
        elif name.endswith(suffix):
            files.add(name[: -len(suffix)])
    return files, locks


def _failed(records: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {sid: str(r.get("reason") or "failed") for sid, r in records.items() if r.get("status") == "failed"}


def _store_status(store: StoreStatus, suffix: str, lock_suffix: str, recorded: Iterable[str],
                  failed: dict[str, str], *, file_wins: bool = False) -> StoreStatus:
    """Sort the slides `recorded` (planned or with a record) or present as a `<id><suffix>` file into
    the four states (`file_wins`: a file is done even when a record says failed); only the slides with
    a `.<id><lock_suffix>` file in the one listing have their lock read."""
    folder = Path(store.path)
    files, locks = _names(folder, suffix, lock_suffix)
    if file_wins:
        failed = {sid: why for sid, why in failed.items() if sid not in files}
    for sid in sorted(set(recorded) | files):
        state = FileLock(folder / f".{sid}{lock_suffix}").state() if sid in locks else None
        if state is not None and not state["stale"]:
            store.locked[sid] = state["owner"]
            continue
        if state is not None:
            store.stale_locks[sid] = state["owner"]
        if sid in failed:
            store.failed[sid] = failed[sid]
        elif sid in files:
            store.done.append(sid)
        else:
            store.pending.append(sid)
    return store


def tile_store_status(folder: Path) -> StoreStatus:
    from pathkit_core.wsi.tiling import read_tiling_log

    log = read_tiling_log(folder)  # one parse: records and plan
    # A manifest written after an earlier failure is the newer truth; the record lags by a flush.
    return _store_status(StoreStatus("tile", folder.name, str(folder)), ".parquet", ".lock",
                         [*log.planned, *log.slides], _failed(log.slides), file_wins=True)


def feature_store_status(encoder_dir: Path, *, verify: bool = False) -> StoreStatus:
    """One encoder's feature store from its status file (one parse) and one folder listing;
    `verify` also opens every feature file's header (unreadable or failed-QC files fail)."""
    from pathkit_core.features.store import FEATURE_SUFFIX, failed_slides, read_status_file

    out_dir, encoder = encoder_dir.parent, encoder_dir.name
    data = read_status_file(out_dir, encoder)
    failed = failed_slides(out_dir, encoder) if verify else _failed(data["slides"])
    return _store_status(StoreStatus("extract", encoder, str(encoder_dir)), FEATURE_SUFFIX, f"{FEATURE_SUFFIX}.lock",
                         [*data["planned"], *data["slides"]], failed)


def _subfolders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")) if folder.is_dir() else []


def run_status(run_dir: Path, label: str) -> RunStatus:
    """The finished stages of one run folder and who holds it (a damaged record: said, not raised)."""
    marker = run_dir / "stages.json"
    try:
        stages = sorted(read_json_file(marker, "stage record")) if marker.exists() else []
    except PathkitError as exc:  # bad bytes, bad JSON, not an object: one line, no traceback
        return RunStatus(label, [], f"unreadable stage record ({exc})")
    state = FileLock(run_dir / "run.lock").state()
    return RunStatus(label, stages, state["owner"] if state is not None and not state["stale"] else "")


def run_statuses(runs_dir: Path) -> list[RunStatus]:
    return [run_status(m.parent, str(m.parent.relative_to(runs_dir))) for m in sorted(runs_dir.rglob("stages.json"))]


def _or_unreadable(stage: str, folder: Path, read: Any) -> StoreStatus:
    """`read()`, or a store that says why its status record is unreadable (a damaged file, a
    format version this pathkit does not read): one bad store of a workspace hides no other."""
    try:
        return read()
    except PathkitError as exc:
        return StoreStatus(stage, folder.name, str(folder), unreadable=str(exc))


def collect(path: str | Path, *, verify: bool = False) -> dict[str, Any]:
    """Every store under `path` (a workspace, an `extract --out` folder, a tile store or a
    feature store of one encoder) and every run cell: {"stores": [...], "runs": [...]}.
    `verify`: open every feature file's header too (`feature_store_status`)."""
    root = Path(path)
    if not root.is_dir():
        raise PathkitError(f"{root} is not a folder (give a workspace, a tile store or a feature store)")
    stores: list[StoreStatus] = []
    if is_tile_store(root):
        stores.append(tile_store_status(root))
    elif is_feature_store(root):
        stores.append(feature_store_status(root, verify=verify))
    else:
        # a workspace (tiles/<spec>, features/<encoder>, runs/) or `pathkit extract --out`
        # (<out>/<encoder>, <out>/tiles/<spec>)
        for spec in _subfolders(root / "tiles"):
            if is_tile_store(spec):
                stores.append(_or_unreadable("tile", spec, lambda spec=spec: tile_store_status(spec)))
        # `features-<hash>`: the feature store of a run whose tiling options differ from the
        # encoder's own (pathkit_core.run.features.store_folders)
        bases = [*sorted(p for p in root.glob("features*") if p.is_dir()), root]
        for base in bases:
            for enc in _subfolders(base):
                if enc.parent == root and (enc.name in ("tiles", "runs") or enc.name.startswith("features")):
                    continue
                if is_feature_store(enc):
                    found = _or_unreadable("extract", enc, lambda enc=enc: feature_store_status(enc, verify=verify))
                    if base.name.startswith("features-"):
                        found.name = f"{enc.name} ({base.name})"
                    stores.append(found)
    runs = run_statuses(root / "runs") if (root / "runs").is_dir() else []
    if not stores and not runs:
        raise PathkitError(f"{root}: no tile store, feature store or run found (expected tiling_status.json, "
                           "<encoder>/extraction_status.json, tiles/, features/ or runs/)")
    return {"path": str(root), "stores": stores, "runs": runs}
