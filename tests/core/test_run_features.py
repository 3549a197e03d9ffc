"""The run's feature stage: the QC gate on feature files and waiting for another process's extraction."""

from __future__ import annotations

import threading

import pytest

from pathkit_core.contracts import Case, PathkitError
from pathkit_core.run.spec import RunSpec


def test_an_all_nan_feature_file_is_refused_by_the_qc_gate(tmp_path):
    import torch

    from pathkit_core.features.store import write_features
    from pathkit_core.run.features import feature_stage

    good, bad = tmp_path / "good.safetensors", tmp_path / "bad.safetensors"
    write_features(good, torch.randn(5, 4), torch.zeros(5, 2), {"slide_id": "good"})
    # a valid checksum over NaN values: only the statistics can tell
    write_features(bad, torch.full((5, 4), float("nan")), torch.zeros(5, 2), {"slide_id": "bad"})
    cases = {"train": [Case("good", "p1", target="a", features=(good,)),
                       Case("bad", "p2", target="b", features=(bad,))], "val": [], "test": []}
    spec = RunSpec(dataset="d", encoder="e", generator="g", workdir=tmp_path / "ws")
    with pytest.raises(PathkitError) as err:
        feature_stage(spec, None, tmp_path / "ws", cases, {}, "d", log=lambda _: None)
    assert "bad (bad.safetensors: failed QC: 20 NaN value(s)" in str(err.value) and "--skip-missing" in str(err.value)
    spec.skip_missing = True
    stage = feature_stage(spec, None, tmp_path / "ws", cases, {}, "d", log=lambda _: None)
    assert set(stage.inputs) == {"good"} and "failed QC" in stage.skipped["bad"]
    # the verdict is cached in the workspace by the file's content identity
    assert len(list((tmp_path / "ws" / "qc").glob("*.json"))) == 2


def test_a_run_waits_for_slides_another_process_is_extracting(tmp_path, monkeypatch):
    from pathkit_encoders.tiny_vit import TinyViTEncoder

    import pathkit_core.run.features as features
    from pathkit_core.workspace import FileLock
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    slides = []
    for i in range(2):
        path = tmp_path / "slides" / f"w{i}.tiff"
        write_synthetic_slide(path, width=512, height=512, mpp=1.0, seed=i, tissue=[Blob(0.5, 0.5, 0.45, 0.45)])
        slides.append(path)
    cases = [Case(f"w{i}", f"w{i}", target="x", slides=(p,)) for i, p in enumerate(slides)]
    work = tmp_path / "ws"
    # another process (here: this one, from a thread) holds the extraction lock of slide w0
    lock = FileLock(work / "features" / "tiny-vit" / ".w0.safetensors.lock").acquire()
    waits: list[float] = []

    real_sleep = features.time.sleep

    def sleep(seconds):  # the other process finishes while this run waits
        if threading.current_thread() is not threading.main_thread():
            return real_sleep(seconds)  # the locks' heartbeat thread keeps its own pace
        waits.append(seconds)
        lock.release()

    monkeypatch.setattr(features.time, "sleep", sleep)
    messages: list[str] = []
    spec = RunSpec(dataset="d", encoder="tiny-vit", generator="g", workdir=work)
    usable, failed = features._slide_inputs(spec, TinyViTEncoder, work, cases, {}, messages.append)
    assert set(usable) == {"w0", "w1"} and not failed
    assert any("waiting for 1 slide(s) another process is extracting" in m for m in messages)
    assert waits == [features.LOCK_POLL_SECONDS]


def test_sharded_runs_extract_their_own_slides_and_a_last_run_scores(fresh_registry, cli, tmp_path, monkeypatch):
    """Two `pathkit run --shard i/2` share the stores; the run without a shard finds every slide done."""
    from pathkit_core.features.store import usable_feature_files
    from pathkit_core.shard import parse_shard
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide
    from tests.core.test_run_identity import N_SLIDES, identity_plugin

    for i in range(N_SLIDES):
        colour = (120, 60, 140) if i % 2 else (230, 170, 210)
        write_synthetic_slide(tmp_path / "slides" / f"s{i}.tiff", width=512, height=512, mpp=1.0, seed=i,
                              tissue=[Blob(0.5, 0.5, 0.45, 0.45, colour=colour)])
    fresh_registry({"id": identity_plugin(), "tiny": "pathkit_encoders.tiny_vit"})
    work = tmp_path / "ws"
    args = ("run", "-d", "id-slides", "-e", "tiny-vit", "-g", "id-head", "--dataset-root", tmp_path / "slides",
            "--workdir", work, "--cpu")
    first = cli(*args, "--shard", "1/2")
    assert first.exit_code == 0, first.stderr
    mine = {f"s{i}" for i in range(N_SLIDES) if parse_shard("1/2").owns(f"s{i}")}
    assert set(usable_feature_files(work / "features", "tiny-vit")) == mine
    out = " ".join(first.stdout.split())
    assert "run without --shard to train and score" in out and "test scores" not in out
    # a Slurm array task takes its shard from the environment
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "1")
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "2")
    monkeypatch.setenv("SLURM_ARRAY_TASK_MIN", "0")
    second = cli(*args)
    assert second.exit_code == 0, second.stderr
    files = usable_feature_files(work / "features", "tiny-vit")
    assert len(files) == N_SLIDES
    written = {sid: path.stat().st_mtime_ns for sid, path in files.items()}
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID")
    last = cli(*args)
    assert last.exit_code == 0 and "test scores" in last.stdout
    # the last run extracted nothing again
    assert {sid: p.stat().st_mtime_ns for sid, p in usable_feature_files(work / "features", "tiny-vit").items()} \
        == written
