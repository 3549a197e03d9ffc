"""Workspace machinery: atomic writes, lock files, content hashes and run provenance."""

from __future__ import annotations

import contextlib
import errno
import functools
import glob
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from pathkit_core._deprecation import moved_names
from pathkit_core.contracts import PathkitError, brief_list, regular_file_problem

DEFAULT_WORKDIR = Path("pathkit-work")


# --------------------------------------------------------------------------- storage errors


class StorageError(PathkitError):
    """A write the filesystem refused (full, over quota, read-only, permission denied)."""


_FULL = (errno.ENOSPC, errno.EDQUOT)
# Libraries that write through their own I/O (polars, safetensors) report the OS error only
# in their message: "No space left on device (os error 28)".
_FULL_TEXT = ("no space left on device", "os error 28", "disk quota exceeded", "os error 122")


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _existing(path: Path) -> Path:
    """`path`, or its nearest existing parent."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_space(path: str | Path) -> str:
    """Free space on the filesystem holding `path` (or its nearest existing parent), as text."""
    try:
        return f"{_human_bytes(shutil.disk_usage(_existing(Path(path))).free)} free"
    except OSError:
        return "free space unknown"


def storage_error(exc: BaseException, path: str | Path, *, permission: bool = True) -> StorageError | None:
    """A one-line StorageError naming `path` when `exc` is the filesystem refusing a write
    (`permission`: also a permission error, when `exc` can only come from creating `path`)."""
    code = getattr(exc, "errno", None)
    text = str(exc).lower()
    if code in _FULL or any(t in text for t in _FULL_TEXT):
        return StorageError(f"{path}: no space left on the device ({free_space(path)}); free some space or write "
                            "elsewhere, then rerun to resume")
    if code == errno.EROFS:
        return StorageError(f"{path}: the filesystem is read-only; write elsewhere")
    if code == errno.EIO:
        return StorageError(f"{path}: the device reported an input/output error while writing (a failing disk, or "
                            "a network filesystem that went away); nothing half written is kept: rerun to resume")
    if permission and code in (errno.EACCES, errno.EPERM):
        return StorageError(f"{path}: permission denied for writing; write elsewhere or fix the permissions")
    return None


@contextlib.contextmanager
def _storage_errors(path: str | Path, *, permission: bool = True) -> Iterator[None]:
    """An OSError in the block that is the filesystem refusing a write becomes the StorageError of `path`."""
    try:
        yield
    except OSError as exc:
        raise (storage_error(exc, path, permission=permission) or exc) from exc


def _raise_storage_error(exc: BaseException, target: Path) -> None:
    """Raise the StorageError of `target` for `exc`, raised inside a writing block (where a permission
    error may be the writer reading some other file); return when `exc` is no such refusal."""
    err = storage_error(exc, target, permission=False) if isinstance(exc, Exception) else None
    if err is not None and not isinstance(exc, StorageError):
        raise err from exc


def check_writable_dir(path: str | Path, what: str) -> Path:
    """Check before any work that `path` is (or can become) a folder this process can write in;
    nothing is created: the nearest existing ancestor must be a folder where a file can be made."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise PathkitError(f"{what} {path} is an existing file, not a folder; give a folder")
    probe = _existing(path)
    if not probe.is_dir():
        raise PathkitError(f"{what} {path}: {probe} is a file, so the folder cannot be made")
    try:
        fd, name = tempfile.mkstemp(prefix=".pathkit-write-check.", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        err = storage_error(exc, probe)
        raise (err or PathkitError(f"{what} {path}: cannot write in {probe}: {exc.strerror or exc}")) from None
    return path


def check_regular_file(path: str | Path, what: str) -> Path:
    """`path` when it is a readable regular file; else a one-line error naming `what` and the
    path. Checked before opening: a named pipe given as a config or table would block the read
    forever, waiting for a writer."""
    problem = regular_file_problem(path)
    if problem is not None:
        raise PathkitError(f"{what} {path} {problem[1]}" + ("; give a regular file" if problem[0] in (
            "directory", "not-a-file") else ""))
    return Path(path)


# The longest name one folder entry may have on the filesystems pathkit writes to (ext4, xfs, NFS).
NAME_MAX_BYTES = 255


def folder_name_problem(name: Any) -> str | None:
    """Why `name` cannot be one file or folder name (None when it can): not a non-empty
    string, '.', '..', a '/', '\\', NUL or another control character in it, or longer than
    `NAME_MAX_BYTES` in UTF-8."""
    if not isinstance(name, str) or not name.strip():
        return f"{name!r} is not a non-empty name"
    if name in (".", "..") or any(ch in name for ch in ("/", "\\", "\x00")):
        return f"{name!r} must be one plain folder name (no '/', '\\', NUL, '.' or '..')"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):  # a newline, a terminal escape
        return f"{name!r} must be one plain folder name (no control characters such as a newline)"
    size = len(name.encode("utf-8", "surrogateescape"))
    if size > NAME_MAX_BYTES:
        return f"{name[:40]!r}... is {size} bytes long; a name is at most {NAME_MAX_BYTES}"
    return None


