"""The feature store: round trip, checksum on read, layout, status records, any-format loading."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import numpy as np
import pytest
import torch

from pathkit_core.contracts import PathkitError
from pathkit_core.features import store


def _features(n=12, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g), torch.arange(2 * n, dtype=torch.int64).reshape(n, 2) * 256


def test_round_trip_keeps_values_dtypes_and_string_metadata(tmp_path):
    feats, coords = _features()
    path = store.write_features(
        tmp_path / "s.safetensors", feats, coords, {"slide_id": "s", "encoder": "e", "qc": {"a": 1.5}, "n": 3},
        dtype="float16",
    )
    ff = store.read_features(path)
    assert ff.features.dtype == torch.float16 and ff.coords.dtype == torch.int32
    assert torch.equal(ff.features, feats.half())
    assert torch.equal(ff.coords, coords.int())
    assert ff.meta["n_tiles"] == "12" and ff.meta["embed_dim"] == "8" and ff.meta["features_dtype"] == "float16"
    assert ff.meta["n"] == "3" and json.loads(ff.meta["qc"]) == {"a": 1.5}
    assert ff.qc == {"a": 1.5} and ff.slide_id == "s" and ff.encoder == "e"
    assert ff.coords_unit == "level0_px" and len(ff.meta["content_sha256"]) == 64


def test_layout_and_slide_ids(tmp_path):
    assert store.feature_path(tmp_path, "uni2h", "TCGA-A1.B2") == tmp_path / "uni2h" / "TCGA-A1.B2.safetensors"
    for bad in ("../x", "a/b", ".hidden", ""):
        with pytest.raises(PathkitError, match="cannot be used as a file name"):
            store.feature_path(tmp_path, "e", bad)


def test_truncated_file_is_detected_naming_the_file(tmp_path):
    feats, coords = _features(n=64, d=32)
    path = store.write_features(tmp_path / "t.safetensors", feats, coords, {"slide_id": "t"})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(PathkitError, match=r"t\.safetensors.*(unreadable|truncated)"):
        store.read_features(path)


def test_edited_tensor_bytes_fail_the_checksum(tmp_path):
    feats, coords = _features(n=16, d=4)
    path = store.write_features(tmp_path / "e.safetensors", feats, coords, {"slide_id": "e"})
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # flip bits inside the coords/features payload
    path.write_bytes(bytes(data))
    with pytest.raises(PathkitError, match="fails its checksum"):
        store.read_features(path)
    # Without verification the damaged values come back (for forensics).
    assert store.read_features(path, verify=False).features.shape == (16, 4)


def test_rows_stream_in_chunks_and_a_damaged_file_fails_at_the_end(tmp_path):
    feats, coords = _features(n=50, d=6)
    path = store.write_features(tmp_path / "c.safetensors", feats, coords, {"slide_id": "c"}, dtype="float16")
    chunks = list(store.iter_feature_rows(path, rows=16))
    assert [len(f) for f, _ in chunks] == [16, 16, 16, 2]
    assert torch.equal(torch.cat([f for f, _ in chunks]), feats.half())
    assert torch.equal(torch.cat([c for _, c in chunks]), coords.int())
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    seen = []
    with pytest.raises(PathkitError, match="c.safetensors fails its checksum"):
        for f, _ in store.iter_feature_rows(path, rows=16):
            seen.append(len(f))
    assert seen == [16, 16, 16, 2]  # every chunk came, the verdict after the last


def test_edited_metadata_fails_the_checksum(tmp_path):
    feats, coords = _features(n=4, d=4)
    path = store.write_features(tmp_path / "m.safetensors", feats, coords, {"slide_id": "m", "status": "failed"})
    data = path.read_bytes()
    edited = data.replace(b'"status":"failed"', b'"status":"oooook"')
    assert edited != data
    path.write_bytes(edited)
    with pytest.raises(PathkitError, match="fails its checksum"):
        store.read_features(path)


@pytest.mark.parametrize(
    ("feats", "coords", "match"),
    [
        (torch.zeros(3), torch.zeros(3, 2), "2-D"),
        (torch.zeros(3, 4), torch.zeros(2, 2), r"coords must be \(N, 2\)"),
        (torch.zeros(3, 4), torch.full((3, 2), 0.5), "whole level-0 pixels"),
        (torch.zeros(3, 4), -torch.ones(3, 2), "int32 level-0 pixel range"),
        (torch.zeros(3, 4, dtype=torch.int64), torch.zeros(3, 2), "floating point"),
    ],
)
def test_bad_input_to_write_is_refused(tmp_path, feats, coords, match):
    with pytest.raises(PathkitError, match=match):
        store.write_features(tmp_path / "x.safetensors", feats, coords, {})
    assert not (tmp_path / "x.safetensors").exists()


def test_read_of_a_foreign_safetensors_file_is_refused(tmp_path):
    from safetensors.torch import save_file

    save_file({"features": torch.zeros(2, 2)}, str(tmp_path / "f.safetensors"))
    with pytest.raises(PathkitError, match="not a pathkit feature file"):
        store.read_features(tmp_path / "f.safetensors")


def _write_status(args):
    out, worker = args
    for i in range(15):
        store.record_status(out, "enc", f"w{worker}-s{i}", "ok", n_tiles=i)


def test_status_records_from_concurrent_processes_are_all_kept(tmp_path):
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_write_status, [(str(tmp_path), 0), (str(tmp_path), 1)])
    slides = store.read_status(tmp_path, "enc")
    assert len(slides) == 30 and all(rec["status"] == "ok" for rec in slides.values())


def test_usable_and_failed_slides_exclude_failures_with_reasons(tmp_path):
    feats, coords = _features()
    for sid in ("good", "bad-record", "bad-meta"):
        store.write_features(store.feature_path(tmp_path, "enc", sid), feats, coords,
                             {"slide_id": sid, "status": "failed" if sid == "bad-meta" else "ok",
                              "failure_reason": "NaN values" if sid == "bad-meta" else ""})
    store.record_status(tmp_path, "enc", "bad-record", "failed", "slide changed since tiling")
    store.record_status(tmp_path, "enc", "never-written", "failed", "reading tiles failed: boom")
    broken = store.feature_path(tmp_path, "enc", "truncated")
    broken.write_bytes(b"\x10\x00\x00")
    assert store.usable_feature_files(tmp_path, "enc") == {"good": store.feature_path(tmp_path, "enc", "good")}
    failed = store.failed_slides(tmp_path, "enc")
    assert failed["bad-record"] == "slide changed since tiling"
    assert failed["never-written"] == "reading tiles failed: boom"
    assert failed["bad-meta"] == "NaN values"
    assert "unreadable" in failed["truncated"]
    assert store.usable_feature_files(tmp_path, "missing-encoder") == {}


def test_usable_with_verify_drops_files_that_fail_their_checksum(tmp_path):
    feats, coords = _features()
    path = store.write_features(store.feature_path(tmp_path, "enc", "a"), feats, coords, {"slide_id": "a"})
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01
    path.write_bytes(bytes(data))
    assert "a" in store.usable_feature_files(tmp_path, "enc")
    assert store.usable_feature_files(tmp_path, "enc", verify=True) == {}


def test_load_feature_file_reads_goldmark_torch_files(tmp_path):
    feats = torch.randn(5, 3)
    torch.save({"features": feats}, tmp_path / "features_S1.pt")
    ff = store.load_feature_file(tmp_path / "features_S1.pt")
    assert torch.equal(ff.features, feats) and ff.coords is None and ff.coords_unit == "none"
    torch.save({"features": feats, "coords": torch.tensor([[0, 0, 0]] * 5)}, tmp_path / "with.pt")
    assert store.load_feature_file(tmp_path / "with.pt").coords.shape == (5, 2)
    torch.save(feats[None], tmp_path / "bare.pt")
    assert store.load_feature_file(tmp_path / "bare.pt").features.shape == (5, 3)


class _Evil:
    def __reduce__(self):
        return (print, ("pickled code ran",))


def test_load_feature_file_refuses_pickled_code_and_unknown_types(tmp_path):
    torch.save({"features": _Evil()}, tmp_path / "evil.pt")
    with pytest.raises(PathkitError, match="weights-only"):
        store.load_feature_file(tmp_path / "evil.pt")
    (tmp_path / "f.npy").write_bytes(b"x")
    with pytest.raises(PathkitError, match="unknown feature file type"):
        store.load_feature_file(tmp_path / "f.npy")
    with pytest.raises(PathkitError, match="does not exist"):
        store.load_feature_file(tmp_path / "nope.safetensors")


def test_load_feature_file_reads_clam_h5(tmp_path):
    import h5py

    feats = np.random.default_rng(0).normal(size=(7, 5)).astype(np.float32)
    coords = np.arange(14).reshape(7, 2) * 224
    with h5py.File(tmp_path / "S.h5", "w") as h5:
        h5["features"] = feats
        h5["coords"] = coords
    ff = store.load_feature_file(tmp_path / "S.h5")
    assert np.array_equal(ff.features.numpy(), feats) and np.array_equal(ff.coords.numpy(), coords)


def test_bfloat16_features_round_trip(tmp_path):
    feats, coords = _features(n=3, d=2)
    path = store.write_features(Path(tmp_path) / "b.safetensors", feats, coords, {}, dtype="bfloat16")
    assert torch.equal(store.read_features(path).features, feats.bfloat16())
    with pytest.raises(PathkitError, match="unknown feature dtype"):
        store.write_features(Path(tmp_path) / "c.safetensors", feats, coords, {}, dtype="int8")
