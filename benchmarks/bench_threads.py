"""Torch intra-op threads for the tiny models of the CI suites: one against two, side by side.

Times training steps (forward, backward, gradient clipping, AdamW) of the gma-mil head on a bag of
`--tiles` x `--dim` features, the size of the synthetic GOLDMARK cohort of the all-tasks suite,
with 1 and with 2 torch threads, alternating the two `--rounds` times in one process so that both
see the same machine load; prints the median seconds per step of each and their ratio. On a busy
two-core machine (other processes on both cores) two threads wait on each other at every
operator; on a quiet one they gain little on a model this small. The CI suite's shards therefore
run with one thread each (docs/comparisons.md, "The CI suite"). The load average is printed with
the figures.

    .venv/bin/python benchmarks/bench_threads.py [--steps 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiles", type=int, default=120)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round and thread count")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    import torch
    from pathkit_generators.gma_mil import GatedAttentionMIL

    from pathkit_core.contracts import GeneratorSpec

    torch.manual_seed(0)
    model = GatedAttentionMIL().build(GeneratorSpec(task="slide-classification", feature_dim=args.dim,
                                                    train_targets=[0, 1]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-4)
    batch = model.collate([{"case_id": "bag", "features": torch.randn(args.tiles, args.dim), "target": 1}])

    def step() -> None:
        loss = model.training_step(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    model.train()
    step()  # torch's one-off allocations and lazy imports, untimed
    before = torch.get_num_threads()
    per_step: dict[int, list[float]] = {1: [], 2: []}
    try:
        for _ in range(args.rounds):
            for threads in (1, 2):
                torch.set_num_threads(threads)
                start = time.perf_counter()
                for _ in range(args.steps):
                    step()
                per_step[threads].append((time.perf_counter() - start) / args.steps)
    finally:
        torch.set_num_threads(before)
    one, two = (statistics.median(per_step[t]) for t in (1, 2))
    load = os.getloadavg()[0]
    print(f"gma-mil step, bag {args.tiles} x {args.dim}, {args.steps} steps x {args.rounds} rounds, "
          f"load average {load:.1f} on {os.cpu_count()} cores")
    print(f"  1 thread : {one * 1000:8.1f} ms/step")
    print(f"  2 threads: {two * 1000:8.1f} ms/step")
    print(f"  ratio 2 threads / 1 thread: {two / one:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