def confined(root: str | Path, *names: str, what: str) -> Path:
    """`root/name/...` for names that come from a file: each one plain folder name, the joined path under
    `root` (docs/file-formats.md, "Reading state and result files back"); else a one-line error naming
    `what`. Unlike `pathkit_sdk.cohort.path_inside`, an absolute name is refused: a shared file never
    chooses where pathkit writes."""
    for name in names:
        problem = folder_name_problem(name)
        if problem:
            raise PathkitError(f"{what}: {problem}; it names a folder under {root}")
    base = Path(os.path.normpath(Path(root).absolute()))
    joined = Path(os.path.normpath(base.joinpath(*names)))
    if base not in joined.parents:
        raise PathkitError(f"{what}: {'/'.join(names)!r} leaves {root}")
    return Path(root).joinpath(*names)


def warn_corrupt(what: str, path: str | Path, bad: list[str]) -> None:
    """The one warning for the records of a status file that are not JSON objects (treated as absent)."""
    warnings.warn(f"{what} {path}: the record(s) of {brief_list(bad, 5)} are not objects; treated as absent "
                  "(corrupt)", UserWarning, stacklevel=3)


def object_records(records: Any, path: str | Path, what: str) -> dict[str, dict[str, Any]]:
    """The per-slide records of a status file that are JSON objects; any other (a string, a
    list: a file edited by hand or damaged) is corrupt state, named in a warning and treated as
    absent, so that slide is done again rather than the whole command failing."""
    if not isinstance(records, Mapping):
        warnings.warn(f"{what} {path}: its records are {type(records).__name__}, not an object; "
                      "treated as absent (corrupt)", UserWarning, stacklevel=2)
        return {}
    bad = sorted(str(k) for k, v in records.items() if not isinstance(v, Mapping))
    if bad:
        warn_corrupt(what, path, bad)
    return {str(k): dict(v) for k, v in records.items() if isinstance(v, Mapping)}


# --------------------------------------------------------------------------- atomic writes


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    """The process's file-creation mask, read without changing it where the OS allows
    (/proc on Linux); elsewhere set and restored at once."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_BATCH = threading.local()


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _together(sync: Callable[[Path], None], paths: list[Path]) -> None:
    """`sync` every path at once (threads); the first error is raised."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(8, len(paths)))) as pool:
        list(pool.map(sync, paths))


@contextlib.contextmanager
def durable_batch() -> Iterator[None]:
    """Atomic writes (`atomic_path` and everything built on it) inside the block land together
    at its end: every temporary is fsynced, then all are renamed into place, then each folder
    is fsynced once. Each file is still whole or absent after a crash, and N files cost N + (folders)
    fsyncs instead of 2N. If the block raises, its temporaries are removed and no target changes.
    Nothing inside the block may read back a file it wrote there."""
    if getattr(_BATCH, "pending", None) is not None:  # nested: the outer batch lands everything
        yield
        return
    pending: list[tuple[Path, Path]] = []
    _BATCH.pending = pending
    try:
        yield
        # the fsyncs are issued together (threads): the file system commits them in one or two
        # journal transactions instead of one each (20 files: about 2.5 times faster, measured)
        _together(_fsync_file, [tmp for tmp, _target in pending])
        for tmp, target in pending:
            os.replace(tmp, target)
        _together(_fsync_dir, list(dict.fromkeys(target.parent for _tmp, target in pending)))
    except BaseException:
        for tmp, _target in pending:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise
    finally:
        _BATCH.pending = None


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `target`; on success it is fsynced and renamed over
    `target`, on any exception it is removed and `target` is left as it was."""
    target = Path(target)
    with _storage_errors(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    batch = getattr(_BATCH, "pending", None)
    try:
        yield tmp
        # mkstemp creates the file 0600; the result is an ordinary output file, so it gets the
        # mode any file the user creates gets (0644 under the usual umask 022)
        os.chmod(tmp, 0o666 & ~_umask())
        if batch is not None:  # inside `durable_batch`: synced and moved into place at its end
            batch.append((tmp, target))
            return
        _fsync_file(tmp)
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        _raise_storage_error(exc, target)
        raise


@contextlib.contextmanager
def atomic_open(target: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing that replaces `target` only when the block succeeds."""
    with atomic_path(target) as tmp, open(tmp, mode, encoding=None if "b" in mode else encoding) as fh:
        yield fh
        fh.flush()


