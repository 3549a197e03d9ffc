"""MIL training throughput: one gma-mil epoch reading bags from the feature store vs from memory.

Prints, side by side in one run: the seconds of one training epoch over `--bags` bags of
`--tiles` x `--dim` float16 features read through `BagDataset` from pathkit feature files
(checksummed on every read, evicted from the page cache first with `--cold`), the same loop
over bags already in memory, their ratio (memory / store; >= 0.8 means the store is not the
bottleneck), and the resident memory of the store loop at 10, 25, 50, 75 and 100% of the epoch
(it must not grow with the number of bags).

The in-memory loop cycles over a pool of `--pool` distinct bags: the compute per step is the
same, and holding 500 bags of 5,000 x 1,536 float32 values (15 GB) is not needed to time it.

    .venv/bin/python benchmarks/bench_mil.py                      # the specified size (7.7 GB of files)
    .venv/bin/python benchmarks/bench_mil.py --bags 40 --threads 2  # a quick run
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def write_bags(folder: Path, n: int, tiles: int, dim: int, cold: bool) -> list[Path]:
    import torch

    from pathkit_core.features.store import write_features

    folder.mkdir(parents=True, exist_ok=True)
    coords = torch.stack(torch.meshgrid(torch.arange(tiles), torch.arange(1), indexing="ij"), -1).reshape(-1, 2)
    paths = []
    g = torch.Generator().manual_seed(0)
    for i in range(n):
        path = folder / f"bench-{i:04d}.safetensors"
        if not path.exists():
            write_features(path, torch.randn(tiles, dim, generator=g, dtype=torch.float32).half(), coords * 256,
                           {"slide_id": path.stem, "encoder": "bench"})
        if cold:
            evict(path)
        paths.append(path)
    return paths


def train_epoch(model, optimizer, loader, n_steps: int, marks: dict[int, float] | None = None) -> float:
    import torch

    model.train()
    start = time.perf_counter()
    for step, batch in enumerate(loader, start=1):
        loss = model.training_step(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if marks is not None and step in marks:
            marks[step] = rss_mb()
        if step >= n_steps:
            break
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bags", type=int, default=500)
    parser.add_argument("--tiles", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--pool", type=int, default=8, help="distinct in-memory bags the memory loop cycles over")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers (the trainer's default is 0)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the feature files (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the feature files")
    parser.add_argument("--warm", dest="cold", action="store_false", help="leave files in the page cache")
    args = parser.parse_args()

    import torch
    from pathkit_generators.gma_mil import GatedAttentionMIL

    from pathkit_core.contracts import GeneratorSpec
    from pathkit_core.training.bags import BagDataset, BagSpec

    if args.threads:
        torch.set_num_threads(args.threads)
    folder = args.dir or Path(tempfile.mkdtemp(prefix="pathkit-bench-mil-"))
    t0 = time.perf_counter()
    paths = write_bags(folder, args.bags, args.tiles, args.dim, args.cold)
    size_gb = sum(p.stat().st_size for p in paths) / 1e9
    print(f"wrote {args.bags} bags of {args.tiles} x {args.dim} float16 ({size_gb:.2f} GB) in "
          f"{time.perf_counter() - t0:.1f} s to {folder} (cold reads: {args.cold})")

    def fresh_model():
        torch.manual_seed(0)
        model = GatedAttentionMIL().build(GeneratorSpec(task="slide-classification", feature_dim=args.dim,
                                                       train_targets=[0, 1]))
        return model, torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-4)

    store = BagDataset([BagSpec(p.stem, (p,), i % 2) for i, p in enumerate(paths)])
    pool = [store[i] for i in range(min(args.pool, args.bags))]
    for p in paths[: len(pool)]:
        if args.cold:
            evict(p)  # the pool was read from these files; the store loop must read them from disk again
    # one untimed step first, so that neither loop pays torch's one-off allocations
    model, optimizer = fresh_model()
    train_epoch(model, optimizer, iter([model.collate([pool[0]])]), 1)
    model, optimizer = fresh_model()
    loader = torch.utils.data.DataLoader(store, batch_size=1, shuffle=True, collate_fn=model.collate,
                                         num_workers=args.workers, generator=torch.Generator().manual_seed(0))
    marks = {max(1, round(args.bags * f)): 0.0 for f in (0.1, 0.25, 0.5, 0.75, 1.0)}
    rss_before = rss_mb()
    t_store = train_epoch(model, optimizer, loader, args.bags, marks)

    model, optimizer = fresh_model()
    in_memory = (model.collate([pool[i % len(pool)]]) for i in range(args.bags))
    t_memory = train_epoch(model, optimizer, in_memory, args.bags)

    print(f"store epoch   {t_store:8.2f} s  ({t_store / args.bags * 1000:.1f} ms/bag, workers={args.workers})")
    print(f"memory epoch  {t_memory:8.2f} s  ({t_memory / args.bags * 1000:.1f} ms/bag)")
    print(f"ratio memory/store = {t_memory / t_store:.3f}  (target >= 0.8)")
    steps = sorted(marks)
    print(f"store-loop RSS (MB): before {rss_before:.0f}; "
          + "; ".join(f"after {s} bags {marks[s]:.0f}" for s in steps)
          + f"; growth from {steps[0]} to {steps[-1]} bags: {marks[steps[-1]] - marks[steps[0]]:+.0f} MB"
          + f", over the second half: {marks[steps[-1]] - marks[steps[2]]:+.0f} MB")
    if not args.keep and args.dir is None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
