"""`pathkit extract`, `pathkit qc`, `pathkit features import|export`, and two-process extraction."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from pathkit_core.features import store

REPO = Path(__file__).resolve().parents[3]


def _venv_bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _env() -> dict[str, str]:
    # One thread everywhere: both runs must do the same arithmetic in the same order.
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1",
               PYTHONWARNINGS="ignore", TORCH_CPP_LOG_LEVEL="ERROR")
    env.pop("WORLD_SIZE", None)
    return env


@pytest.mark.slow  # multi-process: `make test-suite`, which CI runs after `make test`
def test_two_gloo_processes_give_the_same_features_as_one(tiled_slides, tmp_path):
    pytest.importorskip("pathkit_encoders.tiny_vit")
    manifests = tmp_path / "manifests"
    shutil.copytree(tiled_slides["tiles"], manifests)
    from pathkit_core.features.extract import extract_features

    # The single-process reference runs here, on one thread like the launched processes.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # The test manifests are not tiny-vit's tile spec: allowed, but never silently.
        with pytest.warns(UserWarning, match="expects 128 px tiles at 1 mpp; the manifests have 64 px at 2 mpp"):
            extract_features("tiny-vit", manifests, tmp_path / "one", workers=0, batch_size=4, progress=False)
    finally:
        torch.set_num_threads(threads)
    args = ["-m", "pathkit_core.cli", "extract", "--encoder", "tiny-vit", "--manifests", str(manifests),
            "--workers", "0", "--batch-size", "4", "-q"]
    two = subprocess.run(
        [_venv_bin("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
         "--mixed_precision", "no", "--dynamo_backend", "no", *args, "--out", str(tmp_path / "two")],
        env=_env(), cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert two.returncode == 0, two.stdout[-2000:] + two.stderr[-3000:]
    status = store.read_status(tmp_path / "two", "tiny-vit")
    assert {s: r["status"] for s, r in status.items()} == {"pink-01": "ok", "dark-02": "ok"}
    # Each slide was extracted by exactly one of the two processes.
    for sid in ("pink-01", "dark-02"):
        a = store.read_features(store.feature_path(tmp_path / "one", "tiny-vit", sid))
        b = store.read_features(store.feature_path(tmp_path / "two", "tiny-vit", sid))
        assert torch.equal(a.features.view(torch.int16), b.features.view(torch.int16)), sid
        assert torch.equal(a.coords, b.coords)
        assert a.meta["extraction_key"] == b.meta["extraction_key"]


def test_extract_slides_tiles_them_first_with_the_encoder_tile_spec(tiled_slides, tmp_path, cli):
    pytest.importorskip("pathkit_encoders.tiny_vit")
    from pathkit_core.wsi.manifest import read_manifest

    result = cli("extract", tiled_slides["pink"], "--encoder", "tiny-vit", "--out", tmp_path, "--workers", "0",
                 "-q", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout[result.stdout.index("["):])
    assert rows == [{"slide_id": "pink-01", "status": "ok", "n_tiles": rows[0]["n_tiles"], "reason": ""}]
    manifest = read_manifest(tmp_path / "tiles" / "128px_1mpp" / "pink-01.parquet")
    assert manifest.tile_px == 128 and manifest.target_mpp == 1.0
    ff = store.read_features(store.feature_path(tmp_path, "tiny-vit", "pink-01"))
    assert ff.features.shape == (manifest.n_tiles, 64) and ff.meta["is_pathology_model"] == "false"


def test_extract_needs_slides_or_manifests(cli, tmp_path):
    result = cli("extract", "--encoder", "tiny-vit", "--out", tmp_path)
    assert result.exit_code == 2 and "either SLIDE arguments or --manifests" in result.output


def test_qc_flags_a_truncated_and_a_constant_feature_file(tmp_path, cli):
    enc_dir = tmp_path / "store"
    good = torch.randn(40, 8)
    coords = torch.arange(80).reshape(40, 2)
    store.write_features(store.feature_path(enc_dir, "enc", "good"), good, coords, {"slide_id": "good"})
    store.write_features(store.feature_path(enc_dir, "enc", "constant"), torch.ones(40, 8), coords,
                         {"slide_id": "constant"})
    trunc = store.write_features(store.feature_path(enc_dir, "enc", "truncated"), good, coords,
                                 {"slide_id": "truncated"})
    trunc.write_bytes(trunc.read_bytes()[:-64])
    store.record_status(enc_dir, "enc", "never", "failed", "reading tiles failed: boom")

    result = cli("qc", enc_dir, "--json")
    assert result.exit_code == 1
    records = {r["slide_id"]: r for r in json.loads(result.stdout)}
    assert records["good"]["status"] == "ok" and records["good"]["n_tiles"] == 40
    assert len(records["good"]["sha256"]) == 64
    assert records["constant"]["status"] == "failed"
    assert any("degenerate" in p for p in records["constant"]["problems"])
    assert records["truncated"]["status"] == "failed"
    assert any("truncated" in p or "unreadable" in p for p in records["truncated"]["problems"])
    assert records["never"]["status"] == "failed"

    table = cli("qc", enc_dir / "enc")
    assert table.exit_code == 1 and "2 ok" not in table.output and "1 ok, 3 failed" in table.output
    shutil.rmtree(enc_dir / "enc")
    store.write_features(store.feature_path(enc_dir, "enc", "good"), good, coords, {"slide_id": "good"})
    assert cli("qc", enc_dir, "--encoder", "enc").exit_code == 0


def test_qc_notices_a_manifest_changed_after_extraction(tiled_slides, tmp_path, cli):
    from pathkit_core.features.extract import extract_features
    from tests.core.features.conftest import PixelStatsEncoder

    manifests = tmp_path / "m"
    shutil.copytree(tiled_slides["tiles"], manifests)
    extract_features(PixelStatsEncoder(), manifests, tmp_path / "f", workers=0, progress=False)
    assert cli("qc", tmp_path / "f").exit_code == 0
    (manifests / "pink-01.parquet").unlink()
    shutil.copy(tiled_slides["tiles"] / "dark-02.parquet", manifests / "pink-01.parquet")
    result = cli("qc", tmp_path / "f", "--json")
    records = {r["slide_id"]: r for r in json.loads(result.stdout)}
    assert any("changed since extraction" in p for p in records["pink-01"]["problems"])


def test_features_import_and_export_commands(tmp_path, cli):
    rng = np.random.default_rng(0)
    with h5py.File(tmp_path / "A.h5", "w") as h5:
        h5["features"] = rng.normal(size=(6, 4)).astype(np.float32)
        h5["coords"] = np.arange(12).reshape(6, 2) * 256
    with h5py.File(tmp_path / "B.h5", "w") as h5:
        h5["feats"] = rng.normal(size=(3, 4)).astype(np.float32)
        h5["coords"] = (np.arange(6).reshape(3, 2) * 100 * 0.5).astype(np.float32)
        h5.attrs["unit"] = "um"
    result = cli("features", "import", tmp_path / "A.h5", "--encoder", "ext", "--out", tmp_path / "s")
    assert result.exit_code == 0, result.output
    missing_mpp = cli("features", "import", tmp_path / "B.h5", "--encoder", "ext", "--out", tmp_path / "s")
    assert missing_mpp.exit_code == 2 and "mpp" in missing_mpp.output
    ok = cli("features", "import", tmp_path / "B.h5", "--encoder", "ext", "--out", tmp_path / "s", "--mpp", "0.5")
    assert ok.exit_code == 0, ok.output
    assert store.read_features(store.feature_path(tmp_path / "s", "ext", "B")).coords.tolist() == [
        [0, 100], [200, 300], [400, 500]]
    exported = cli("features", "export", tmp_path / "s" / "ext", "--out", tmp_path / "h5")
    assert exported.exit_code == 0, exported.output
    assert sorted(p.name for p in (tmp_path / "h5").iterdir()) == ["A.h5", "B.h5"]


# --------------------------------------------------------------------------- hardening (issue 28)


def _h5(path: Path, coords=None, n: int = 4, name: str | None = None) -> Path:
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as h5:
        h5["features"] = rng.normal(size=(n, 4)).astype(np.float32)
        h5["coords"] = np.arange(2 * n).reshape(n, 2) * 256 if coords is None else coords
        if name is not None:
            h5["coords"].attrs["name"] = name
    return path


def _entries(root: Path, *, recursive: bool) -> set[Path]:
    if not root.is_dir():
        return set()
    try:
        return set(root.rglob("*")) if recursive else set(root.iterdir())
    except OSError:
        return set()


def _new_files_outside(out: Path, action, sandbox: Path) -> list[str]:
    """Run `action()` and list what it created outside `out`: the whole sandbox (where crafted
    names point) is walked, and the working folder, $HOME and the temporary folder are listed."""
    shallow = {Path.cwd(), Path.home(), Path(os.environ.get("TMPDIR", "/tmp"))}
    before = _entries(sandbox, recursive=True) | {p for r in shallow for p in _entries(r, recursive=False)}
    action()
    after = _entries(sandbox, recursive=True) | {p for r in shallow for p in _entries(r, recursive=False)}
    return sorted(str(p) for p in after - before if p != out and out not in p.parents)


def test_features_import_and_export_never_write_outside_the_out_folder(tmp_path, cli):
    sandbox = tmp_path / "sandbox"
    inputs, out, elsewhere = sandbox / "in", sandbox / "deep" / "out", sandbox / "elsewhere"
    for folder in (inputs, out.parent, elsewhere):
        folder.mkdir(parents=True)
    plain = _h5(inputs / "S1.h5")
    # names from arguments: an encoder that climbs out, an absolute one, a slide id that climbs out
    attempts = [
        ("features", "import", plain, "-e", "../../x", "--out", out),
        ("features", "import", plain, "-e", str(elsewhere / "abs"), "--out", out),
        ("features", "import", plain, "-e", "enc", "--slide-id", "../../../escape", "--out", out),
        # a name from the file: the h5's own slide name
        ("features", "import", _h5(inputs / "named.h5", name=str(elsewhere / "victim")), "-e", "enc", "--out", out),
    ]
    for args in attempts:
        created = _new_files_outside(out, lambda a=args: cli(*a), sandbox)
        assert created == [], f"{args[2:]}: wrote {created}"
    for args in attempts:
        result = cli(*args)
        assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, (args, result.output)
        assert "cannot be used as a" in result.stderr and "no path separators" in result.stderr
    # a feature file with a valid checksum whose metadata names an absolute slide id
    store.write_features(out / "crafted" / "honest.safetensors", torch.ones(3, 4), torch.zeros(3, 2, dtype=torch.int32),
                         {"slide_id": str(elsewhere / "pwned"), "encoder": "crafted"})
    store.write_features(out / "crafted" / "climber.safetensors", torch.ones(3, 4),
                         torch.zeros(3, 2, dtype=torch.int32), {"slide_id": "../../../climbed", "encoder": "crafted"})
    exported = out / "h5"
    for source in (out / "crafted", out / "crafted" / "honest.safetensors"):
        created = _new_files_outside(exported, lambda s=source: cli("features", "export", s, "--out", exported),
                                     sandbox)
        assert created == [], f"export of {source.name}: wrote {created}"
        result = cli("features", "export", source, "--out", exported)
        assert result.exit_code == 2 and "nothing exported" in result.stderr, result.output
        assert "metadata slide id" in result.stderr
    assert not (elsewhere / "pwned.h5").exists() and not list((out / "h5").glob("*.h5"))
    # the honest way still works, and writes only inside --out
    created = _new_files_outside(out, lambda: cli("features", "import", plain, "-e", "enc", "--out", out), sandbox)
    assert created == [] and store.feature_path(out, "enc", "S1").is_file()


def test_features_import_of_a_named_pipe_is_refused_without_blocking(tmp_path):
    # In a subprocess: HDF5 holds the interpreter lock while it opens a file, so a thread blocked
    # on the pipe would block the test too.
    fifo = tmp_path / "slide.h5"
    os.mkfifo(fifo)
    cmd = [sys.executable, "-c", "from pathkit_core.cli import main; main()", "features", "import", str(fifo),
           "-e", "enc", "--out", str(tmp_path / "s")]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env())
    except subprocess.TimeoutExpired:
        pytest.fail("features import blocked on a named pipe")
    assert done.returncode == 2 and f"feature file {fifo} is not a regular file (a named pipe)" in done.stderr


@pytest.mark.parametrize("coord", [2**32 + 7, 2**40, -3])
def test_features_import_never_wraps_coordinates(tmp_path, cli, coord):
    coords = np.array([[0, 0], [coord, 256]], dtype=np.int64)
    result = cli("features", "import", _h5(tmp_path / "big.h5", coords=coords, n=2), "-e", "enc", "--out",
                 tmp_path / "s")
    assert result.exit_code == 2, result.output
    assert f"coordinates {min(0, coord)}..{max(256, coord)} are outside the level-0 pixel range" in result.stderr
    assert not store.encoder_dir(tmp_path / "s", "enc").exists() or not list(
        store.encoder_dir(tmp_path / "s", "enc").glob("*.safetensors"))


def test_features_import_refuses_an_external_link_to_another_file(tmp_path, cli):
    secret = tmp_path / "secret.h5"
    with h5py.File(secret, "w") as h5:
        h5["data"] = np.arange(8).reshape(4, 2)
    path = tmp_path / "linked.h5"
    with h5py.File(path, "w") as h5:
        h5["features"] = np.ones((4, 4), np.float32)
        h5["coords"] = h5py.ExternalLink(str(secret), "/data")
    result = cli("features", "import", path, "-e", "enc", "--out", tmp_path / "s")
    assert result.exit_code == 2, result.output
    assert f"dataset 'coords' is an external link to {secret}:/data; external links are refused" in result.stderr
    passwd = tmp_path / "passwd.h5"
    with h5py.File(passwd, "w") as h5:
        h5["features"] = np.ones((4, 4), np.float32)
        h5["coords"] = h5py.ExternalLink("/etc/passwd", "/x")
    result = cli("features", "import", passwd, "-e", "enc", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "external links are refused" in result.stderr, result.output


@pytest.mark.parametrize("flag", ["--out", "--tiles-dir"])
def test_extract_output_folders_that_cannot_be_made_are_one_line_before_any_work(tmp_path, cli, tiled_slides, flag):
    (tmp_path / "afile").write_text("a file")
    args = ["extract", "-e", "tiny-vit", "-q"]
    if flag == "--out":
        args += ["--manifests", tiled_slides["tiles"], "--out", tmp_path / "afile" / "sub"]
    else:
        slide = tiled_slides["pink"]
        args += [slide, "--out", tmp_path / "o", "--tiles-dir", tmp_path / "afile"]
    result = cli(*args)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {flag} {tmp_path / 'afile'}"), err


def test_extract_on_a_device_this_machine_lacks_is_one_line(tmp_path, cli, tiled_slides):
    for device, message in (("tpu", "'tpu' is not a device"), ("xla", "xla devices are not supported")):
        result = cli("extract", "-e", "tiny-vit", "--manifests", tiled_slides["tiles"], "--out", tmp_path / "o",
                     "--device", device, "-q")
        assert result.exit_code == 2 and message in result.stderr, result.output
    assert not (tmp_path / "o" / "tiny-vit").exists()