def remove_stale_temporaries(target: str | Path) -> None:
    """Remove what writers of the file `target` killed mid-write left (`.<name>.*.tmp` beside it), by the
    rule of `remove_stale_folders`. Call only under the lock that guards `target`: a live writer's temporary
    looks like a dead one's."""
    remove_stale_folders(target)


# --------------------------------------------------------------------------- whole folders


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the
    OS or the filesystem cannot, and nothing was changed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _remove_tree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def remove_stale_folders(target: str | Path) -> list[Path]:
    """Clean up after writers of the result folder `target` that were killed (call only under the
    lock `replaced_folder` takes): a swap cut between its two steps left the old result aside
    (`.<name>.*.old`) with `target` missing, so it is put back; every `.<name>.*.tmp` (a result
    half written) and leftover `.old` is removed. Returns what was removed."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    stem = glob.escape(target.name)
    olds = sorted(target.parent.glob(f".{stem}.*.old"))
    if olds and not os.path.lexists(target):
        os.replace(olds.pop(), target)
    removed = []
    for leftover in [*target.parent.glob(f".{stem}.*.tmp"), *olds]:
        _remove_tree(leftover)
        removed.append(leftover)
    return removed


@contextlib.contextmanager
def replaced_folder(target: str | Path, *, lock_timeout: float = 600.0) -> Iterator[Path]:
    """Yield a new empty folder beside `target` in which to write a whole result; when the block
    succeeds it takes `target`'s place, else it is removed and `target` is left as it was. The folders
    are swapped in one step where the OS allows (Linux renameat2), else by two renames, a swap cut
    between them undone by the next writer; a lock beside `target` keeps two writers apart."""
    target = Path(target)
    with _storage_errors(target):
        target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.with_name(f".{target.name}.lock"), timeout=lock_timeout):
        remove_stale_folders(target)
        with _storage_errors(target):
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        try:
            yield tmp
            os.chmod(tmp, 0o777 & ~_umask())
            if not os.path.lexists(target):
                os.rename(tmp, target)
            elif _exchange(tmp, target):
                _remove_tree(tmp)  # now the old result
            else:
                old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
                os.replace(target, old)
                os.rename(tmp, target)
                _remove_tree(old)
            _fsync_dir(target.parent)
        except BaseException as exc:
            _remove_tree(tmp)
            _raise_storage_error(exc, target)
            raise


def atomic_write_bytes(target: str | Path, data: bytes) -> Path:
    return atomic_write_with(target, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(target: str | Path, text: str) -> Path:
    return atomic_write_with(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def json_default(value: Any) -> Any:
    """`json.dumps(default=...)` for predictions and records: arrays and tensors as lists
    (`.tolist()`), anything else as its text."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def atomic_write_json(target: str | Path, obj: Any, *, indent: int = 2) -> Path:
    return atomic_write_text(target, json.dumps(obj, indent=indent, sort_keys=True, default=str) + "\n")


def atomic_write_with(target: str | Path, writer: Callable[[Path], Any]) -> Path:
    """Call `writer(tmp_path)` (e.g. `df.write_parquet`) and move the result into place."""
    with atomic_path(target) as tmp:
        writer(tmp)
    return Path(target)


# --------------------------------------------------------------------------- hashes


def sha256_file(path: str | Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def content_hash(obj: Any, length: int = 16) -> str:
    """A short, stable key for a JSON-able value (parameters, configs, id lists)."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


def file_fingerprint(path: str | Path) -> dict[str, Any]:
    """Size, mtime and sha256 of a file, for provenance and cache keys."""
    p = Path(path)
    st = p.stat()
    return {"path": str(p), "size": st.st_size, "mtime": st.st_mtime, "sha256": sha256_file(p)}


# --------------------------------------------------------------------------- locks


class LockTimeout(PathkitError):
    """Another live process holds the lock."""


def _pid_alive(pid: int) -> bool:
    """`pid` is one `readers.pid_problem` accepted (1 to PID_MAX): a possible process id."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


@functools.cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """When process `pid` started, as an opaque token (None when it cannot be told): a pid alone does not
    name a process, the kernel reuses it. Linux: the boot id and the start time in clock ticks
    (`/proc/<pid>/stat` field 22), exact; elsewhere psutil's creation time."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
        # The command name (field 2) may hold spaces and parentheses: split after its last ")".
        ticks = raw[raw.rindex(b")") + 2 :].split()[19].decode()
        return f"{_boot_id()}:{ticks}"
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return f"created:{psutil.Process(pid).create_time():.3f}"
    except Exception:  # noqa: BLE001 - psutil missing, or no such process
        return None


def lock_owner_text(info: Mapping[str, Any] | None) -> str:
    """`pid 123 on node7 since 2025-01-02 03:04:05` for a lock's recorded owner."""
    if not info:
        return "an unknown process"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info.get("time", 0) or 0)))
    return f"pid {info.get('pid')} on {info.get('host')} since {since}"


