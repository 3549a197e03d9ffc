"""The files a dataset reads to make its cases, and their content identities.

The dataset stage keys a run by the content of everything a dataset read (tables, label, split and
mask files) and of every case's inputs. Datasets report a file they read with `note_read(path)` (the
cohort helpers' table reader does it for every table); `pathkit run` collects what was noted while the
dataset was opened and its cases listed (`recording()`). How a file's identity is sampled, and what
an edit in place it misses: docs/user-guide.md, "What reruns when".
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

# Files up to this size are hashed whole (tables, label and split files, masks, patches).
FULL_HASH_BYTES = 8 * 1024 * 1024
# A large file: its first and last HEAD_BYTES and BLOCKS blocks of BLOCK_BYTES evenly between.
HEAD_BYTES = 32 * 1024
BLOCK_BYTES = 8 * 1024
BLOCKS = 4

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
    """A content identity of a file: "sha256:<hex>" for a small one, "sampled:<size>:<hex>" for a
    large one. Cached per process by path, size, inode and change times."""
    p = os.path.abspath(path)
    st = os.stat(p)
    return _identity(p, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=200_000)
def _identity(path: str, size: int, inode: int, mtime_ns: int, ctime_ns: int) -> str:
    with open(path, "rb", buffering=0) as fh:
        if size <= FULL_HASH_BYTES:
            return f"sha256:{hashlib.file_digest(fh, 'sha256').hexdigest()}"
        digest = hashlib.sha256()
        for offset in sampled_offsets(size):
            length = HEAD_BYTES if offset in (0, size - HEAD_BYTES) else BLOCK_BYTES
            digest.update(os.pread(fh.fileno(), length, offset))
    return f"sampled:{size}:{digest.hexdigest()}"


def content_identity(path: str | Path) -> str:
    """A file's `file_identity`; for a folder (an OME-Zarr store, a DICOM series) the sha256 of
    every member's relative path and identity, so that an edited chunk or an added file changes it."""
    p = Path(path)
    if not p.is_dir():
        return file_identity(p)
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(p):
        dirs.sort()
        for name in sorted(files):
            member = Path(root) / name
            digest.update(f"{member.relative_to(p).as_posix()}\0{file_identity(member)}\n".encode())
    return f"folder:{digest.hexdigest()}"


def sampled_offsets(size: int) -> list[int]:
    """Where a large file is read for its identity: the head, BLOCKS blocks between, the tail."""
    between = [HEAD_BYTES + (size - 2 * HEAD_BYTES - BLOCK_BYTES) * (i + 1) // (BLOCKS + 1) for i in range(BLOCKS)]
    return [0, *between, size - HEAD_BYTES]


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


__all__ = ["FULL_HASH_BYTES", "content_identity", "file_identity", "note_read", "path_identity", "recording",
           "sampled_offsets"]
