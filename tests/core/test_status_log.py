"""Append-only status records (pathkit_core.status_log): one line per event, folded on read,
files of pathkit 0.1 still read, compaction, corrupt lines named and skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pathkit_core.features import store
from pathkit_core.status_log import append_events, compact, read_log
from pathkit_core.wsi.tiling import TileResult, _update_status, read_tiling_log, read_tiling_status

# Written by pathkit v0.1.0's own code (store.record_planned/record_status, tiling._update_status).
V010 = Path(__file__).parent / "data" / "status_v0.1.0"


def _copy(name: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(V010 / name, folder / name))


def test_a_v010_extraction_status_reads_and_is_rewritten_as_lines_on_the_first_append(tmp_path):
    _copy(store.STATUS_FILE, store.encoder_dir(tmp_path, "enc"))
    assert store.read_status(tmp_path, "enc")["s2"]["reason"] == "NaN in 3 tiles"
    assert sorted(store.read_planned(tmp_path, "enc")) == ["s1", "s2", "s3", "s4"]
    store.record_status(tmp_path, "enc", "s3", "ok", n_tiles=7)
    lines = store.status_path(tmp_path, "enc").read_text().splitlines()
    assert json.loads(lines[0]) == {"encoder": "enc", "format": store.STATUS_FORMAT}
    assert len(lines) == 3 and json.loads(lines[2])["slide"] == "s3"  # header, snapshot, event
    status = store.read_status(tmp_path, "enc")
    assert {s: r["status"] for s, r in status.items()} == {"s1": "ok", "s2": "failed", "s3": "ok"}
    assert status["s1"]["n_tiles"] == 12


def test_a_v010_tiling_status_reads(tmp_path):
    _copy("tiling_status.json", tmp_path)
    assert read_tiling_status(tmp_path)["s2"]["code"] == "no-mpp"
    assert read_tiling_log(tmp_path).planned == {"s1": "/s/s1.svs", "s2": "/s/s2.svs", "s3": "/s/s3.svs"}
    _update_status(tmp_path, [TileResult("s2", "/s/s2.svs", "ok", "")], "p2")
    assert read_tiling_status(tmp_path)["s2"]["status"] == "ok"
    assert read_tiling_status(tmp_path)["s1"]["params_hash"] == "p1"


def test_each_record_is_one_appended_line_and_the_latest_wins(tmp_path):
    path, lock = tmp_path / "s.json", tmp_path / ".s.lock"
    append_events(path, lock, {"format": "f"}, [{"slide": "a", "record": {"status": "failed"}}])
    size = path.stat().st_size
    append_events(path, lock, {"format": "f"}, [{"slide": "a", "record": {"status": "ok"}},
                                                 {"planned": {"b": 1}}])
    text = path.read_text()
    assert text.count("\n") == 4 and path.stat().st_size > size
    log = read_log(path, "status")
    assert log.slides == {"a": {"status": "ok"}} and log.planned == {"b": 1} and log.header == {"format": "f"}
    assert not lock.exists()


def test_a_long_log_is_compacted_to_one_snapshot_and_reads_the_same(tmp_path):
    path, lock = tmp_path / "s.json", tmp_path / ".s.lock"
    for start in range(0, 400, 100):  # 400 lines in 4 appends (one write each)
        append_events(path, lock, {"format": "f"}, [{"slide": f"s{i % 3}", "record": {"n": i}}
                                                     for i in range(start, start + 100)])
    before = read_log(path, "status")
    assert before.lines == 401
    after = compact(path, lock, {"format": "f"}, "status")
    assert after.slides == before.slides == {"s0": {"n": 399}, "s1": {"n": 397}, "s2": {"n": 398}}
    assert len(path.read_text().splitlines()) == 2 and read_log(path, "status").slides == before.slides
    append_events(path, lock, {"format": "f"}, [{"slide": "s0", "record": {"n": 400}}])
    assert read_log(path, "status").slides["s0"] == {"n": 400}


def test_a_torn_or_corrupt_line_is_named_and_only_its_record_is_lost(tmp_path):
    path, lock = tmp_path / "s.json", tmp_path / ".s.lock"
    append_events(path, lock, {"format": "f"}, [{"slide": "a", "record": {"status": "ok"}}])
    with open(path, "a") as fh:
        fh.write('{"slide": "b", "rec\n')  # a writer that died mid-line (a full disk)
        fh.write('{"slide": "c", "record": "ok"}\n')  # not an object
    append_events(path, lock, {"format": "f"}, [{"slide": "d", "record": {"status": "ok"}}])
    with pytest.warns(UserWarning, match=r"the record\(s\) of line 3, c are not objects; treated as absent"):
        log = read_log(path, "status")
    assert sorted(log.slides) == ["a", "d"]


def test_nothing_but_garbage_is_one_line_error_naming_the_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("not json\nat all\n")
    with pytest.raises(Exception, match=r"s\.json: unreadable status \(no line of it is JSON\)"):
        read_log(path, "status")
