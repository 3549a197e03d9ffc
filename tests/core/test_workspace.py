"""Workspace: atomic writes survive failures, locks exclude other processes, hashes are stable."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import time

import pytest

import pathkit_core
from pathkit_core.workspace import (
    FileLock,
    LockTimeout,
    atomic_open,
    atomic_write_json,
    atomic_write_text,
    collect_provenance,
    content_hash,
    sha256_file,
)


def test_exception_mid_write_leaves_previous_file_intact(tmp_path):
    target = tmp_path / "metrics.json"
    atomic_write_json(target, {"BLEU-4": 0.25})
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write('{"BLEU-4": 0.9')  # half a file
        raise RuntimeError("killed mid-write")
    assert json.loads(target.read_text()) == {"BLEU-4": 0.25}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"], "temporary file left behind"


def test_atomic_write_creates_parents_and_replaces(tmp_path):
    target = tmp_path / "a" / "b" / "x.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"


def test_content_hash_is_order_independent_and_sensitive():
    assert content_hash({"a": 1, "b": [1, 2]}) == content_hash({"b": [1, 2], "a": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})
    assert len(content_hash("x")) == 16


def test_sha256_file_matches_hashlib(tmp_path):
    import hashlib

    p = tmp_path / "blob"
    data = os.urandom(3 << 20)
    p.write_bytes(data)
    assert sha256_file(p) == hashlib.sha256(data).hexdigest()


def _hold_lock(path, ready, release):
    with FileLock(path):
        ready.set()
        release.wait(20)


def test_lock_contention_between_two_processes(tmp_path):
    path = tmp_path / "run.lock"
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold_lock, args=(path, ready, release))
    child.start()
    try:
        assert ready.wait(30)
        owner = FileLock(path).owner()
        assert owner["pid"] == child.pid and owner["host"] == socket.gethostname()
        with pytest.raises(LockTimeout, match=f"pid {child.pid}"):
            FileLock(path, timeout=0.3).acquire()
    finally:
        release.set()
        child.join(30)
    with FileLock(path, timeout=1):
        assert path.exists()
    assert not path.exists()


def test_stale_lock_of_a_dead_process_is_broken(tmp_path):
    path = tmp_path / "stale.lock"
    proc = mp.get_context("spawn").Process(target=time.sleep, args=(0,))
    proc.start()
    proc.join()
    path.write_text(json.dumps({"pid": proc.pid, "host": socket.gethostname(), "time": time.time()}))
    with FileLock(path, timeout=0):
        assert FileLock(path).owner()["pid"] == os.getpid()


def test_old_lock_of_another_host_is_broken_only_after_stale_after(tmp_path):
    path = tmp_path / "remote.lock"
    path.write_text(json.dumps({"pid": 1, "host": "other-node", "time": time.time()}))
    with pytest.raises(LockTimeout, match="other-node"):
        FileLock(path, timeout=0).acquire()
    path.write_text(json.dumps({"pid": 1, "host": "other-node", "time": time.time() - 100}))
    with FileLock(path, timeout=0, stale_after=50):
        pass


def test_provenance_records_versions_seeds_config_inputs():
    prov = collect_provenance(config={"lr": 1e-4}, seeds={"seed": 3}, inputs={"split": "abc"},
                              plugin_versions={"pathkit-metrics": "0.1.0"})
    assert prov["versions"]["pathkit"] == pathkit_core.__version__
    assert prov["versions"]["torch"]
    assert prov["seeds"] == {"seed": 3} and prov["config"] == {"lr": 1e-4}
    assert prov["inputs"] == {"split": "abc"} and prov["plugins"] == {"pathkit-metrics": "0.1.0"}
    assert "git_commit" in prov


def test_atomic_writes_follow_the_umask(tmp_path):
    previous = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o640
        os.umask(0o022)
        atomic_write_json(tmp_path / "b.json", {})
        assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(previous)


def test_a_durable_batch_lands_every_file_at_its_end_or_none(tmp_path):
    from pathkit_core.workspace import atomic_write_bytes, durable_batch

    kept = tmp_path / "a" / "kept.json"
    atomic_write_json(kept, {"v": 1})
    with durable_batch():
        atomic_write_json(kept, {"v": 2})
        atomic_write_text(tmp_path / "b" / "new.txt", "new")
        with durable_batch():  # nested: lands with the outer one
            atomic_write_bytes(tmp_path / "b" / "inner.bin", b"\x00\x01")
        assert json.loads(kept.read_text()) == {"v": 1}, "a batched write landed before the batch ended"
        assert not (tmp_path / "b" / "new.txt").exists()
    assert json.loads(kept.read_text()) == {"v": 2}
    assert (tmp_path / "b" / "new.txt").read_text() == "new"
    assert (tmp_path / "b" / "inner.bin").read_bytes() == b"\x00\x01"
    assert oct((tmp_path / "b" / "new.txt").stat().st_mode & 0o777) == oct(0o666 & ~_current_umask())

    with pytest.raises(RuntimeError), durable_batch():
        atomic_write_json(kept, {"v": 3})
        atomic_write_text(tmp_path / "b" / "never.txt", "x")
        raise RuntimeError("killed before the batch ended")
    assert json.loads(kept.read_text()) == {"v": 2}
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["kept.json"], "temporary left behind"
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["inner.bin", "new.txt"]


def test_a_durable_batch_syncs_every_file_before_any_rename_and_a_failed_sync_changes_nothing(tmp_path, monkeypatch):
    """The fsyncs are issued together (threads), but all of them end before the first rename;
    one failing leaves every target as it was and no temporary behind."""
    import pathkit_core.workspace as ws

    events, real_fsync, real_replace = [], os.fsync, os.replace
    monkeypatch.setattr(ws.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(ws.os, "replace", lambda a, b: (events.append("rename"), real_replace(a, b))[1])
    with ws.durable_batch():
        for i in range(6):
            atomic_write_text(tmp_path / f"f{i}.txt", str(i))
    renames = [i for i, e in enumerate(events) if e == "rename"]
    assert len(renames) == 6 and events[:renames[0]].count("fsync") == 6
    assert [(tmp_path / f"f{i}.txt").read_text() for i in range(6)] == [str(i) for i in range(6)]

    def failing(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(ws.os, "fsync", failing)
    with pytest.raises(OSError), ws.durable_batch():
        for i in range(6):
            atomic_write_text(tmp_path / f"f{i}.txt", "changed")
    assert [(tmp_path / f"f{i}.txt").read_text() for i in range(6)] == [str(i) for i in range(6)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"f{i}.txt" for i in range(6)]


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
