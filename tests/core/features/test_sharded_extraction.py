"""Shards of `pathkit extract` on one store: concurrent, killed and restarted, identical to one process.

The soak test can be rerun by hand, e.g. 20 times in a row:

    .venv/bin/python -m tests.core.features.test_sharded_extraction --repeat 20
    .venv/bin/python -m tests.core.features.test_sharded_extraction --slides 120 --workers 6 --kills 4

Each run: W worker processes (`pathkit extract --shard k/W`) over S synthetic slides on one
store; K of them are SIGKILLed at random moments while they extract (after their first slide
is written, at a uniformly drawn delay) and restarted. Checked: every slide was written exactly
once (a watcher records the inode of every feature file; a second write would be a new inode),
every file equals a single-process run (tensors bit for bit, metadata but the creation time),
no temporary or lock file is left, and `pathkit status` reports every slide done.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from pathkit_core.features import store

REPO = Path(__file__).resolve().parents[3]
ENCODER = "tiny-vit"
BATCH = 4
_VOLATILE_META = {"created", "content_sha256"}


def _env() -> dict[str, str]:
    # One thread everywhere: every process must do the same arithmetic in the same order.
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1",
               PYTHONWARNINGS="ignore", TORCH_CPP_LOG_LEVEL="ERROR")
    for name in ("WORLD_SIZE", "RANK", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"):
        env.pop(name, None)
    return env


def _worker(tiles: Path, out: Path, shard: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pathkit_core.cli", "extract", "--encoder", ENCODER, "--manifests", str(tiles),
           "--out", str(out), "--shard", shard, "--workers", "0", "--batch-size", str(BATCH), "-q", "--json"]
    return subprocess.Popen(cmd, env=_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def reference_store(tiles: Path, out: Path) -> Path:
    """The single-process run everything is compared with (one thread, same batch size)."""
    from pathkit_core.features.extract import extract_features

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        results = extract_features(ENCODER, tiles, out, workers=0, batch_size=BATCH, progress=False)
    finally:
        torch.set_num_threads(threads)
    assert {r.status for r in results} == {"ok"}, results
    return out


class InodeWatcher:
    """Polls the encoder folder and records every inode each feature file had: an atomic
    rewrite makes a new inode, so more than one per slide means a slide was written twice."""

    def __init__(self, folder: Path, period: float = 0.003) -> None:
        self.folder, self.period = folder, period
        self.inodes: dict[str, set[int]] = defaultdict(set)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> InodeWatcher:
        self._thread.start()
        return self

    def _scan(self) -> None:
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.name.endswith(store.FEATURE_SUFFIX) and not entry.name.startswith("."):
                try:
                    self.inodes[entry.name[: -len(store.FEATURE_SUFFIX)]].add(entry.inode())
                except FileNotFoundError:
                    pass

    def _run(self) -> None:
        while not self._stop.is_set():
            self._scan()
            time.sleep(self.period)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._scan()

    def written_twice(self) -> dict[str, int]:
        return {sid: len(nodes) for sid, nodes in self.inodes.items() if len(nodes) > 1}


def assert_same_as_reference(out: Path, reference: Path) -> list[str]:
    ref_files = sorted(store.encoder_dir(reference, ENCODER).glob(f"*{store.FEATURE_SUFFIX}"))
    got_files = sorted(store.encoder_dir(out, ENCODER).glob(f"*{store.FEATURE_SUFFIX}"))
    assert [p.name for p in got_files] == [p.name for p in ref_files]
    for ref_path, got_path in zip(ref_files, got_files, strict=True):
        a, b = store.read_features(ref_path), store.read_features(got_path)
        assert torch.equal(a.features.view(torch.int16), b.features.view(torch.int16)), got_path
        assert torch.equal(a.coords, b.coords), got_path
        strip = lambda meta: {k: v for k, v in meta.items() if k not in _VOLATILE_META}  # noqa: E731
        assert strip(a.meta) == strip(b.meta), got_path
    return [p.name for p in got_files]


def leftovers(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*")
                  if p.name.endswith((".tmp", ".lock")) or ".stale." in p.name)


def status_counts(out: Path) -> dict[str, int]:
    from pathkit_core.status import collect

    (features,) = [s for s in collect(out)["stores"] if s.stage == "extract"]
    return features.counts()


def _ok_rows(stdout: str) -> set[str]:
    rows = json.loads(stdout[stdout.index("["):])
    return {r["slide_id"] for r in rows if r["status"] == "ok"}


@dataclass
class SoakReport:
    seed: int
    slides: int
    workers: int
    kills: list[str] = field(default_factory=list)  # "shard 2/4 after 3 of 11 slides, +0.31 s"
    seconds: float = 0.0


def soak(tiles: Path, reference: Path, out: Path, *, workers: int, kills: int, seed: int) -> SoakReport:
    """One soak run (see the module docstring); raises AssertionError on any violation."""
    rng = random.Random(seed)
    n_slides = len(list(tiles.glob("*.parquet")))
    report = SoakReport(seed, n_slides, workers)
    shards = [f"{k + 1}/{workers}" for k in range(workers)]
    from pathkit_core.shard import parse_shard

    owned = {s: set(parse_shard(s).select(p.stem for p in tiles.glob("*.parquet"))) for s in shards}
    victims = rng.sample([s for s in shards if len(owned[s]) >= 2], k=min(kills, workers))
    folder = store.encoder_dir(out, ENCODER)
    start = time.monotonic()
    with InodeWatcher(folder) as watcher:
        procs = {s: _worker(tiles, out, s) for s in shards}
        for shard in victims:
            proc = procs[shard]
            # Wait for the victim's first slide: from then on it is extracting, loading nothing.
            deadline = time.monotonic() + 120
            while not (set(watcher.inodes) & owned[shard]) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            delay = rng.uniform(0.0, 0.6)
            time.sleep(delay)
            done = len(set(watcher.inodes) & owned[shard])
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(30)
                report.kills.append(f"shard {shard} killed after {done} of {len(owned[shard])} slides (+{delay:.2f} s)")
            else:
                report.kills.append(f"shard {shard} finished before its kill (+{delay:.2f} s)")
            procs[shard] = _worker(tiles, out, shard)  # restarted on the same store
        finished = {}
        for shard, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, f"shard {shard}: rc {proc.returncode}\n{stderr[-3000:]}"
            finished[shard] = _ok_rows(stdout)
    report.seconds = time.monotonic() - start
    assert not watcher.written_twice(), f"written more than once: {watcher.written_twice()} ({report})"
    for shard, ok in finished.items():
        assert ok <= owned[shard], f"shard {shard} extracted slides of another shard: {ok - owned[shard]}"
    names = assert_same_as_reference(out, reference)
    assert len(names) == n_slides and set(watcher.inodes) == {n[: -len(store.FEATURE_SUFFIX)] for n in names}
    assert leftovers(out) == [], leftovers(out)
    statuses = store.read_status(out, ENCODER)
    assert len(statuses) == n_slides and {r["status"] for r in statuses.values()} == {"ok"}
    assert status_counts(out) == {"done": n_slides, "failed": 0, "pending": 0, "locked": 0}
    return report


# --------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    pytest.importorskip("pathkit_encoders.tiny_vit")
    from tests.core.features._cohort import tiled_cohort

    root = tmp_path_factory.mktemp("cohort")
    tiles = tiled_cohort(root, 40, size_px=1024)
    return {"tiles": tiles, "reference": reference_store(tiles, root / "reference")}


def test_two_shards_started_at_once_extract_every_slide_once_as_one_process_would(cohort, tmp_path, cli):
    out = tmp_path / "store"
    folder = store.encoder_dir(out, ENCODER)
    with InodeWatcher(folder) as watcher:
        procs = {s: _worker(cohort["tiles"], out, s) for s in ("1/2", "2/2")}
        outputs = {s: p.communicate(timeout=300) for s, p in procs.items()}
    for shard, proc in procs.items():
        assert proc.returncode == 0, outputs[shard][1][-3000:]
        assert f"shard {shard} (--shard): " in outputs[shard][1]
    one, two = (_ok_rows(outputs[s][0]) for s in ("1/2", "2/2"))
    assert one and two and not one & two  # disjoint, both did work
    names = assert_same_as_reference(out, cohort["reference"])
    assert len(one | two) == len(names) == 40
    assert not watcher.written_twice()
    assert leftovers(out) == []
    status = cli("status", out, "--json")
    assert status.exit_code == 0, status.output
    (features,) = [s for s in json.loads(status.stdout)["stores"] if s["stage"] == "extract"]
    assert features["counts"] == {"done": 40, "failed": 0, "pending": 0, "locked": 0}
    assert features["pending"] == [] and features["name"] == ENCODER


def test_soak_four_workers_two_killed_and_restarted(cohort, tmp_path):
    seed = int(os.environ.get("PATHKIT_SOAK_SEED", random.SystemRandom().randrange(2**31)))
    report = soak(cohort["tiles"], cohort["reference"], tmp_path / "store", workers=4, kills=2, seed=seed)
    print(report)


@pytest.mark.slow
@pytest.mark.parametrize("repeat", range(3))
def test_soak_larger_cohort_more_workers(tmp_path, repeat):
    pytest.importorskip("pathkit_encoders.tiny_vit")
    from tests.core.features._cohort import tiled_cohort

    tiles = tiled_cohort(tmp_path / "cohort", 120, size_px=1024)
    reference = reference_store(tiles, tmp_path / "reference")
    report = soak(tiles, reference, tmp_path / "store", workers=6, kills=4, seed=1000 + repeat)
    print(report)


# --------------------------------------------------------------------------- by hand


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Soak-test sharded extraction with SIGKILLs and restarts.")
    parser.add_argument("--slides", type=int, default=40)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    args = parser.parse_args(argv)
    from tests.core.features._cohort import tiled_cohort

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    with tempfile.TemporaryDirectory(prefix="pathkit-soak-") as tmp:
        root = Path(tmp)
        tiles = tiled_cohort(root / "cohort", args.slides, size_px=1024)
        reference = reference_store(tiles, root / "reference")
        failures = 0
        for i in range(args.repeat):
            try:
                report = soak(tiles, reference, root / f"store-{i}", workers=args.workers, kills=args.kills,
                              seed=seed + i)
            except AssertionError as exc:
                failures += 1
                print(f"run {i + 1}/{args.repeat} seed {seed + i}: FAILED: {exc}", flush=True)
                continue
            print(f"run {i + 1}/{args.repeat} seed {seed + i}: ok in {report.seconds:.1f} s; "
                  + "; ".join(report.kills), flush=True)
        print(f"{args.repeat - failures} of {args.repeat} runs passed")
    return 1 if failures else 0


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    sys.exit(main())