# A held lock's file is touched every HEARTBEAT_SECONDS; one untouched for HEARTBEAT_GRACE seconds has lost its
# owner, whichever host it was on (docs/scale.md, "Locks and their timeouts").
HEARTBEAT_SECONDS = 30.0
HEARTBEAT_GRACE = 600.0


class _Heartbeat:
    """One daemon thread per process that keeps the files of the locks it holds fresh."""

    def __init__(self) -> None:
        self.paths: set[Path] = set()
        self.guard = threading.Lock()
        self.thread: threading.Thread | None = None
        self.pid = 0

    def add(self, path: Path) -> None:
        with self.guard:
            self.paths.add(path)
            if self.thread is None or not self.thread.is_alive() or self.pid != os.getpid():
                # (a forked child inherits the set but not the thread)
                self.pid = os.getpid()
                self.thread = threading.Thread(target=self._run, name="pathkit-lock-heartbeat", daemon=True)
                self.thread.start()

    def discard(self, path: Path) -> None:
        with self.guard:
            self.paths.discard(path)

    def _run(self) -> None:
        while True:
            time.sleep(HEARTBEAT_SECONDS)
            with self.guard:
                paths = list(self.paths)
            for path in paths:
                with contextlib.suppress(OSError):
                    os.utime(path)


_HEARTBEAT = _Heartbeat()


_NOT_JSON = "is not JSON (half written, or not a lock)"


def _owner_problem(info: Any) -> str | None:
    """Why a parsed lock file is not an owner record (None when it is)."""
    if not isinstance(info, dict):
        return f"holds {type(info).__name__} {str(info)[:40]!r}, not an owner record"
    from pathkit_core.readers import pid_problem

    problem = pid_problem(info.get("pid"))
    if problem:
        return problem
    for key in ("time", "heartbeat"):
        value = info.get(key, 0)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            return f"records {key} {value!r}, not a number"
    return None


