"""The one reader of state and result files: every kind of damage is one error naming the file;
lock files recording a pid no process can have are corrupt, not an OverflowError."""

from __future__ import annotations

import json
import socket
import time

import polars as pl
import pytest

from pathkit_core.readers import DamagedFile, pid_problem, read_json_file, read_jsonl_file, read_parquet_file
from pathkit_core.workspace import FileLock, confined


def _parquet(path):
    pl.DataFrame({"id": ["a", "b"], "x": [1.0, 2.0]}).write_parquet(path)
    return path


@pytest.mark.parametrize("damage, problem", [
    (lambda p: p.write_bytes(b"\xff\xfe{}"), "is not UTF-8"),
    (lambda p: p.write_text('{"a": '), "is not a readable JSON object"),
    (lambda p: p.write_text("[1, 2]"), "holds a list"),
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: None, "is missing"),
])
def test_json_records(tmp_path, damage, problem):
    path = tmp_path / "stages.json"
    damage(path)
    with pytest.raises(DamagedFile, match=problem) as info:
        read_json_file(path, "stage record")
    assert str(info.value).startswith(str(path))


@pytest.mark.parametrize("text, problem", [
    (b'{"id": 1}\n{"id": \n', "line 2 is not JSON"), (b'{"id": 1}\n[1]\n', "line 2 holds a list"),
    (b'{"id": "\xff"}\n', "is not UTF-8"),
])
def test_json_lines(tmp_path, text, problem):
    path = tmp_path / "test_cases.jsonl"
    path.write_bytes(text)
    with pytest.raises(DamagedFile, match=problem):
        read_jsonl_file(path)


@pytest.mark.parametrize("damage, problem", [
    (lambda p: p.write_bytes(_parquet(p).read_bytes()[:-20]), "not a readable parquet"),
    (lambda p: p.write_bytes(b""), "not a readable parquet"),
    (lambda p: p.mkdir(), "is a folder"),
])
def test_parquet_tables(tmp_path, damage, problem):
    path = tmp_path / "per_case.parquet"
    damage(path)
    with pytest.raises(DamagedFile, match=problem):
        read_parquet_file(path, "per-case table")
    good = _parquet(tmp_path / "good.parquet")
    assert read_parquet_file(good, columns=["id"]).height == 2
    with pytest.raises(DamagedFile, match="lacks the column"):
        read_parquet_file(good, columns=["target"])


@pytest.mark.parametrize("pid", [99999999999999999999, -4, 0, 2**31, "12", True, None])
def test_a_lock_recording_an_impossible_pid_is_corrupt_not_an_overflow(tmp_path, pid):
    assert pid_problem(pid) is not None
    path = tmp_path / ".s.lock"
    path.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "time": time.time()}))
    state = FileLock(path).state()
    assert state["stale"] and "corrupt" in state
    with FileLock(path, timeout=0):  # the next acquirer breaks it
        pass


def test_status_of_a_damaged_stage_record_is_one_line(tmp_path, cli):
    run = tmp_path / "ws" / "runs" / "d" / "e" / "g" / "k"
    run.mkdir(parents=True)
    (run / "stages.json").write_bytes(b"\xff\xfe")
    result = cli("status", tmp_path / "ws", "--json")
    assert result.exit_code == 0, result.output
    (cell,) = json.loads(result.stdout)["runs"]
    assert "unreadable stage record" in cell["locked"] and "not UTF-8" in cell["locked"]
    alone = cli("status", run, "--json")
    assert json.loads(alone.stdout)["kind"] == "run"


@pytest.mark.parametrize("names", [("..",), ("../x",), ("/etc",), ("a/b",), ("a\x00",), ("x" * 256,), ("ok", "..")])
def test_confined_refuses_every_way_out(tmp_path, names):
    with pytest.raises(Exception, match="plain folder name|at most 255|leaves"):
        confined(tmp_path / "suites", *names, what="suite name")
    assert confined(tmp_path, "suites", "a.b", what="x") == tmp_path / "suites" / "a.b"
