"""Cost of re-verifying a kept feature file when `pathkit extract` resumes: checksum + QC.

A rerun over a finished store re-reads every kept file, checks its checksum and recomputes its
QC verdict (a flipped byte, or a file of NaNs with a valid checksum, is re-extracted). This
prints the seconds per file of both steps for one slide-sized file (default 15,000 tiles x
1,536 dims float16, a UNI2-h slide), best of `--repeat`, on `--threads` torch threads:

    .venv/bin/python benchmarks/bench_resume.py [--tiles 15000] [--dim 1536] [--repeat 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, default=15000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the figure per core)")
    args = parser.parse_args(argv)

    import torch

    from pathkit_core.features import store
    from pathkit_core.features.qc import compute_qc

    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(args.tiles, args.dim, generator=gen).half()
    coords = torch.arange(2 * args.tiles).reshape(args.tiles, 2)
    with tempfile.TemporaryDirectory() as tmp:
        path = store.write_features(Path(tmp) / "slide.safetensors", feats, coords, {"status": "ok"})
        size = path.stat().st_size
        read, qc = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            ff = store.read_features(path, verify=True)
            read.append(time.perf_counter() - start)
            start = time.perf_counter()
            assert not compute_qc(ff.features, expected_tiles=args.tiles).failures
            qc.append(time.perf_counter() - start)
    per_file = min(read) + min(qc)
    print(f"one file: {args.tiles} x {args.dim} float16, {size / 1e6:.0f} MB, {args.threads} thread(s), "
          f"best of {args.repeat}")
    print(f"  read + checksum   {min(read):.3f} s")
    print(f"  QC recomputed     {min(qc):.3f} s")
    print(f"  per kept file     {per_file:.3f} s -> {10000 * per_file / 3600:.2f} h of one core per 10,000 kept "
          "slides (split over the shards that resume them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
