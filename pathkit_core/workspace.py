"""Workspace machinery: atomic writes, lock files, content hashes and run provenance."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from pathkit_core.contracts import PathkitError

DEFAULT_WORKDIR = Path("pathkit-work")
_HASH_CHUNK = 1 << 20


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


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `target`; on success it is fsynced and renamed over
    `target`, on any exception it is removed and `target` is left as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        # mkstemp creates the file 0600; the result is an ordinary output file, so it gets the
        # mode any file the user creates gets (0644 under the usual umask 022)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def atomic_open(target: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing that replaces `target` only when the block succeeds."""
    binary = "b" in mode
    with atomic_path(target) as tmp, open(
        tmp, mode, encoding=None if binary else encoding
    ) as fh:
        yield fh
        fh.flush()


def atomic_write_bytes(target: str | Path, data: bytes) -> Path:
    with atomic_open(target, "wb") as fh:
        fh.write(data)
    return Path(target)


def atomic_write_text(target: str | Path, text: str) -> Path:
    with atomic_open(target, "w") as fh:
        fh.write(text)
    return Path(target)


def atomic_write_json(target: str | Path, obj: Any, *, indent: int = 2) -> Path:
    return atomic_write_text(target, json.dumps(obj, indent=indent, sort_keys=True, default=str) + "\n")


def atomic_write_with(target: str | Path, writer: Callable[[Path], Any]) -> Path:
    """Call `writer(tmp_path)` (e.g. `df.write_parquet`) and move the result into place."""
    with atomic_path(target) as tmp:
        writer(tmp)
    return Path(target)


# --------------------------------------------------------------------------- hashes


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class FileLock:
    """An exclusive lock file holding the owner's pid, host and time.

    A lock whose owner is a dead process on this host, or that is older than
    `stale_after` seconds (owners on other hosts cannot be probed), is broken.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        timeout: float = 0.0,
        poll: float = 0.1,
        stale_after: float = 6 * 3600.0,
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.poll = poll
        self.stale_after = stale_after
        self.held = False

    def owner(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError, OSError):
            return None

    def _is_stale(self, info: dict[str, Any] | None) -> bool:
        if info is None:
            # Half-written lock: stale if old enough that its writer has surely finished.
            with contextlib.suppress(FileNotFoundError):
                return time.time() - self.path.stat().st_mtime > 5.0
            return False
        if time.time() - float(info.get("time", 0)) > self.stale_after:
            return True
        if info.get("host") == socket.gethostname():
            return not _pid_alive(int(info.get("pid", -1)))
        return False

    def acquire(self) -> FileLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.timeout
        payload = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "time": time.time()})
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                info = self.owner()
                if self._is_stale(info):
                    # Rename first so two breakers cannot both delete a fresh lock.
                    grave = self.path.with_name(f"{self.path.name}.stale.{os.getpid()}")
                    with contextlib.suppress(FileNotFoundError):
                        os.replace(self.path, grave)
                        grave.unlink()
                    continue
                if time.monotonic() >= deadline:
                    who = (
                        f"pid {info.get('pid')} on {info.get('host')} since "
                        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(info.get('time', 0)))}"
                        if info
                        else "an unknown process"
                    )
                    raise LockTimeout(f"{self.path} is locked by {who}") from None
                time.sleep(self.poll)
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            self.held = True
            return self

    def release(self) -> None:
        if self.held:
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
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _module_version(name: str) -> str | None:
    mod = sys.modules.get(name)
    return getattr(mod, "__version__", None) if mod else None


def collect_provenance(
    *,
    config: Mapping[str, Any] | None = None,
    seeds: Mapping[str, int] | None = None,
    inputs: Mapping[str, Any] | None = None,
    plugin_versions: Mapping[str, str] | None = None,
) -> dict[str, Any]:
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
