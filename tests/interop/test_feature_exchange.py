"""CLAM / TRIDENT / STAMP h5 import into the store and TRIDENT-style export."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

from pathkit_core.contracts import PathkitError
from pathkit_core.features import store
from pathkit_interop import feature_exchange as interop
from pathkit_interop import h5 as h5_reader


def _clam(path, n=6, d=8, attrs=None):
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(n, d)).astype(np.float32)
    coords = np.stack([np.arange(n) * 224 + 100, np.full(n, 448)], axis=1).astype(np.int64)
    with h5py.File(path, "w") as h5:
        h5["features"] = feats
        ds = h5.create_dataset("coords", data=coords)
        for k, v in (attrs or {}).items():
            ds.attrs[k] = v
    return feats, coords


def _stamp(path, mpp=0.2527, tile_px=887, n=5, d=6, unit="um"):
    rng = np.random.default_rng(1)
    feats = rng.normal(size=(n, d)).astype(np.float16)
    px = np.stack([np.arange(n) * tile_px, np.full(n, 3 * tile_px)], axis=1)
    with h5py.File(path, "w") as h5:
        h5["feats"] = feats
        h5["coords"] = (px * mpp).astype(np.float32)
        if unit:
            h5.attrs["unit"] = unit
        h5.attrs["extractor"] = "test-extractor"
    return feats, px


def test_flavours(tmp_path):
    _clam(tmp_path / "c.h5")
    _clam(tmp_path / "t.h5", attrs={"patch_size_level0": 512, "name": "T1"})
    _stamp(tmp_path / "s.h5")
    with h5py.File(tmp_path / "coords.h5", "w") as h5:
        h5["coords"] = np.zeros((2, 2))
    assert h5_reader.h5_flavour(tmp_path / "c.h5") == "clam"
    assert h5_reader.h5_flavour(tmp_path / "t.h5") == "trident"
    assert h5_reader.h5_flavour(tmp_path / "s.h5") == "stamp"
    assert h5_reader.h5_flavour(tmp_path / "coords.h5") == "coords-only"
    with pytest.raises(PathkitError, match="coordinates only"):
        h5_reader.read_h5_features(tmp_path / "coords.h5")
    (tmp_path / "junk.h5").write_bytes(b"not hdf5")
    with pytest.raises(PathkitError, match="not a readable HDF5"):
        h5_reader.h5_flavour(tmp_path / "junk.h5")


def test_clam_import_keeps_level0_coordinates_and_runs_qc(tmp_path):
    feats, coords = _clam(tmp_path / "S1.h5")
    target = interop.import_h5(tmp_path / "S1.h5", tmp_path / "store", "my-encoder", dtype="float32")
    assert target == store.feature_path(tmp_path / "store", "my-encoder", "S1")
    ff = store.read_features(target)
    assert np.array_equal(ff.features.numpy(), feats)
    assert np.array_equal(ff.coords.numpy(), coords)
    assert ff.meta["source"] == "import:clam" and ff.meta["status"] == "ok"
    assert store.read_status(tmp_path / "store", "my-encoder")["S1"]["status"] == "ok"
    with pytest.raises(PathkitError, match="already exists"):
        interop.import_h5(tmp_path / "S1.h5", tmp_path / "store", "my-encoder")


def test_trident_name_attribute_gives_the_slide_id(tmp_path):
    _clam(tmp_path / "x.h5", attrs={"patch_size_level0": 224, "name": "TCGA-XY"})
    target = interop.import_h5(tmp_path / "x.h5", tmp_path, "enc")
    assert target.name == "TCGA-XY.safetensors"


def test_stamp_micrometres_become_level0_pixels(tmp_path):
    feats, px = _stamp(tmp_path / "S2.h5")
    raw = h5_reader.read_h5_features(tmp_path / "S2.h5")
    assert raw.coords_unit == "um" and raw.meta["source_extractor"] == "test-extractor"
    with pytest.raises(PathkitError, match="micrometres"):
        interop.import_h5(tmp_path / "S2.h5", tmp_path / "store", "enc")
    target = interop.import_h5(tmp_path / "S2.h5", tmp_path / "store", "enc", mpp=0.2527)
    ff = store.read_features(target)
    assert np.array_equal(ff.coords.numpy(), px)
    assert torch.equal(ff.features, torch.from_numpy(feats))


def test_generic_loader_never_passes_micrometres_off_as_pixels(tmp_path):
    _, px = _stamp(tmp_path / "S4.h5")
    plain = store.load_feature_file(tmp_path / "S4.h5")
    assert plain.coords is None and plain.coords_unit == "none" and "mpp" in plain.meta["note"]
    converted = store.load_feature_file(tmp_path / "S4.h5", mpp=0.2527)
    assert np.array_equal(converted.coords.numpy(), px)


def test_stamp_with_the_wrong_mpp_is_refused(tmp_path):
    _stamp(tmp_path / "S3.h5")
    with pytest.raises(PathkitError, match="off the pixel grid"):
        h5_reader.read_h5_features(tmp_path / "S3.h5", mpp=0.25)


def test_stamp_without_a_unit_needs_one(tmp_path):
    _, px = _stamp(tmp_path / "old.h5", unit=None, mpp=1.0)
    with pytest.raises(PathkitError, match="pixels or micrometres"):
        h5_reader.read_h5_features(tmp_path / "old.h5")
    ff = h5_reader.read_h5_features(tmp_path / "old.h5", coords_unit="px")
    assert np.array_equal(ff.coords.numpy(), px)


def test_import_under_a_registered_encoder_needs_its_dimension(tmp_path, fresh_registry):
    from pathkit_core import hookimpl
    from tests.core.features.conftest import PixelStatsEncoder

    class Plugin:
        @hookimpl
        def register_encoders(self, register):
            register(PixelStatsEncoder)

    fresh_registry({"p": Plugin()})
    _clam(tmp_path / "d.h5", d=8)
    with pytest.raises(PathkitError, match="8-d features cannot be stored as encoder 'pixel-stats'"):
        interop.import_h5(tmp_path / "d.h5", tmp_path, "pixel-stats")


def test_degenerate_import_is_marked_failed(tmp_path):
    with h5py.File(tmp_path / "flat.h5", "w") as h5:
        h5["features"] = np.ones((10, 4), dtype=np.float32)
        h5["coords"] = np.zeros((10, 2), dtype=np.int64)
    interop.import_h5(tmp_path / "flat.h5", tmp_path / "store", "enc")
    assert "degenerate" in store.failed_slides(tmp_path / "store", "enc")["flat"]
    assert store.usable_feature_files(tmp_path / "store", "enc") == {}


def test_export_trident_round_trip(tmp_path):
    feats = torch.randn(4, 3)
    coords = torch.tensor([[0, 0], [512, 0], [0, 512], [512, 512]])
    src = store.write_features(
        tmp_path / "S9.safetensors", feats, coords,
        {"slide_id": "S9", "encoder": "enc", "tile_px": 256, "target_mpp": 0.5, "mpp": 0.25},
        dtype="float32",
    )
    out = interop.export_trident_h5(src, tmp_path / "h5" / "S9.h5")
    with h5py.File(out) as h5:
        assert np.array_equal(h5["features"][()], feats.numpy())
        assert np.array_equal(h5["coords"][()], coords.numpy())
        attrs = dict(h5["coords"].attrs)
    assert attrs["patch_size"] == 256 and attrs["patch_size_level0"] == 512
    assert attrs["level0_magnification"] == 40 and attrs["target_magnification"] == 20
    assert attrs["name"] == "S9" and h5_reader.h5_flavour(out) == "trident"
    back = store.read_features(interop.import_h5(out, tmp_path / "store", "enc", dtype="float32"))
    assert torch.equal(back.features, feats) and torch.equal(back.coords, coords.int())


@pytest.mark.realdata
def test_real_clam_trident_and_stamp_files_import(realdata, tmp_path):
    folder = realdata / "features"
    clam = interop.import_h5(folder / "clam_features_hoptimus1_PIT_06_00633_01.h5", tmp_path, "hopt-clam",
                             slide_id="PIT_06_00633_01", dtype="float32")
    ff = store.read_features(clam)
    with h5py.File(folder / "clam_features_hoptimus1_PIT_06_00633_01.h5") as h5:
        assert np.array_equal(ff.coords.numpy(), h5["coords"][()])
        assert np.array_equal(ff.features.numpy(), h5["features"][()])
    assert ff.features.shape == (26, 1536) and ff.meta["status"] == "ok"
    # The CLAM patch file of the same slide has identical level-0 coordinates.
    with h5py.File(folder / "clam_coords_PIT_06_00633_01.h5") as h5:
        assert np.array_equal(ff.coords.numpy(), h5["coords"][()])
        assert int(h5["coords"].attrs["patch_level"]) == 0

    # STAMP stores micrometres; TCGA-PL-A8LX was scanned at 0.2527 um/px, and its 224.1449 um
    # tile step is exactly 887 level-0 pixels.
    stamp = interop.import_h5(folder / "stamp_virchow2_TCGA-PL-A8LX.h5", tmp_path, "virchow2-stamp",
                              mpp=0.2527, dtype="float16")
    sf = store.read_features(stamp)
    assert sf.features.shape == (675, 1280) and sf.slide_id == "stamp_virchow2_TCGA-PL-A8LX"
    steps = np.unique(np.diff(np.unique(sf.coords.numpy()[:, 0])))
    assert 887 in steps and (steps % 887 == 0).all()
    with h5py.File(folder / "stamp_virchow2_TCGA-PL-A8LX.h5") as h5:
        um = h5["coords"][()].astype(np.float64)
    assert np.abs(sf.coords.numpy() * 0.2527 - um).max() < 0.01