def _read_owner(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A lock file's owner record, else None and why it is none (no reason: the file is gone)."""
    try:
        info = json.loads(path.read_text())
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot be read ({exc})"
    except (json.JSONDecodeError, RecursionError):
        return None, _NOT_JSON
    problem = _owner_problem(info)
    return (None, problem) if problem else (info, None)


class FileLock:
    """An exclusive lock file holding the owner's pid, process start time, host and time, touched every
    `HEARTBEAT_SECONDS` while held and broken as stale when its owner is gone (the rules, `stale_after`
    for locks without a heartbeat among them: docs/scale.md, "Locks and their timeouts")."""

    def __init__(self, path: str | Path, *, timeout: float = 0.0, poll: float = 0.1,
                 stale_after: float = 6 * 3600.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.poll = poll
        self.stale_after = stale_after
        self.held = False

    def owner(self) -> dict[str, Any] | None:
        """The recorded owner; None when the file is missing, half written or corrupt."""
        return _read_owner(self.path)[0]

    def owner_problem(self) -> str | None:
        """Why the lock file is not a lock pathkit wrote (None when it is, or is gone)."""
        return _read_owner(self.path)[1]

    def state(self) -> dict[str, Any] | None:
        """None when nobody holds the lock; else the owner record with `stale` (True when
        the next acquirer would break it) and `owner` (a readable description)."""
        if not self.path.exists():
            return None
        info, problem = _read_owner(self.path)
        owner = lock_owner_text(info) if problem is None else f"a corrupt lock file ({self.path} {problem})"
        return {**(info or {}), "stale": self._is_stale(info), "owner": owner,
                **({"corrupt": problem} if problem else {})}

    def _is_stale(self, info: dict[str, Any] | None) -> bool:
        if info is None:
            if self.owner_problem() not in (None, _NOT_JSON):
                return True  # JSON, but not an owner record pathkit ever writes: corrupt
            # Half-written lock: stale if old enough that its writer has surely finished.
            with contextlib.suppress(FileNotFoundError):
                return time.time() - self.path.stat().st_mtime > 5.0
            return False
        if info.get("host") == socket.gethostname():
            pid = info["pid"]  # checked by _owner_problem
            if not _pid_alive(pid):
                return True
            recorded = info.get("start")
            current = process_start(pid) if recorded else None
            if current is not None:
                return current != recorded  # the owner itself is alive, or its pid was reused
        if info.get("heartbeat"):
            try:
                return time.time() - self.path.stat().st_mtime > HEARTBEAT_GRACE
            except FileNotFoundError:
                return False
        return time.time() - float(info.get("time") or 0) > self.stale_after

    def _write_owner(self, fd: int) -> None:
        pid = os.getpid()
        payload = json.dumps({"pid": pid, "start": process_start(pid), "host": socket.gethostname(),
                              "time": time.time(), "heartbeat": HEARTBEAT_SECONDS})
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            # An empty lock file would block others until it looks stale: leave none.
            with contextlib.suppress(OSError):
                self.path.unlink()
            raise (storage_error(exc, self.path) or exc) from exc

    def acquire(self) -> FileLock:
        with _storage_errors(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                info = self.owner()
                if self._is_stale(info):
                    self._break(info)
                    continue
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{self.path} is locked by {lock_owner_text(info)}") from None
                time.sleep(self.poll)
                continue
            except OSError as exc:
                raise (storage_error(exc, self.path) or exc) from exc
            self._write_owner(fd)
            self.held = True
            _HEARTBEAT.add(self.path)
            return self

    def _break(self, judged: dict[str, Any] | None) -> None:
        """Remove the lock judged stale from its content `judged`, unless another process broke
        it meanwhile and took a fresh one (then that one is put back)."""
        grave = self.path.with_name(f"{self.path.name}.stale.{os.getpid()}")
        try:
            os.replace(self.path, grave)
        except FileNotFoundError:
            return
        if _read_owner(grave)[0] != judged:
            with contextlib.suppress(OSError):
                os.link(grave, self.path)  # fails if yet another lock is already there
        with contextlib.suppress(FileNotFoundError):
            grave.unlink()

    def clear_stale(self) -> bool:
        """Remove the lock file if its owner is gone (what `acquire` would break); True if removed.

        For a process that finds its work already done and so never takes the lock.
        """
        if not self.path.exists():
            return False
        info = self.owner()
        if not self._is_stale(info):
            return False
        self._break(info)
        return not self.path.exists()

    def release(self) -> None:
        if self.held:
            _HEARTBEAT.discard(self.path)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.held = False

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# --------------------------------------------------------------------------- provenance


def git_commit(path: str | Path | None = None) -> str | None:
    """The commit of the git checkout holding `path` (pathkit's own by default), if any."""
    where = Path(path) if path else Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def collect_provenance(*, config: Mapping[str, Any] | None = None, seeds: Mapping[str, int] | None = None,
                       inputs: Mapping[str, Any] | None = None,
                       plugin_versions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything needed to say how a result was produced."""
    from importlib import metadata

    import pathkit_core

    versions: dict[str, Any] = {"pathkit": pathkit_core.__version__, "python": sys.version.split()[0]}
    for dist in ("torch", "accelerate", "timm", "polars", "numpy", "openslide-python", "safetensors"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "command": sys.argv,
        "git_commit": git_commit(),
        "versions": versions,
        "plugins": dict(plugin_versions or {}),
        "seeds": dict(seeds or {}),
        "config": dict(config or {}),
        "inputs": dict(inputs or {}),
    }


# Names that left the workspace in pathkit 0.2 for their only callers, importable with a DeprecationWarning
# until 0.3 (docs/plugin-authors.md, "Moved names").
__getattr__ = moved_names(__name__, {**dict.fromkeys(("plain_name", "path_inside"), "pathkit_sdk.cohort"),
                                      **dict.fromkeys(("foreign_entries", "check_result_folder"),
                                                      "pathkit_interop.score_cli")})


__all__ = [
    "DEFAULT_WORKDIR", "StorageError", "free_space", "storage_error", "check_writable_dir", "check_regular_file",
    "object_records", "durable_batch", "atomic_path", "atomic_open", "remove_stale_temporaries", "remove_stale_folders",
    "replaced_folder", "atomic_write_bytes", "atomic_write_text", "json_default", "atomic_write_json",
    "atomic_write_with", "sha256_file", "canonical_json", "content_hash", "file_fingerprint", "LockTimeout",
    "process_start", "lock_owner_text", "HEARTBEAT_SECONDS", "HEARTBEAT_GRACE", "FileLock", "git_commit",
    "collect_provenance"
]
