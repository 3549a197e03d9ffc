"""The files a dataset reads to make its cases, and their content identities.

A run's results rest on the data as much as on the code: the dataset stage keys the run by the
content of everything a dataset read (tables, label, split and mask files) and of every case's
inputs (slides, images, feature files). Datasets report a file they read with `note_read(path)`
(the cohort helpers' table reader does it for every table); `pathkit run` collects what was
noted while the dataset was opened and its cases listed (`recording()`).

An identity is the sha256 of the whole file, so any change of any byte changes it. Hashing is
paid once per version of a file: a large one's (over `FULL_HASH_BYTES`, a whole-slide image, a zip
of patches) is kept in a small cache file named by the file's device, inode, size, modification
and change times. Any write changes the change time (ctime), which no user call can set back, so
a file edited in place, with or without its modification time restored, is hashed again. The
identity does not depend on the path or the modification time: the same bytes in another folder
are the same data. The cache lives in `$PATHKIT_IDENTITY_CACHE` (`off`: none), else
`$XDG_CACHE_HOME/pathkit/identity` or `~/.cache/pathkit/identity`; an unwritable cache only costs
hashing again. docs/user-guide.md ("What reruns when") has the reasoning.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

# Files up to this size are hashed without the on-disk cache (tables, label and split files,
# masks, patches): hashing them costs less than looking up a cache file.
FULL_HASH_BYTES = 8 * 1024 * 1024
ENV_IDENTITY_CACHE = "PATHKIT_IDENTITY_CACHE"
# Identities recorded before whole-file hashing: the size and a hash of the first and last
# _HEAD_BYTES and _BLOCKS blocks of _BLOCK_BYTES between ("sampled:<size>:<hex>"); only checked
# against (`matches_identity`), never made.
_HEAD_BYTES = 32 * 1024
_BLOCK_BYTES = 8 * 1024
_BLOCKS = 4

_recorded: ContextVar[set[Path] | None] = ContextVar("pathkit_sources_recorded", default=None)


def note_read(path: str | Path) -> None:
    """Report that the dataset being opened read `path` to make its cases, targets or split."""
    files = _recorded.get()
    if files is not None:
        files.add(Path(path))


@contextlib.contextmanager
def recording() -> Iterator[set[Path]]:
    """Collect the files `note_read` reports inside the block (the set fills as they are read)."""
    files: set[Path] = set()
    token = _recorded.set(files)
    try:
        yield files
    finally:
        _recorded.reset(token)


def file_identity(path: str | Path) -> str:
    """The content identity of a file, "sha256:<hex>" of all its bytes. Cached per process, and
    for a large file on disk, by device, inode, size, modification and change times."""
    p = os.path.abspath(path)
    st = os.stat(p)
    return _identity(p, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def identity_cache_dir() -> Path | None:
    """Where large files' identities are kept (None: `$PATHKIT_IDENTITY_CACHE=off`)."""
    given = os.environ.get(ENV_IDENTITY_CACHE)
    if given:
        return None if given.strip().lower() == "off" else Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pathkit" / "identity"


@functools.lru_cache(maxsize=200_000)
def _identity(path: str, dev: int, inode: int, size: int, mtime_ns: int, ctime_ns: int) -> str:
    store = identity_cache_dir() if size > FULL_HASH_BYTES else None
    entry = store / f"{dev:x}-{inode:x}-{size:x}-{mtime_ns:x}-{ctime_ns:x}" if store else None
    if entry is not None:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            found = entry.read_text()
            if len(found) == 71 and found.startswith("sha256:"):
                return found
    with open(path, "rb") as fh:
        identity = f"sha256:{hashlib.file_digest(fh, 'sha256').hexdigest()}"
    st = os.stat(path)
    if entry is not None and (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (
        dev, inode, size, mtime_ns, ctime_ns,
    ):  # not kept when the file was written while it was read
        with contextlib.suppress(OSError):
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
            tmp.write_text(identity)
            os.replace(tmp, entry)
    return identity


def matches_identity(path: str | Path, recorded: str | None) -> bool:
    """Whether the file at `path` holds the content `recorded` names: an identity of
    `file_identity`, the sampled identity an older pathkit recorded for a large file, or the bare
    whole-file sha256 hex of older tile manifests."""
    if not recorded:
        return False
    if recorded.startswith("sampled:"):
        return _sampled_identity(path) == recorded
    if ":" not in recorded:
        recorded = f"sha256:{recorded}"
    return file_identity(path) == recorded


def _sampled_identity(path: str | Path) -> str:
    size = os.stat(path).st_size
    if size <= FULL_HASH_BYTES:  # never recorded for a small file: whatever it holds, no match
        return ""
    between = [_HEAD_BYTES + (size - 2 * _HEAD_BYTES - _BLOCK_BYTES) * (i + 1) // (_BLOCKS + 1)
               for i in range(_BLOCKS)]
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for offset in [0, *between, size - _HEAD_BYTES]:
            fh.seek(offset)
            digest.update(fh.read(_HEAD_BYTES if offset in (0, size - _HEAD_BYTES) else _BLOCK_BYTES))
    return f"sampled:{size}:{digest.hexdigest()}"


def path_identity(value: str | Path) -> str | None:
    """The identity of what a path-like value names: a file's content identity, a member of a
    zip (`archive.zip::member`) by the archive's, None when it names no file."""
    text = os.fspath(value)
    archive, sep, member = text.partition("::")
    target = Path(archive if sep else text)
    try:
        if not target.is_file():
            return None
        found = file_identity(target)
    except (OSError, ValueError):  # unreadable, or not a possible path (a NUL byte)
        return None
    return f"{found}::{member}" if sep else found


__all__ = [
    "ENV_IDENTITY_CACHE", "FULL_HASH_BYTES", "file_identity", "identity_cache_dir", "matches_identity",
    "note_read", "path_identity", "recording",
]
