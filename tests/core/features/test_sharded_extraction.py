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

With `faults`, that many more workers meet a filesystem that fails midway (ENOSPC or EIO after a
drawn number of slides, `_faulty_fs`): each must stop with one line naming the file, leave nothing
half written (checked before any later run cleans up), and its slides are done by the next run.
With `foreign_locks`, three slides carry locks of a process on another host (`ForeignLocks`):
the one whose heartbeat stopped past `HEARTBEAT_GRACE` is taken over, the one whose heartbeat
stopped more recently only once it has aged past that timeout, the one whose heartbeat goes on
never. By hand, e.g. 20 times in a row:

    .venv/bin/python -m tests.core.features.test_sharded_extraction --faults 1 --foreign-locks --repeat 20
"""

from __future__ import annotations

import contextlib
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


def _worker(tiles: Path, out: Path, shard: str, fault: tuple[str, int] | None = None) -> subprocess.Popen:
    """`pathkit extract --shard SHARD`; with `fault` (errno name, files written first) its filesystem
    fails midway (tests.core.features._faulty_fs)."""
    start = "import tests.core.features._faulty_fs; " if fault else ""
    cmd = [sys.executable, "-c", f"{start}from pathkit_core.cli import main; main()", "extract", "--encoder",
           ENCODER, "--manifests", str(tiles), "--out", str(out), "--shard", shard, "--workers", "0",
           "--batch-size", str(BATCH), "-q", "--json"]
    env = _env()
    if fault:
        env.update(PATHKIT_FAULT=fault[0], PATHKIT_FAULT_AFTER=str(fault[1]))
    return subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


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
    faults: list[str] = field(default_factory=list)  # "shard 3/4: ENOSPC after 2 of 10 slides"
    locks: list[str] = field(default_factory=list)  # what became of the other host's locks
    seconds: float = 0.0


class ForeignLocks:
    """Locks of slides written as a process on another host would write them (docs/scale.md,
    "Locks"): one whose heartbeat stopped longer ago than `HEARTBEAT_GRACE` (its node died: taken
    over), one whose heartbeat stopped less long ago (not yet: taken over only once that much time
    has passed), and one whose heartbeat goes on (a thread here touches it, as its owner's heartbeat
    thread would, however long it has been held: never taken)."""

    def __init__(self, folder: Path, slides: list[str], period: float = 0.2) -> None:
        from pathkit_core.workspace import HEARTBEAT_GRACE, HEARTBEAT_SECONDS

        self.dead, self.stopping, self.alive = slides
        self.folder, self.period, self.grace = folder, period, HEARTBEAT_GRACE
        self._stop = threading.Event()
        folder.mkdir(parents=True, exist_ok=True)
        for sid, stopped_ago in ((self.dead, HEARTBEAT_GRACE + 5), (self.stopping, HEARTBEAT_GRACE - 120),
                                 (self.alive, 0.0)):
            path = self.path(sid)
            path.write_text(json.dumps({"pid": 4242, "start": "other-boot:1", "host": "pathkit-soak-other-node",
                                        "time": time.time() - 7 * 3600, "heartbeat": HEARTBEAT_SECONDS}))
            self.age(sid, stopped_ago)
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def path(self, sid: str) -> Path:
        return self.folder / f".{sid}{store.FEATURE_SUFFIX}.lock"

    def age(self, sid: str, seconds: float) -> None:
        then = time.time() - seconds
        os.utime(self.path(sid), (then, then))

    def _beat(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(FileNotFoundError):
                os.utime(self.path(self.alive))
            time.sleep(self.period)

    def owner_finishes(self) -> None:
        """The live owner ends its work: heartbeat stops, lock released."""
        self._stop.set()
        self._thread.join(5)
        self.path(self.alive).unlink(missing_ok=True)


def soak(tiles: Path, reference: Path, out: Path, *, workers: int, kills: int, seed: int, faults: int = 0,
         foreign_locks: bool = False) -> SoakReport:
    """One soak run (see the module docstring); raises AssertionError on any violation."""
    rng = random.Random(seed)
    n_slides = len(list(tiles.glob("*.parquet")))
    report = SoakReport(seed, n_slides, workers)
    shards = [f"{k + 1}/{workers}" for k in range(workers)]
    from pathkit_core.shard import parse_shard

    owned = {s: set(parse_shard(s).select(p.stem for p in tiles.glob("*.parquet"))) for s in shards}
    # The other host's locks sit on three slides of one shard that neither dies nor fails; a
    # failing worker needs 3 slides (one before the fault, the one it fails on, one after).
    big = [s for s in shards if len(owned[s]) >= 3]
    assert len(big) >= faults + foreign_locks, f"too few shards of 3+ slides for {faults} fault(s) and locks: {owned}"
    lock_shard = rng.choice(big) if foreign_locks else None
    faulty = rng.sample([s for s in big if s != lock_shard], k=faults)
    pool = [s for s in shards if len(owned[s]) >= 2 and s != lock_shard and s not in faulty]
    victims = rng.sample(pool, k=min(kills, len(pool)))
    folder = store.encoder_dir(out, ENCODER)
    locks = ForeignLocks(folder, rng.sample(sorted(owned[lock_shard]), 3)) if lock_shard else None
    start = time.monotonic()
    with InodeWatcher(folder) as watcher:
        procs = {s: _worker(tiles, out, s) for s in shards if s not in faulty}
        fault_plan = {s: (rng.choice(["ENOSPC", "EIO"]), rng.randrange(1, len(owned[s]) - 1)) for s in faulty}
        procs.update({s: _worker(tiles, out, s, fault_plan[s]) for s in faulty})
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
            if shard in faulty:
                code, after = fault_plan[shard]
                # the failing disk stops the worker with one line naming the file, no traceback
                lines = stderr.strip().splitlines()
                assert proc.returncode == 2 and lines and lines[-1].startswith("error: ") and "Traceback" not in \
                    stderr, f"shard {shard} ({code}): rc {proc.returncode}\n{stderr[-3000:]}"
                expected = "no space left on the device" if code == "ENOSPC" else "input/output error"
                assert expected in lines[-1], lines[-1]
                written = set(watcher.inodes) & owned[shard]
                assert len(written) == after, f"shard {shard}: {len(written)} slides written, not {after}"
                report.faults.append(f"shard {shard}: {code} after {after} of {len(owned[shard])} slides")
                continue
            assert proc.returncode == 0, f"shard {shard}: rc {proc.returncode}\n{stderr[-3000:]}"
            finished[shard] = _ok_rows(stdout)
        # Nothing half written anywhere: the failed worker removed its own temporaries and locks
        # (no later run has cleaned up after it yet); only the other host's live locks remain.
        kept = [] if locks is None else [str(locks.path(s).relative_to(out)) for s in (locks.stopping, locks.alive)]
        assert leftovers(out) == sorted(kept), leftovers(out)
        if locks is not None:
            assert locks.dead in watcher.inodes, "a lock whose heartbeat stopped past the timeout was not taken"
            for sid in (locks.stopping, locks.alive):
                assert sid not in watcher.inodes, f"the lock of {sid} was taken while its heartbeat was recent"
            report.locks.append(f"{locks.dead}: taken (heartbeat stopped {locks.grace + 5:.0f} s ago)")
            # Time passes: the stopped heartbeat passes the timeout; the live one goes on.
            locks.age(locks.stopping, locks.grace + 1)
        # The next run: the failed shard (its disk works again) and the shards holding those locks.
        again = set(faulty) | ({lock_shard} if lock_shard else set())
        for shard, proc in {s: _worker(tiles, out, s) for s in sorted(again)}.items():
            stdout, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, f"shard {shard} (next run): rc {proc.returncode}\n{stderr[-3000:]}"
            finished[shard] = finished.get(shard, set()) | _ok_rows(stdout)
        if locks is not None:
            assert locks.stopping in watcher.inodes, "a lock whose heartbeat stopped past the timeout was not taken"
            assert locks.alive not in watcher.inodes and locks.path(locks.alive).exists(), \
                "a lock whose heartbeat goes on was taken"
            report.locks.append(f"{locks.stopping}: taken once its heartbeat had stopped {locks.grace + 1:.0f} s")
            report.locks.append(f"{locks.alive}: never taken while its heartbeat went on")
            locks.owner_finishes()
            stdout, stderr = (proc := _worker(tiles, out, lock_shard)).communicate(timeout=300)
            assert proc.returncode == 0, f"shard {lock_shard} (after the owner finished): {stderr[-3000:]}"
            finished[lock_shard] |= _ok_rows(stdout)
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


def _tiled_cohort(tmp_path_factory, n_slides: int) -> dict[str, Path]:
    pytest.importorskip("pathkit_encoders.tiny_vit")
    from tests.core.features._cohort import tiled_cohort

    root = tmp_path_factory.mktemp("cohort")
    tiles = tiled_cohort(root, n_slides, size_px=1024)
    return {"tiles": tiles, "reference": reference_store(tiles, root / "reference")}


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """40 slides: the soaks (`make test-suite`) kill and restart workers among them."""
    return _tiled_cohort(tmp_path_factory, 40)


@pytest.fixture(scope="module")
def small_cohort(tmp_path_factory):
    """12 slides: enough for two shards started at once to both have work (the default suite)."""
    return _tiled_cohort(tmp_path_factory, 12)


def test_two_shards_started_at_once_extract_every_slide_once_as_one_process_would(small_cohort, tmp_path, cli):
    cohort = small_cohort
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
    assert len(one | two) == len(names) == 12
    assert not watcher.written_twice()
    assert leftovers(out) == []
    status = cli("status", out, "--json")
    assert status.exit_code == 0, status.output
    (features,) = [s for s in json.loads(status.stdout)["stores"] if s["stage"] == "extract"]
    assert features["counts"] == {"done": 12, "failed": 0, "pending": 0, "locked": 0}
    assert features["pending"] == [] and features["name"] == ENCODER


@pytest.mark.slow  # multi-process: `make test-suite`, which CI runs after `make test`
def test_soak_four_workers_two_killed_and_restarted(cohort, tmp_path):
    seed = int(os.environ.get("PATHKIT_SOAK_SEED", random.SystemRandom().randrange(2**31)))
    report = soak(cohort["tiles"], cohort["reference"], tmp_path / "store", workers=4, kills=2, seed=seed)
    print(report)


@pytest.mark.slow  # multi-process: `make test-suite`, which CI runs after `make test`
def test_soak_with_a_failing_disk_and_another_hosts_locks(cohort, tmp_path):
    """A Slurm array over a shared filesystem: one worker's writes fail midway (ENOSPC or EIO) and
    another node's locks are taken over only once their heartbeat has stopped for the documented
    timeout (kills are the test above's; with -m slow, the larger soak has all three)."""
    seed = int(os.environ.get("PATHKIT_SOAK_SEED", random.SystemRandom().randrange(2**31)))
    report = soak(cohort["tiles"], cohort["reference"], tmp_path / "store", workers=3, kills=0, faults=1,
                  foreign_locks=True, seed=seed)
    print(report)


@pytest.mark.slow
@pytest.mark.parametrize("repeat", range(3))
def test_soak_larger_cohort_more_workers(tmp_path, repeat):
    pytest.importorskip("pathkit_encoders.tiny_vit")
    from tests.core.features._cohort import tiled_cohort

    tiles = tiled_cohort(tmp_path / "cohort", 120, size_px=1024)
    reference = reference_store(tiles, tmp_path / "reference")
    report = soak(tiles, reference, tmp_path / "store", workers=6, kills=3, faults=2, foreign_locks=True,
                  seed=1000 + repeat)
    print(report)


# --------------------------------------------------------------------------- by hand


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Soak-test sharded extraction with SIGKILLs and restarts.")
    parser.add_argument("--slides", type=int, default=40)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--faults", type=int, default=0, help="workers whose filesystem fails midway")
    parser.add_argument("--foreign-locks", action="store_true", help="plant another host's locks")
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
                              faults=args.faults, foreign_locks=args.foreign_locks, seed=seed + i)
            except AssertionError as exc:
                failures += 1
                print(f"run {i + 1}/{args.repeat} seed {seed + i}: FAILED: {exc}", flush=True)
                continue
            print(f"run {i + 1}/{args.repeat} seed {seed + i}: ok in {report.seconds:.1f} s; "
                  + "; ".join(report.kills + report.faults + report.locks), flush=True)
        print(f"{args.repeat - failures} of {args.repeat} runs passed")
    return 1 if failures else 0


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    sys.exit(main())
