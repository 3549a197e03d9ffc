"""Locks that survive pid reuse, storage errors as one line, and path confinement helpers."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import (
    FileLock,
    LockTimeout,
    StorageError,
    atomic_write_text,
    path_inside,
    plain_name,
    process_start,
    regular_file_problem,
    storage_error,
)


@pytest.fixture
def live_process():
    """A live process that is not this one (its pid stands for one the kernel reused)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def _lock_file(path, pid, start):
    path.write_text(json.dumps({"pid": pid, "start": start, "host": socket.gethostname(), "time": time.time()}))


def test_a_lock_whose_pid_was_reused_by_another_live_process_is_stale(tmp_path, live_process):
    path = tmp_path / "x.lock"
    # The lock's owner died; the kernel gave its pid to `live_process`, which started later.
    _lock_file(path, live_process.pid, "an-earlier-boot:12345")
    started = time.monotonic()
    with FileLock(path, timeout=5):
        assert FileLock(path).owner()["pid"] == os.getpid()
    assert time.monotonic() - started < 2  # broken at once, not after 6 hours


def test_a_lock_of_the_live_owner_itself_still_blocks(tmp_path, live_process):
    path = tmp_path / "x.lock"
    _lock_file(path, live_process.pid, process_start(live_process.pid))
    with pytest.raises(LockTimeout, match=f"pid {live_process.pid}"):
        FileLock(path, timeout=0.2).acquire()
    assert FileLock(path).state()["stale"] is False


def test_a_lock_records_its_owner_start_time(tmp_path):
    path = tmp_path / "y.lock"
    with FileLock(path):
        owner = FileLock(path).owner()
        assert owner["start"] == process_start(os.getpid()) and owner["start"]
        state = FileLock(path).state()
        assert state["stale"] is False and state["owner"].startswith(f"pid {os.getpid()} on ")
    assert FileLock(path).state() is None


def test_process_start_differs_between_processes_and_is_stable(live_process):
    mine = process_start(os.getpid())
    assert mine == process_start(os.getpid())
    assert process_start(live_process.pid) not in (None, mine)
    assert process_start(2**22 + 11) is None  # no such process


def test_a_lock_left_empty_by_a_full_disk_is_removed(tmp_path, monkeypatch):
    path = tmp_path / "z.lock"
    real = os.fdopen

    def full(fd, *args, **kwargs):
        fh = real(fd, *args, **kwargs)

        class Full:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                fh.close()

            def write(self, _):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        return Full()

    monkeypatch.setattr(os, "fdopen", full)
    with pytest.raises(StorageError, match="no space left on the device"):
        FileLock(path).acquire()
    assert not path.exists()


def test_storage_errors_name_the_path_and_the_free_space(tmp_path):
    full = storage_error(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "f.json")
    assert str(full).startswith(f"{tmp_path / 'f.json'}: no space left on the device (") and " free)" in str(full)
    assert storage_error(RuntimeError("I/O error: No space left on device (os error 28)"), tmp_path) is not None
    assert "read-only" in str(storage_error(OSError(errno.EROFS, "Read-only file system"), tmp_path))
    assert storage_error(OSError(errno.EACCES, "denied"), tmp_path, permission=False) is None
    assert storage_error(ValueError("no"), tmp_path) is None


def test_an_atomic_write_on_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "t.txt"
    atomic_write_text(target, "old")

    def replace(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(StorageError, match="t.txt: no space left"):
        atomic_write_text(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_regular_file_problem_tells_pipes_loops_folders_and_missing_files(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    (tmp_path / "f").write_text("x")
    assert regular_file_problem(fifo) == ("not-a-file", "is not a regular file (a named pipe)")
    assert regular_file_problem(loop)[0] == "symlink-loop"
    assert regular_file_problem(tmp_path)[0] == "directory"
    assert regular_file_problem(tmp_path / "none")[0] == "not-found"
    assert regular_file_problem(tmp_path / "f") is None


def test_paths_and_names_stay_inside_their_root(tmp_path):
    assert path_inside(tmp_path, "a/../b.pt", "x") == tmp_path / "a/../b.pt"
    assert path_inside(tmp_path, "/abs/given.pt", "x") == type(tmp_path)("/abs/given.pt")
    for bad in ("../b.pt", "a/../../b.pt"):
        with pytest.raises(PathkitError, match="points outside"):
            path_inside(tmp_path, bad, "feature path")
    for bad in ("..", ".", "a/b", "a\\b", ""):
        with pytest.raises(PathkitError, match="case id: case id .* must be a plain name|not a non-empty"):
            plain_name(bad, "case id")
    assert plain_name("PIT_01_00002_01", "case id") == "PIT_01_00002_01"


def test_a_lock_of_another_host_is_stale_once_its_heartbeat_stops(tmp_path):
    import pathkit_core.workspace as ws

    path = tmp_path / "remote.lock"
    # a requeued job on another node must not wait 6 hours for the locks of its killed run
    path.write_text(json.dumps({"pid": 1, "host": "other-node", "time": time.time() - 60, "heartbeat": 30.0}))
    with pytest.raises(LockTimeout, match="other-node"):
        FileLock(path, timeout=0).acquire()  # recently touched: its owner is working
    old = time.time() - ws.HEARTBEAT_GRACE - 5
    os.utime(path, (old, old))
    with FileLock(path, timeout=0):
        assert FileLock(path).owner()["pid"] == os.getpid()


def test_a_long_held_lock_of_a_live_owner_elsewhere_is_not_broken_by_age(tmp_path):
    path = tmp_path / "remote.lock"
    path.write_text(json.dumps({"pid": 1, "host": "other-node", "time": time.time() - 7 * 3600,
                                "heartbeat": 30.0}))  # days of extraction, still touched
    with pytest.raises(LockTimeout):
        FileLock(path, timeout=0).acquire()


def test_held_locks_are_touched_by_the_heartbeat(tmp_path, monkeypatch):
    import pathkit_core.workspace as ws

    monkeypatch.setattr(ws, "HEARTBEAT_SECONDS", 0.05)
    monkeypatch.setattr(ws, "_HEARTBEAT", ws._Heartbeat())
    path = tmp_path / "held.lock"
    with FileLock(path):
        old = time.time() - 1000
        os.utime(path, (old, old))
        deadline = time.time() + 5
        while path.stat().st_mtime < old + 500 and time.time() < deadline:
            time.sleep(0.02)
        assert path.stat().st_mtime > old + 500
    assert path not in ws._HEARTBEAT.paths
