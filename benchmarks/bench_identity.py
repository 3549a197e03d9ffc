"""Cost of keying a run by its data's content, next to the id-only key it replaced.

Before, the dataset stage keyed a run by a hash of its case ids per split; now it hashes the
content of everything the dataset read (a 1,000-row cohort table), every case with its target
and split part, and the identity of each case's slide (the sha256 of the whole file, computed once
per file version and kept in the identity cache; `pathkit_core.sources`). Both keys are computed in
the same process, interleaved, each with the in-process cache cleared, so that a slide's identity
comes from the on-disk cache as in a new process; the slides are sparse files of `--slide-mb` MiB.
The first sight of a slide reads it whole: that rate is measured on `--cold-files` files of
`--cold-mb` MiB of random bytes, with an empty cache.

    .venv/bin/python benchmarks/bench_identity.py [--cases 1000] [--slide-mb 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--slide-mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold-files", type=int, default=3)
    parser.add_argument("--cold-mb", type=int, default=64)
    args = parser.parse_args(argv)

    from pathkit_core.contracts import Case, Dataset
    from pathkit_core.run.identity import dataset_identity
    from pathkit_core.sources import ENV_IDENTITY_CACHE, _identity, file_identity
    from pathkit_core.workspace import content_hash

    class Cohort(Dataset):
        name = "bench-cohort"

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ[ENV_IDENTITY_CACHE] = str(root / "identity-cache")
        table = root / "cohort.csv"
        cases: dict[str, list[Case]] = {"train": [], "val": [], "test": []}
        with table.open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["slide_path", "patient_id", "label", "split"])
            for i in range(args.cases):
                slide = root / f"slide_{i:04d}.svs"
                with slide.open("wb") as f:
                    f.write(os.urandom(4096))
                    f.truncate(args.slide_mb * 1024 * 1024)
                part = ("train", "train", "train", "val", "test")[i % 5]
                out.writerow([slide.name, f"P{i // 2}", "tumour" if i % 3 else "normal", part])
                cases[part].append(Case(slide.stem, f"P{i // 2}", target="tumour" if i % 3 else "normal",
                                        slides=(slide,), meta={"mpp": 0.5}))
        dataset = Cohort(root)

        def old_key() -> str:
            return content_hash({name: [c.case_id for c in split] for name, split in cases.items()})

        def new_key() -> str:
            _identity.cache_clear()  # every slide identity looked up again, as in a fresh process
            return dataset_identity(dataset, cases, [table])

        t0 = time.perf_counter()
        new_key()  # first sight: every slide hashed whole (sparse: holes read as zeros) and cached
        first = time.perf_counter() - t0
        old_s, new_s = [], []
        for _ in range(args.repeat):
            for fn, times in ((old_key, old_s), (new_key, new_s)):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
        cold = []
        for i in range(args.cold_files):
            path = root / f"cold_{i}.svs"
            with path.open("wb") as f:
                for _ in range(args.cold_mb):
                    f.write(os.urandom(1024 * 1024))
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
            t0 = time.perf_counter()
            file_identity(path)
            cold.append(args.cold_mb / (time.perf_counter() - t0))
    old, new = statistics.median(old_s), statistics.median(new_s)
    print(f"{args.cases} cases, one {args.slide_mb} MiB slide each, median of {args.repeat} interleaved runs")
    print(f"  id-only key (before):          {old * 1e3:8.2f} ms")
    print(f"  content key (table + slides):  {new * 1e3:8.2f} ms")
    print(f"  cost of identity on top:       {(new - old) * 1e3:8.2f} ms (ratio {new / old:.0f}x of a "
          f"near-free key; target < 1 s)")
    print(f"  first sight of the {args.cases} sparse slides (hashed whole, then cached): {first:.2f} s")
    print(f"  first sight of real bytes: {statistics.median(cold):.0f} MiB/s (median of {args.cold_files} files of "
          f"{args.cold_mb} MiB, page cache dropped where the kernel allows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
