"""The extraction engine on synthetic slides: output, resume, fail-closed integrity, locks."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from pathkit_core.contracts import PathkitError
from pathkit_core.features import store
from pathkit_core.features.extract import compute_dtype, extract_features
from pathkit_core.workspace import sha256_file
from pathkit_core.wsi.manifest import read_manifest
from tests.core.features.conftest import NaNOnDarkEncoder, PixelStatsEncoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _by_id(results):
    return {r.slide_id: r for r in results}


@pytest.mark.parametrize("workers", [0, 1])
def test_features_match_a_direct_forward_pass_row_for_row(tiled_slides, tmp_path, workers):
    from pathkit_core.wsi.reader import TileReader

    enc = PixelStatsEncoder()
    results = extract_features(enc, tiled_slides["tiles"], tmp_path, batch_size=5, workers=workers,
                               feature_dtype="float32", progress=False)
    assert sorted(r.status for r in results) == ["ok", "ok"]
    model = enc.load("cpu")
    for r in results:
        manifest = read_manifest(tiled_slides["tiles"] / f"{r.slide_id}.parquet")
        ff = store.read_features(r.path)
        assert ff.n_tiles == manifest.n_tiles == r.n_tiles
        assert np.array_equal(ff.coords.numpy(), manifest.coords())
        tiles = np.stack(list(TileReader(manifest)))
        with torch.inference_mode():
            direct = model(enc.transform(tiles))
        torch.testing.assert_close(ff.features, direct, rtol=0, atol=1e-6)
        meta = ff.meta
        assert meta["encoder"] == "pixel-stats" and meta["status"] == "ok"
        assert meta["manifest_sha256"] == sha256_file(manifest.path)
        assert meta["slide_sha256"] == manifest.meta["slide_sha256"]
        assert meta["compute_dtype"] == "float32" and meta["weights_sha256"] == "built-in"
        assert meta["target_mpp"] == "2.0" and meta["tile_px"] == "64" and meta["mpp"] == "0.5"
        assert ff.qc["status"] == "ok" and ff.qc["expected_tiles"] == manifest.n_tiles
    status = store.read_status(tmp_path, "pixel-stats")
    assert {s: rec["status"] for s, rec in status.items()} == {"pink-01": "ok", "dark-02": "ok"}
    assert status["pink-01"]["sha256"] == sha256_file(store.feature_path(tmp_path, "pixel-stats", "pink-01"))


def test_resume_skips_finished_slides_and_redoes_changed_settings(tiled_slides, tmp_path):
    enc = PixelStatsEncoder()
    first = extract_features(enc, tiled_slides["tiles"], tmp_path, workers=0, progress=False)
    path = first[0].path
    mtime = path.stat().st_mtime_ns
    again = extract_features(enc, tiled_slides["tiles"], tmp_path, workers=0, progress=False)
    assert {r.status for r in again} == {"skipped"} and path.stat().st_mtime_ns == mtime
    redo = extract_features(enc, tiled_slides["tiles"], tmp_path, workers=0, progress=False,
                            feature_dtype="float32")
    assert {r.status for r in redo} == {"ok"}
    assert store.read_features(path).features.dtype == torch.float32
    forced = extract_features(enc, tiled_slides["tiles"], tmp_path, workers=0, progress=False,
                              feature_dtype="float32", overwrite=True)
    assert {r.status for r in forced} == {"ok"}


def test_an_encoder_producing_nan_fails_its_slide_and_the_run_goes_on(tiled_slides, tmp_path):
    results = _by_id(extract_features(NaNOnDarkEncoder(), tiled_slides["tiles"], tmp_path, workers=0,
                                      progress=False))
    assert results["pink-01"].status == "ok"
    assert results["dark-02"].status == "failed" and "NaN" in results["dark-02"].reason
    assert store.usable_feature_files(tmp_path, "nan-on-dark") == {"pink-01": results["pink-01"].path}
    assert "NaN" in store.failed_slides(tmp_path, "nan-on-dark")["dark-02"]
    kept = tmp_path / "nan-on-dark" / "failed" / "dark-02.safetensors"
    assert kept.is_file() and not store.feature_path(tmp_path, "nan-on-dark", "dark-02").exists()
    assert store.read_features(kept).meta["status"] == "failed"


def test_a_slide_changed_since_tiling_is_failed(tmp_path):
    from pathkit_core.wsi.tiling import TilingParams, tile_slides
    from pathkit_sdk.synthetic import write_synthetic_slide

    slide = write_synthetic_slide(tmp_path / "s" / "edited.tiff", width=768, height=768, mpp=0.5, seed=5)
    params = TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0)
    tile_slides([slide], tmp_path / "tiles", params, progress=False)
    with open(slide, "ab") as fh:
        fh.write(b"\0" * 16)  # same image, different bytes: the content hash changes
    [r] = extract_features(PixelStatsEncoder(), tmp_path / "tiles", tmp_path / "f", workers=0, progress=False)
    assert r.status == "failed" and "changed since tiling" in r.reason
    assert "changed since tiling" in store.failed_slides(tmp_path / "f", "pixel-stats")["edited"]


def test_unreadable_tiles_fail_only_their_slide(tiled_slides, tmp_path, monkeypatch):
    from pathkit_core.wsi import reader

    original = reader.TileReader._region

    def flaky(self, i, *args):
        if self.manifest.slide_id == "dark-02" and i == 3:
            raise PathkitError("tile 3 cannot be decoded")
        return original(self, i, *args)

    monkeypatch.setattr(reader.TileReader, "_region", flaky)
    results = _by_id(extract_features(PixelStatsEncoder(), tiled_slides["tiles"], tmp_path, batch_size=2,
                                      workers=0, progress=False))
    assert results["pink-01"].status == "ok"
    assert results["dark-02"].status == "failed" and "tile 3 cannot be decoded" in results["dark-02"].reason


def test_empty_manifest_and_missing_slide_are_failed(tmp_path):
    from pathkit_core.wsi.tiling import TilingParams, tile_slides
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    params = TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0)
    glass = write_synthetic_slide(tmp_path / "s" / "glass.tiff", width=512, height=512, mpp=0.5,
                                  tissue=[Blob(0.5, 0.5, 0.01, 0.01)])
    gone = write_synthetic_slide(tmp_path / "s" / "gone.tiff", width=768, height=768, mpp=0.5, seed=3)
    tile_slides([glass, gone], tmp_path / "tiles", params, progress=False)
    gone.unlink()
    results = _by_id(extract_features(PixelStatsEncoder(), tmp_path / "tiles", tmp_path / "f", workers=0,
                                      progress=False))
    assert results["glass"].status == "failed" and "no tiles" in results["glass"].reason
    assert results["gone"].status == "failed" and "not found" in results["gone"].reason


def test_a_slide_locked_by_another_live_process_is_left_alone(tiled_slides, tmp_path):
    import json
    import os
    import socket
    import time

    target = store.feature_path(tmp_path, "pixel-stats", "pink-01")
    target.parent.mkdir(parents=True)
    lock = target.with_name(f".{target.name}.lock")
    lock.write_text(json.dumps({"pid": os.getppid(), "host": socket.gethostname(), "time": time.time()}))
    results = _by_id(extract_features(PixelStatsEncoder(), tiled_slides["tiles"], tmp_path, workers=0,
                                      progress=False))
    assert results["pink-01"].status == "locked" and results["dark-02"].status == "ok"
    assert lock.exists() and not target.exists()


def test_encoder_with_the_wrong_output_dimension_is_an_error(tiled_slides, tmp_path):
    class Wrong(PixelStatsEncoder):
        embed_dim = 15  # declared; the module still returns 16-d features

        def load(self, device="cpu", weights_path=None, **kwargs):
            return PixelStatsEncoder().load(device)

    with pytest.raises(PathkitError, match=r"expected \(\d+, 15\)"):
        extract_features(Wrong(), tiled_slides["tiles"], tmp_path, workers=0, progress=False)
    # The slide being extracted was not left locked.
    assert not list((tmp_path / "pixel-stats").glob(".*.lock"))


def test_bad_arguments(tiled_slides, tmp_path):
    enc = PixelStatsEncoder()
    with pytest.raises(PathkitError, match="batch size"):
        extract_features(enc, tiled_slides["tiles"], tmp_path, batch_size=0)
    with pytest.raises(PathkitError, match="unknown dtype"):
        extract_features(enc, tiled_slides["tiles"], tmp_path, dtype="int4")
    with pytest.raises(PathkitError, match="no tile manifests"):
        extract_features(enc, tmp_path, tmp_path)
    dup = tmp_path / "dup"
    dup.mkdir()
    shutil.copy(tiled_slides["tiles"] / "pink-01.parquet", dup / "a.parquet")
    shutil.copy(tiled_slides["tiles"] / "pink-01.parquet", dup / "b.parquet")
    with pytest.raises(PathkitError, match="appears in two manifests"):
        extract_features(enc, dup, tmp_path)


def test_compute_precision_follows_device_and_request():
    class Half(PixelStatsEncoder):
        precision = "bf16"

    enc = Half()
    assert compute_dtype(enc, torch.device("cpu"), None) == "float32"
    assert compute_dtype(enc, torch.device("cuda"), None) == "bfloat16"
    assert compute_dtype(enc, torch.device("cpu"), "bf16") == "bfloat16"
    assert compute_dtype(enc, torch.device("cuda"), "fp32") == "float32"


def test_cpu_bf16_autocast_when_asked(tiled_slides, tmp_path):
    results = extract_features(PixelStatsEncoder(), tiled_slides["tiles"], tmp_path, workers=0,
                               dtype="bf16", progress=False)
    assert all(store.read_features(r.path).meta["compute_dtype"] == "bfloat16" for r in results)


@pytest.mark.realdata
def test_cmu1_features_are_those_of_the_batch_resampled_tiles_and_near_the_lanczos_ones(realdata, tmp_path):
    """CMU-1-Small-Region (0.499 um/px: every 257-px read resampled to 256) through tiny-vit:
    the stored features are the model's on the batch-resampled tiles, and within the stated
    tolerance (docs/wsi.md section 5) of the features of the former per-tile Lanczos tiles."""
    import warnings

    from PIL import Image

    from pathkit_core.plugins import get_component
    from pathkit_core.wsi.reader import TileReader
    from pathkit_core.wsi.resample import RESAMPLING
    from pathkit_core.wsi.tiling import TilingParams, tile_slide

    result = tile_slide(realdata / "slides" / "CMU-1-Small-Region.svs", tmp_path / "tiles",
                        TilingParams(target_mpp=0.5, tile_px=256, min_tissue_area_mm2=0.0))
    enc = get_component("encoder", "tiny-vit")()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # another tile spec than tiny-vit's: allowed
        [r] = extract_features(enc, tmp_path / "tiles", tmp_path / "f", batch_size=8, workers=0,
                               feature_dtype="float32", progress=False)
    ff = store.read_features(r.path)
    assert r.status == "ok" and ff.meta["tile_resampling"] == RESAMPLING
    regions = TileReader(read_manifest(result.manifest_path)).read_batch(range(r.n_tiles), resample=False)
    model = enc.load()
    lanczos = np.stack([np.asarray(Image.fromarray(t).resize((256, 256), Image.Resampling.LANCZOS)) for t in regions])
    with torch.inference_mode():
        ours = model(enc.transform(TileReader(read_manifest(result.manifest_path)).read_batch(range(r.n_tiles))))
        former = model(enc.transform(lanczos))
    torch.testing.assert_close(ff.features, ours, rtol=0, atol=1e-6)
    rel = (ff.features - former).norm(dim=1) / former.norm(dim=1)
    assert float(rel.max()) <= 0.005
    assert float(torch.nn.functional.cosine_similarity(ff.features, former).min()) >= 0.9999
