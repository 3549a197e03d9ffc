"""`pathkit status`: done / failed (why) / pending / locked (by whom) per stage and store."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
import torch

from pathkit_core.features import store
from pathkit_core.workspace import process_start
from tests.core import test_workspace_hardening

holder = test_workspace_hardening.live_process  # a live process other than this one


def _lock(path, pid, start):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": pid, "start": start, "host": socket.gethostname(), "time": time.time()}))


def _feature_store(out, holder):
    coords = torch.arange(20).reshape(10, 2)
    store.write_features(store.feature_path(out, "enc", "a"), torch.randn(10, 4), coords, {"status": "ok"})
    store.write_features(store.feature_path(out, "enc", "b"), torch.randn(10, 4), coords,
                         {"status": "failed", "failure_reason": "NaN in 3 tiles"})
    store.record_status(out, "enc", "c", "failed", "reading tiles failed: truncated JPEG")
    store.record_planned(out, "enc", {s: {"manifest": f"/m/{s}.parquet"} for s in "abcdef"})
    enc = store.encoder_dir(out, "enc")
    _lock(enc / ".e.safetensors.lock", holder.pid, process_start(holder.pid))  # a live owner
    _lock(enc / ".f.safetensors.lock", 2**22 + 5, "gone")  # its owner died


def _tile_store(folder):
    folder.mkdir(parents=True)
    (folder / "s1.parquet").write_bytes(b"")
    (folder / "s2.parquet").write_bytes(b"")  # failed once, tiled since
    slides = {"s2": {"status": "failed", "reason": "old"}, "s3": {"status": "failed", "reason": "no-mpp"}}
    (folder / "tiling_status.json").write_text(json.dumps(
        {"format": "pathkit.tiling_status", "slides": slides, "planned": {s: f"/s/{s}.svs" for s in
                                                                         ("s1", "s2", "s3", "s4")}}))


def test_a_feature_store_shows_done_failed_pending_and_locked(tmp_path, holder, cli):
    out = tmp_path / "features"
    _feature_store(out, holder)
    result = cli("status", out / "enc", "--json", "--verify")
    assert result.exit_code == 0, result.output
    (s,) = json.loads(result.stdout)["stores"]
    assert (s["stage"], s["name"]) == ("extract", "enc")
    assert s["counts"] == {"done": 1, "failed": 2, "pending": 2, "locked": 1}
    assert s["failed"] == {"b": "NaN in 3 tiles", "c": "reading tiles failed: truncated JPEG"}
    assert s["pending"] == ["d", "f"] and list(s["stale_locks"]) == ["f"]
    assert s["locked"]["e"].startswith(f"pid {holder.pid} on {socket.gethostname()} since ")


def test_without_verify_status_reads_the_records_and_opens_no_feature_file(tmp_path, holder, cli, monkeypatch):
    out = tmp_path / "features"
    _feature_store(out, holder)

    def opened(path, *args, **kwargs):
        raise AssertionError(f"{path} was opened")

    monkeypatch.setattr(store, "read_feature_meta", opened)
    result = cli("status", out / "enc", "--json")
    assert result.exit_code == 0, result.output
    (s,) = json.loads(result.stdout)["stores"]
    # b's header says failed QC, but only --verify reads headers: its record is what counts
    assert s["counts"] == {"done": 2, "failed": 1, "pending": 2, "locked": 1}
    assert s["failed"] == {"c": "reading tiles failed: truncated JPEG"}
    with pytest.raises(AssertionError, match="was opened"):  # the check itself can fail
        cli("status", out / "enc", "--json", "--verify")


def test_a_workspace_lists_tile_stores_feature_stores_and_runs(tmp_path, holder, cli):
    ws = tmp_path / "ws"
    _tile_store(ws / "tiles" / "256px_0.5mpp")
    _feature_store(ws / "features", holder)
    store.write_features(store.feature_path(ws / "features-1a2b3c4d", "enc", "a"), torch.randn(10, 4),
                         torch.arange(20).reshape(10, 2), {"status": "ok"})  # a run with its own tiling
    run = ws / "runs" / "reg2025" / "enc" / "bigen" / "abc123"
    run.mkdir(parents=True)
    (run / "stages.json").write_text(json.dumps({"features": {"key": "k"}, "fit": {"key": "k"}}))
    _lock(run / "run.lock", holder.pid, process_start(holder.pid))
    result = cli("status", ws, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    tiles, features, other = report["stores"]
    assert (other["name"], other["counts"]["done"]) == ("enc (features-1a2b3c4d)", 1)
    assert (tiles["stage"], tiles["name"]) == ("tile", "256px_0.5mpp")
    assert tiles["counts"] == {"done": 2, "failed": 1, "pending": 1, "locked": 0}
    assert tiles["failed"] == {"s3": "no-mpp"} and tiles["pending"] == ["s4"]
    assert features["counts"]["locked"] == 1
    (cell,) = report["runs"]
    assert cell["path"] == "reg2025/enc/bigen/abc123" and cell["stages"] == ["features", "fit"]
    assert cell["locked"].startswith(f"pid {holder.pid}")
    table = cli("status", ws, "--verify")  # b's failed-QC header is read only with --verify
    assert table.exit_code == 0
    for text in ("256px_0.5mpp", "no-mpp", "NaN in 3 tiles", "stale lock", "reg2025/enc/bigen/abc123"):
        assert text in table.stdout, text


def test_status_of_an_extract_out_folder_and_of_nothing(tmp_path, holder, cli):
    out = tmp_path / "out"
    _feature_store(out, holder)
    _tile_store(out / "tiles" / "128px_1mpp")
    stages = [s["stage"] for s in json.loads(cli("status", out, "--json").stdout)["stores"]]
    assert stages == ["tile", "extract"]
    (tmp_path / "empty").mkdir()
    result = cli("status", tmp_path / "empty")
    assert result.exit_code == 2 and "no tile store, feature store or run found" in result.stderr
    assert cli("status", tmp_path / "absent").exit_code == 2


def test_status_does_not_import_torch(tmp_path, holder):
    out = tmp_path / "features"
    _feature_store(out, holder)
    code = ("import sys; from pathkit_core.status import collect; collect(sys.argv[1]); "
            "print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"
