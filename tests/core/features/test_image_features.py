"""Whole-image encoding: resize without a centre crop and the encoder's normalisation, files and
zip members, unreadable images recorded (never encoded), resume by shard, damaged shards redone,
and decoding in DataLoader workers."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from pathkit_core.contracts import PathkitError
from pathkit_core.features import images as I

from .conftest import PixelStatsEncoder


def png_bytes(h, w, seed):
    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def refs(tmp_path):
    """Two loose PNGs (one not square), two zip members, an empty file, a bogus zip, a missing file."""
    (tmp_path / "a.png").write_bytes(png_bytes(150, 150, 1))
    (tmp_path / "wide.png").write_bytes(png_bytes(100, 150, 2))
    with zipfile.ZipFile(tmp_path / "01_TUM.zip", "w") as z:
        z.writestr("TUM_1.png", png_bytes(150, 150, 3))
        z.writestr("TUM_2.png", png_bytes(160, 160, 4))
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "fake.zip").write_bytes(b"not a zip")
    return {"a": tmp_path / "a.png", "wide": tmp_path / "wide.png", "t1": f"{tmp_path}/01_TUM.zip::TUM_1.png",
            "t2": f"{tmp_path}/01_TUM.zip::TUM_2.png", "empty": tmp_path / "empty.png",
            "fake": f"{tmp_path}/fake.zip::x.png", "missing": tmp_path / "nope.png"}


def encode(refs, out, **kwargs):
    return I.encode_images(PixelStatsEncoder(), list(refs.items()), out, progress=False, workers=0, **kwargs)


def expected_vector(ref):
    """By hand: the whole image resized to the encoder input (64 px, bicubic), ImageNet-normalised."""
    img = I.read_image(ref).resize((64, 64), resample=Image.BICUBIC)
    x = torch.from_numpy(np.array(img)).permute(2, 0, 1).float()[None] / 255.0
    x = (x - torch.tensor(I.Preprocessing.of(PixelStatsEncoder()).mean).view(1, 3, 1, 1)) / torch.tensor(
        (0.229, 0.224, 0.225)).view(1, 3, 1, 1)
    with torch.no_grad():
        return PixelStatsEncoder().load()(x)[0]


def test_features_are_the_whole_image_resized_and_normalised(refs, tmp_path):
    result = encode(refs, tmp_path / "store")
    assert set(result.rows) == {"a", "wide", "t1", "t2"} and result.encoded == 4
    for case in ("a", "wide", "t1", "t2"):
        got = result.rows[case].vector().float()
        assert got == pytest.approx(expected_vector(refs[case]).numpy(), abs=2e-3), case
    # a centre crop of the wide image would give other features: the whole image is encoded
    cropped = I.read_image(refs["wide"]).crop((25, 0, 125, 100))
    cropped.save(tmp_path / "cropped.png")
    assert not np.allclose(expected_vector(tmp_path / "cropped.png").numpy(),
                           result.rows["wide"].vector().float().numpy(), atol=1e-2)


def test_unreadable_images_are_recorded_never_encoded(refs, tmp_path):
    result = encode(refs, tmp_path / "store")
    assert result.failed["empty"].endswith("empty file (0 bytes)")
    assert "cannot be read as an image (BadZipFile" in result.failed["fake"]
    assert "cannot be read as an image" in result.failed["missing"]
    shard = I.load_shard(result.rows["a"].path)
    assert set(shard["failed"]) == {"empty", "fake", "missing"} and len(shard["ids"]) == shard["features"].shape[0]


def test_resume_reencodes_only_the_changed_shard(refs, tmp_path, monkeypatch):
    monkeypatch.setattr(I, "SHARD_SIZE", 2)
    store = tmp_path / "store"
    first = encode(refs, store)
    assert encode(refs, store).encoded == 0  # everything from the store
    (refs["a"]).write_bytes(png_bytes(150, 150, 9))  # "a" changed: its shard ("a", "empty") again
    again = encode(refs, store)
    assert again.encoded == 1 and again.rows["t1"].path == first.rows["t1"].path
    assert not np.allclose(again.rows["a"].vector().numpy(), first.rows["a"].vector().numpy())


def test_a_damaged_shard_is_noticed_and_encoded_again(refs, tmp_path):
    store = tmp_path / "store"
    first = encode(refs, store)
    path = first.rows["a"].path
    data = bytearray(path.read_bytes())
    data[-8:] = b"\x00\x11\x22\x33\x44\x55\x66\x77"  # flip bytes inside the feature tensor
    path.write_bytes(bytes(data))
    with pytest.raises(PathkitError, match="fails its checksum|cannot be read"):
        I.load_shard(path)
    again = encode(refs, store)
    assert again.encoded == 4
    assert again.rows["a"].vector().numpy() == pytest.approx(first.rows["a"].vector().numpy())
    path.write_bytes(b"garbage")
    with pytest.raises(PathkitError, match="cannot be read"):
        I.load_shard(path)


def test_the_cache_is_per_encoder_and_weights(refs, tmp_path):
    store = tmp_path / "store"
    result = encode(refs, store)
    assert result.rows["a"].path.parent == store / "pixel-stats"
    meta = I.load_shard(result.rows["a"].path)["meta"]
    assert meta["weights_sha256"] == result.rows["a"].weights_sha256 and meta["encoder"] == "pixel-stats"


def test_duplicate_ids_are_refused(refs, tmp_path):
    with pytest.raises(PathkitError, match="given twice"):
        I.encode_images(PixelStatsEncoder(), [("a", refs["a"]), ("a", refs["t1"])], tmp_path, progress=False)


def test_probe_image():
    from pathkit_datasets._image_checks import probe_image

    assert probe_image(png_bytes(150, 120, 0)) == ((120, 150), None)
    assert probe_image(b"") == (None, "empty file (0 bytes)")
    assert probe_image(png_bytes(20, 20, 0)[:40])[1].startswith("not a readable image")


@pytest.mark.slow
def test_decoding_in_workers_gives_the_same_features(refs, tmp_path):
    main = encode(refs, tmp_path / "main")
    workers = I.encode_images(PixelStatsEncoder(), list(refs.items()), tmp_path / "workers", progress=False,
                              workers=2)
    for case in main.rows:
        assert workers.rows[case].vector().numpy() == pytest.approx(main.rows[case].vector().numpy())
    assert workers.failed == main.failed


def test_two_encoders_of_one_shard_at_once_write_it_once(refs, tmp_path, monkeypatch):
    """Two runs sharing a workspace (a suite's two shards) encode the same images at once: one
    writes the shard, the other waits for its lock and reuses it, so both see one checksum (the
    shard's metadata holds its writing time: a second write would change every row's digest)."""
    import threading

    writes = []
    write = I._write_shard

    def slow_write(path, features, meta):
        writes.append(path)
        threading.Event().wait(0.3)  # the other thread arrives while this shard is being written
        write(path, features, meta)

    monkeypatch.setattr(I, "_write_shard", slow_write)
    results = [None, None]

    def run(k):
        results[k] = encode(refs, tmp_path / "store")

    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(r is not None for r in results), "an encoding thread did not finish"
    assert len(writes) == 1 and sorted(r.encoded for r in results) == [0, 4]
    assert {c: r.digest for c, r in results[0].rows.items()} == {c: r.digest for c, r in results[1].rows.items()}
    assert not list((tmp_path / "store").rglob(".*.lock"))
