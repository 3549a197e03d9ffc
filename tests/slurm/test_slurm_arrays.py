"""docs/scale.md's Slurm array script, run on a real single-node cluster (tests.slurm.cluster):
`pathkit tile` and `pathkit extract` over a synthetic cohort as 4 array tasks, one task
cancelled with scancel while it tiles, `pathkit status` read while the array runs, the array
resubmitted; tile manifests and QC images then equal a single process's byte for byte, features bit
for bit. A list array is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from pathkit_core.shard import Shard
from tests.core.features.test_sharded_extraction import BATCH, ENCODER, leftovers

pytestmark = pytest.mark.slow

N_SLIDES = 8
BIN = Path(sys.executable).parent

# The script of docs/scale.md section 2, for this cluster: no --gres/--mem/--time (one CPU node),
# the tiling step of its own (`pathkit tile` into a tile store) before the extraction.
SCRIPT = """#!/bin/bash
#SBATCH --job-name=pathkit-extract
#SBATCH --array=0-3
#SBATCH --cpus-per-task=1
#SBATCH --requeue
set -euo pipefail
STORE={store}
SLIDES={slides}
pathkit tile "$SLIDES" --out "$STORE/tile-store" --min-tissue-area 0 -q
pathkit extract "$SLIDES" --encoder {encoder} --out "$STORE" --workers 0 --batch-size {batch} -q
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore", TORCH_CPP_LOG_LEVEL="ERROR")
    for name in ("WORLD_SIZE", "RANK", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"):
        env.pop(name, None)
    return env


def _pathkit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "pathkit"), *args], env=_env(), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """8 synthetic slides and the single-process tile store and feature store they give."""
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    root = tmp_path_factory.mktemp("slurm-cohort")
    for i in range(N_SLIDES):
        blob = Blob(0.5, 0.5, 0.42, 0.42, texture="noise" if i % 2 else "nuclei")
        write_synthetic_slide(root / "slides" / f"case-{i:03d}.tiff", width=640, height=640, mpp=0.5, seed=i,
                              tissue=[blob])
    ref = root / "reference"
    tiled = _pathkit("tile", str(root / "slides"), "--out", str(ref / "tile-store"), "--min-tissue-area", "0", "-q")
    assert tiled.returncode == 0, tiled.stderr
    done = _pathkit("extract", str(root / "slides"), "--encoder", ENCODER, "--out", str(ref), "--workers", "0",
                    "--batch-size", str(BATCH), "-q")
    assert done.returncode == 0, done.stderr
    return root


def _manifests(folder: Path) -> dict[str, pl.DataFrame]:
    return {p.stem: pl.read_parquet(p) for p in sorted(folder.glob("*.parquet"))}


def _same_features(got: Path, reference: Path) -> list[str]:
    """Every feature file of `got` equals the reference's: tensors bit for bit, metadata but the
    creation time, the checksum over it and the manifest's path (the stores are two folders)."""
    import torch

    from pathkit_core.features import store

    names = sorted(p.name for p in store.encoder_dir(got, ENCODER).glob(f"*{store.FEATURE_SUFFIX}"))
    assert names == sorted(p.name for p in store.encoder_dir(reference, ENCODER).glob(f"*{store.FEATURE_SUFFIX}"))
    volatile = {"created", "content_sha256", "manifest_path"}
    for name in names:
        a = store.read_features(store.encoder_dir(reference, ENCODER) / name)
        b = store.read_features(store.encoder_dir(got, ENCODER) / name)
        assert torch.equal(a.features.view(torch.int16), b.features.view(torch.int16)), name
        assert torch.equal(a.coords, b.coords), name
        assert {k: v for k, v in a.meta.items() if k not in volatile} == {
            k: v for k, v in b.meta.items() if k not in volatile}, name
        assert Path(a.meta["manifest_path"]).name == Path(b.meta["manifest_path"]).name
    return names


def _shard_of(sid: str, count: int = 4) -> int:
    return next(k for k in range(count) if Shard(k, count).owns(sid))


