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
    process_start,
    regular_file_problem,
    storage_error,
)
from pathkit_sdk.cohort import path_inside, plain_name


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


# --------------------------------------------------------------------------- round 3 (issue 28)


@pytest.mark.parametrize("content", ['{"pid": "abc"}', "[1, 2, 3]", '"a string"', '{"pid": 5, "time": "noon"}'])
def test_a_lock_file_of_the_wrong_shape_is_corrupt_state_named_and_replaced(tmp_path, content):
    path = tmp_path / "slide.lock"
    path.write_text(content)
    lock = FileLock(path)
    state = lock.state()
    assert state["stale"] is True and "corrupt lock file" in state["owner"] and state["corrupt"]
    with FileLock(path, timeout=0):  # taken over at once: no pathkit process writes such a lock
        assert FileLock(path).owner()["pid"] == os.getpid()
    assert not path.exists()


def test_a_half_written_lock_is_not_taken_while_it_is_fresh(tmp_path):
    path = tmp_path / "slide.lock"
    path.write_text('{"pid": 12')  # a writer between its two writes
    with pytest.raises(LockTimeout):
        FileLock(path, timeout=0).acquire()
    old = time.time() - 60
    os.utime(path, (old, old))
    with FileLock(path, timeout=0):
        pass


def test_extract_and_status_take_over_a_corrupt_lock(tmp_path, cli):
    from pathkit_core.features import store

    folder = store.encoder_dir(tmp_path, "enc")
    folder.mkdir(parents=True)
    store.write_features(store.feature_path(tmp_path, "enc", "s1"), [[1.0, 2.0]], [[0, 0]], {"status": "ok"})
    (folder / ".s1.safetensors.lock").write_text('{"pid": "abc"}')
    result = cli("status", tmp_path, "--json")
    assert result.exit_code == 0, result.output
    (features,) = json.loads(result.stdout)["stores"]
    assert features["counts"]["done"] == 1 and "corrupt lock file" in features["stale_locks"]["s1"]


def test_a_status_record_that_is_not_an_object_is_named_and_treated_as_absent(tmp_path, cli):
    from pathkit_core.features import store

    folder = store.encoder_dir(tmp_path, "enc")
    folder.mkdir(parents=True)
    store.write_features(store.feature_path(tmp_path, "enc", "s1"), [[1.0, 2.0]], [[0, 0]], {"status": "ok"})
    (folder / store.STATUS_FILE).write_text(json.dumps({"format": store.STATUS_FORMAT, "slides": {
        "s1": "ok", "s2": [1, 2]}, "planned": {}}))
    with pytest.warns(UserWarning, match=r"extraction status .*: the record\(s\) of s1, s2 are not objects; "
                                         r"treated as absent \(corrupt\)"):
        result = cli("status", tmp_path, "--json")
    assert result.exit_code == 0, result.output
    (features,) = json.loads(result.stdout)["stores"]
    assert features["counts"] == {"done": 1, "failed": 0, "pending": 0, "locked": 0}


def test_check_regular_file_refuses_pipes_and_folders_with_the_reason(tmp_path):
    from pathkit_core.workspace import check_regular_file

    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(PathkitError, match=r"--config .*pipe is not a regular file \(a named pipe\); give a regular"):
        check_regular_file(tmp_path / "pipe", "--config")
    with pytest.raises(PathkitError, match="is a directory, not a file"):
        check_regular_file(tmp_path, "--config")
    (tmp_path / "ok.toml").write_text("")
    assert check_regular_file(tmp_path / "ok.toml", "--config") == tmp_path / "ok.toml"


def test_long_error_lists_keep_the_first_few_and_a_count():
    from pathkit_core.contracts import brief_list, repeats_text

    assert brief_list(list("abc"), 2) == "a, b, ... (1 more)"
    places = {"S1": [f"row {i}" for i in range(2, 1_000_002)], "S2": ["row 1", "row 9"]}
    text = repeats_text(places)
    assert text == "S1 (row 2, row 3, row 4, row 5, row 6, ... (999995 more)); S2 (row 1, row 9)"


# whole result folders


def _folder(path, files):
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)


def _contents(path):
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


@pytest.mark.parametrize("exchange", [True, False])
def test_a_result_folder_is_replaced_as_a_whole(tmp_path, monkeypatch, exchange):
    import pathkit_core.workspace as ws

    if not exchange:  # a filesystem without renameat2 RENAME_EXCHANGE: two renames
        monkeypatch.setattr(ws, "_exchange", lambda a, b: False)
    target = tmp_path / "result"
    _folder(target, {"metrics.json": "old", "per_case.parquet": "old", "stale.txt": "gone after"})
    with ws.replaced_folder(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".result.") and tmp != target
        (tmp / "metrics.json").write_text("new")
        assert _contents(target)["metrics.json"] == "old"  # untouched while the new one is written
    assert _contents(target) == {"metrics.json": "new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]  # no temporary, no lock
    assert (target.stat().st_mode & 0o777) == 0o777 & ~ws._umask()


def test_a_result_folder_whose_writer_fails_is_left_as_it_was(tmp_path):
    from pathkit_core.workspace import replaced_folder

    target = tmp_path / "result"
    _folder(target, {"metrics.json": "old", "per_case.parquet": "old"})
    with pytest.raises(RuntimeError, match="writer died"), replaced_folder(target) as tmp:
        (tmp / "metrics.json").write_text("new")
        raise RuntimeError("writer died")
    assert _contents(target) == {"metrics.json": "old", "per_case.parquet": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]


def test_what_a_killed_writer_left_is_cleaned_and_a_cut_swap_undone(tmp_path):
    from pathkit_core.workspace import remove_stale_folders, replaced_folder

    target = tmp_path / "result"
    # killed while writing: a half-written new folder beside the old one
    _folder(target, {"metrics.json": "old"})
    _folder(tmp_path / ".result.k1ll3d.tmp", {"metrics.json": "half"})
    # killed between the two renames of a swap: the old result aside, none in place
    other = tmp_path / "other"
    _folder(tmp_path / ".other.abc.old", {"metrics.json": "other old"})
    remove_stale_folders(other)
    assert _contents(other) == {"metrics.json": "other old"}
    with replaced_folder(target) as tmp:
        (tmp / "metrics.json").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "result"]
    assert _contents(target) == {"metrics.json": "new"}


def test_a_lock_of_another_host_recording_no_time_is_stale_not_a_type_error(tmp_path):
    # "time": null passes the owner-record check; it reads as the epoch, so the lock is long stale
    path = tmp_path / ".s.lock"
    path.write_text(json.dumps({"pid": 12345, "host": "some-other-host", "time": None}))
    state = FileLock(path).state()
    assert state["stale"] and "corrupt" not in state
