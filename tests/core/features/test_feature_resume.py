"""Resuming extraction trusts nothing unverified: checksum and QC are checked again on resume."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest
import torch

from pathkit_core.features import store
from pathkit_core.features.extract import extract_features
from tests.core.features.conftest import PixelStatsEncoder


def _by_id(results):
    return {r.slide_id: r for r in results}


def _extract(tiles, out):
    return _by_id(extract_features(PixelStatsEncoder(), tiles, out, workers=0, progress=False))


def _flip_a_feature_byte(path):
    """Flip one bit in the features tensor (not the header): the file still parses."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as fh:
        n = len(fh.get_tensor("features").view(torch.uint8).reshape(-1))
    data = bytearray(path.read_bytes())
    header = int.from_bytes(data[:8], "little")
    data[8 + header + n // 2] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_flipped_byte_is_found_on_resume_and_the_slide_re_extracted(tiled_slides, tmp_path):
    first = _extract(tiled_slides["tiles"], tmp_path)
    path = first["pink-01"].path
    good = store.read_features(path).features.clone()
    _flip_a_feature_byte(path)
    assert store.read_feature_meta(path)["status"] == "ok"  # the header alone looks fine
    with pytest.warns(UserWarning, match="fails its checksum.*re-extracting it"):
        again = _extract(tiled_slides["tiles"], tmp_path)
    assert again["pink-01"].status == "ok" and again["dark-02"].status == "skipped"
    assert torch.equal(store.read_features(path).features, good)


def test_a_nan_file_with_a_valid_checksum_is_found_by_qc_on_resume(tiled_slides, tmp_path):
    first = _extract(tiled_slides["tiles"], tmp_path)
    path = first["dark-02"].path
    ff = store.read_features(path)
    good = ff.features.clone()
    # Rewritten through the store: a valid checksum over NaNs, the metadata still saying "ok".
    store.write_features(path, torch.full_like(ff.features, float("nan")), ff.coords,
                         {k: v for k, v in ff.meta.items() if k != "content_sha256"})
    assert store.read_features(path, verify=True).meta["status"] == "ok"
    with pytest.warns(UserWarning, match="fails QC .*NaN"):
        again = _extract(tiled_slides["tiles"], tmp_path)
    assert again["dark-02"].status == "ok" and again["pink-01"].status == "skipped"
    assert torch.equal(store.read_features(path).features, good)


def test_a_file_with_too_few_rows_is_found_on_resume(tiled_slides, tmp_path):
    first = _extract(tiled_slides["tiles"], tmp_path)
    path = first["pink-01"].path
    ff = store.read_features(path)
    meta = {k: v for k, v in ff.meta.items() if k != "content_sha256"}
    store.write_features(path, ff.features[:-1], ff.coords[:-1], meta)
    with pytest.warns(UserWarning, match="row count"):
        again = _extract(tiled_slides["tiles"], tmp_path)
    assert again["pink-01"].status == "ok" and store.read_features(path).n_tiles == ff.n_tiles


def test_a_slide_finished_by_another_process_while_waiting_for_its_lock_is_not_redone(
        tiled_slides, tmp_path, monkeypatch):
    """The look before the lock says 'to do'; by the time the lock is ours the other process
    has written the file: it is kept, not extracted a second time."""
    reference = tmp_path / "reference"
    _extract(tiled_slides["tiles"], reference)
    out = tmp_path / "store"
    target = store.feature_path(out, "pixel-stats", "pink-01")
    import pathkit_core.workspace as ws

    real_acquire = ws.FileLock.acquire

    def acquire(self):
        if self.path.name == f".{target.name}.lock" and not target.exists():
            # the other process finishes the slide just now
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(store.feature_path(reference, "pixel-stats", "pink-01").read_bytes())
        return real_acquire(self)

    monkeypatch.setattr(ws.FileLock, "acquire", acquire)
    results = _extract(tiled_slides["tiles"], out)
    assert results["pink-01"].status == "skipped" and results["dark-02"].status == "ok"


def test_temporaries_of_a_killed_writer_are_removed_by_the_next_lock_holder(tiled_slides, tmp_path):
    target = store.feature_path(tmp_path, "pixel-stats", "pink-01")
    target.parent.mkdir(parents=True)
    stale = target.with_name(f".{target.name}.abc123.tmp")
    stale.write_bytes(b"half a file")
    lock = target.with_name(f".{target.name}.lock")
    # a lock left by a process that no longer exists
    lock.write_text(json.dumps({"pid": 2**22 + 17, "host": socket.gethostname(), "time": time.time()}))
    status_tmp = store.status_path(tmp_path, "pixel-stats").with_name(".extraction_status.json.x1.tmp")
    status_tmp.write_text("{")
    results = _extract(tiled_slides["tiles"], tmp_path)
    assert results["pink-01"].status == "ok"
    left = sorted(p.name for p in target.parent.iterdir() if p.name.startswith("."))
    assert left == [], left
    assert os.path.exists(target)