def _cancel_while_tiling(slurm, job: str, tile_store: Path, task: int, timeout: float = 240.0) -> list[str]:
    """scancel array task `task` once it has begun tiling (a lock or manifest of one of its slides
    appears); meanwhile read `pathkit status` of the store. Returns the status outputs read."""
    ids = [f"case-{i:03d}" for i in range(N_SLIDES)]
    mine = [sid for sid in ids if _shard_of(sid) == task]
    assert mine, "the draw left the cancelled shard empty"
    statuses: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tile_store.is_dir() and not statuses:
            status = _pathkit("status", str(tile_store), "--json")  # while the array runs
            assert status.returncode == 0, status.stderr
            statuses.append(status.stdout)
        started = [sid for sid in mine if (tile_store / f".{sid}.lock").exists()
                   or (tile_store / f"{sid}.parquet").exists()]
        if started:
            slurm.run("scancel", f"{job}_{task}")
            return statuses
        time.sleep(0.02)
    raise TimeoutError(f"task {task} never started tiling: {slurm.states(job)}")


def test_array_cancelled_midway_and_resubmitted_equals_one_process(slurm, cohort, tmp_path):
    store = tmp_path / "store"
    script = tmp_path / "extract.sbatch"
    script.write_text(SCRIPT.format(store=store, slides=cohort / "slides", encoder=ENCODER, batch=BATCH))
    out = f"--output={tmp_path}/%x-%A_%a.out"
    first = slurm.sbatch(out, str(script), env=_env())
    victim = _shard_of("case-000")
    (seen,) = _cancel_while_tiling(slurm, first, store / "tile-store", victim)
    assert json.loads(seen)["stores"][0]["stage"] == "tile"
    states = slurm.wait(first)
    assert states[str(victim)] == "CANCELLED", states
    assert {t: s for t, s in states.items() if t != str(victim)} == {str(k): "COMPLETED" for k in range(4)
                                                                     if k != victim}, states
    status = _pathkit("status", str(store), "--json")
    assert status.returncode == 0, status.stderr
    features = next(s for s in json.loads(status.stdout)["stores"] if s["stage"] == "extract")
    # the cancelled task never reached extraction: its slides are not done
    assert features["counts"]["done"] == N_SLIDES - sum(_shard_of(f"case-{i:03d}") == victim for i in range(N_SLIDES))

    again = slurm.sbatch(out, str(script), env=_env())  # the whole array again: it resumes
    assert set(slurm.wait(again).values()) == {"COMPLETED"}
    assert _manifests(store / "tile-store").keys() == _manifests(cohort / "reference" / "tile-store").keys()
    for sid, frame in _manifests(store / "tile-store").items():
        assert frame.equals(_manifests(cohort / "reference" / "tile-store")[sid]), sid
    tiles, reference = store / "tile-store", cohort / "reference" / "tile-store"
    for made in sorted(tiles.glob("*.parquet")) + sorted(tiles.glob("*.png")):  # byte for byte
        assert made.read_bytes() == (reference / made.name).read_bytes(), made.name
    assert len(_same_features(store, cohort / "reference")) == N_SLIDES
    assert leftovers(store) == []
    final = json.loads(_pathkit("status", str(store), "--json").stdout)["stores"]
    assert {s["stage"]: s["counts"] for s in final} == {
        "tile": {"done": N_SLIDES, "failed": 0, "pending": 0, "locked": 0},
        "extract": {"done": N_SLIDES, "failed": 0, "pending": 0, "locked": 0}}


def test_a_list_array_is_refused_in_every_task(slurm, cohort, tmp_path):
    script = tmp_path / "extract.sbatch"
    script.write_text(SCRIPT.format(store=tmp_path / "store", slides=cohort / "slides", encoder=ENCODER, batch=BATCH))
    job = slurm.sbatch("--array=1,4,9", f"--output={tmp_path}/task-%a.out", str(script), env=_env())
    assert slurm.wait(job) == {"1": "FAILED", "4": "FAILED", "9": "FAILED"}
    for task in (1, 4, 9):
        text = (tmp_path / f"task-{task}.out").read_text()
        assert "does not number the shards" in text and "pass --shard i/N explicitly" in text, text
        assert "Traceback" not in text
    assert not (tmp_path / "store" / "tile-store").exists() or not list((tmp_path / "store" / "tile-store").glob(
        "*.parquet"))
