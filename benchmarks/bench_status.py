"""Status bookkeeping at scale: failing slides recorded, and `pathkit status` on a big store.

1. `tile_slides` over N files that are not slides (every one fails and is recorded at once, as a
   real failure is), N = 100, 1,000, 3,000: CPU seconds of this process, the ratio 3,000 / 100
   and the growth exponent (slope of log CPU against log N; 1 is linear, 2 quadratic).
2. `pathkit status --json` in a fresh process over one encoder's feature store of 100,000
   slides (100,000 status records: 90,000 ok, 5,000 failed, plus 5,000 planned; one empty
   `.safetensors` file per done slide, and 50 lock files of a dead owner): the child's CPU
   seconds, interpreter start included.

    .venv/bin/python benchmarks/bench_status.py [--status-slides 100000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def failing_slides(n: int, root: Path) -> float:
    from pathkit_core.wsi.params import TilingParams
    from pathkit_core.wsi.tiling import read_tiling_status, tile_slides

    slides = root / f"slides{n}"
    slides.mkdir()
    for i in range(n):
        (slides / f"s{i:06d}.svs").write_bytes(b"not a slide")
    out = root / f"out{n}"
    start = _cpu()
    results = tile_slides([slides], out, TilingParams(), progress=False)
    spent = _cpu() - start
    assert sum(r.status == "failed" for r in results) == n and len(read_tiling_status(out)) == n
    return spent


def build_feature_store(n: int, root: Path) -> Path:
    from pathkit_core.features import store
    from pathkit_core.status_log import append_events, slide_events

    enc = store.encoder_dir(root, "enc")
    enc.mkdir(parents=True)
    n_failed, n_planned = n // 20, n // 20
    done = n - n_failed - n_planned
    records = {f"s{i:06d}": store.status_record("ok", n_tiles=15000, sha256="0" * 64, manifest=f"/m/s{i:06d}.parquet")
               for i in range(done)}
    records |= {f"s{i:06d}": store.status_record("failed", "NaN in 3 tiles", n_tiles=15000)
                for i in range(done, done + n_failed)}
    planned = {f"s{i:06d}": {"manifest": f"/m/s{i:06d}.parquet"} for i in range(n)}
    header = {"format": store.STATUS_FORMAT, "encoder": "enc"}
    append_events(store.status_path(root, "enc"), store.status_lock_path(root, "enc"), header,
                  [{"planned": planned}, *slide_events(records)])
    for i in range(done):
        (enc / f"s{i:06d}{store.FEATURE_SUFFIX}").touch()
    for i in range(50):  # a dead owner's locks: pid 2**22 + 5 is above any pid_max default
        (enc / f".s{done + n_failed + i:06d}{store.FEATURE_SUFFIX}.lock").write_text(
            json.dumps({"pid": 2**22 + 5, "start": "gone", "host": socket.gethostname(), "time": 0}))
    return enc


def status_cpu(folder: Path) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "status", str(folder), "--json"],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    counts = json.loads(done.stdout)["stores"][0]["counts"]
    return cpu, wall, str(counts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,1000,3000")
    ap.add_argument("--status-slides", type=int, default=100_000)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        costs = {n: failing_slides(n, root) for n in sizes}
        lo, hi = sizes[0], sizes[-1]
        print("failing slides recorded (tile_slides, one status line per failure)")
        for n in sizes:
            print(f"  {n:>6} slides: {costs[n]:7.2f} s CPU  ({1e3 * costs[n] / n:.2f} ms per slide)")
        exponent = math.log(costs[hi] / costs[lo]) / math.log(hi / lo)
        print(f"  ratio {hi} / {lo}: {costs[hi] / costs[lo]:.1f}x for {hi / lo:.0f}x the slides; "
              f"growth exponent {exponent:.2f}")
        enc = build_feature_store(args.status_slides, root / "features")
        cpu, wall, counts = status_cpu(enc)
        print(f"pathkit status --json on {args.status_slides} slides: {cpu:.2f} s CPU, {wall:.2f} s wall ({counts})")


if __name__ == "__main__":
    main()
