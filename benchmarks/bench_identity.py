"""Cost of keying a run by its data's content, next to the id-only key it replaced.

Before, the dataset stage keyed a run by a hash of its case ids per split; now it hashes the
content of everything the dataset read (a 1,000-row cohort table), every case with its target
and split part, and the identity of each case's slide (whole sha256 up to 8 MiB, else size plus
the head, tail and four blocks between; `pathkit_core.sources`). Both keys are computed in the
same process, interleaved, each from a cold identity cache; the slides are sparse files of
`--slide-mb` MiB (the identity reads the same few blocks whatever a slide's size):

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
    args = parser.parse_args(argv)

    from pathkit_core.contracts import Case, Dataset
    from pathkit_core.run.identity import dataset_identity
    from pathkit_core.sources import _identity
    from pathkit_core.workspace import content_hash

    class Cohort(Dataset):
        name = "bench-cohort"

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
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
            _identity.cache_clear()  # every slide identity read again, as in a fresh process
            return dataset_identity(dataset, cases, [table])

        old_s, new_s = [], []
        for _ in range(args.repeat):
            for fn, times in ((old_key, old_s), (new_key, new_s)):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
    old, new = statistics.median(old_s), statistics.median(new_s)
    print(f"{args.cases} cases, one {args.slide_mb} MiB slide each, median of {args.repeat} interleaved runs")
    print(f"  id-only key (before):          {old * 1e3:8.2f} ms")
    print(f"  content key (table + slides):  {new * 1e3:8.2f} ms")
    print(f"  cost of identity on top:       {(new - old) * 1e3:8.2f} ms (ratio {new / old:.0f}x of a "
          f"near-free key; target < 1 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
