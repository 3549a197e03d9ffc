"""Evidence selection for the largest PathoArgus question: time and peak memory of `pathoargus` and
`flat-topk` (K = 512 of N = 388,637 features, D = 768 float16, M = 10,000 candidates), against the
time to read those features from the feature store. Runs alternate (read, flat-topk, pathoargus)
so that the machine's load hits all three alike; the ratios are of medians.

    .venv/bin/python benchmarks/bench_selection.py [--rounds 5] [--n 388637] [--dim 768]

The question is laid out as an ESG-sized case: three candidate sets of three slides each, slides of
unequal size (coords on each slide's tile grid). Relevance is the learned projection (768 -> 256,
hashed n-gram question embedding, projected into the feature space) with random weights: the same
arithmetic as a trained one. "read" is the store read of the question's files (page cache warm, as
after extraction) with and without the content checksum the pipeline checks once per file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _vm(field: str) -> int:
    """VmRSS / VmHWM of this process in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _peak_of(fn):
    """(seconds, peak resident bytes above the resident size before `fn`) of one call."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        pass
    before = _vm("VmRSS")
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    return seconds, max(0, _vm("VmHWM") - before)


def write_question(folder: Path, n: int, dim: int, seed: int = 0) -> list[Path]:
    """Nine slides (three sets of three) summing to `n` features, written to the store."""
    import torch

    from pathkit_core.features.store import write_features

    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.3, 1.7, size=9)
    sizes = np.floor(weights / weights.sum() * n).astype(int)
    sizes[0] += n - int(sizes.sum())
    paths = []
    for j, size in enumerate(sizes):
        side = int(np.ceil(np.sqrt(size)))
        idx = np.arange(size)
        coords = np.stack([idx % side * 448, idx // side * 448], axis=1)
        feats = torch.from_numpy(rng.standard_normal((size, dim), dtype=np.float32)).half()
        path = folder / f"slide{j}.safetensors"
        write_features(path, feats, torch.from_numpy(coords), {"slide_id": f"slide{j}", "tile_px_level0": "448"})
        paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=388_637)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--candidates", type=int, default=10_000)
    args = parser.parse_args()

    import torch
    from pathkit_generators._knowledge_bank import HashedNgramEmbedder
    from pathkit_generators._selection.relevance import LearnedRelevance
    from pathkit_generators.selectors import FlatTopKSelector, PathoArgusSelector

    from pathkit_core.features.store import load_feature_file
    from pathkit_tasks.vqa.selection import EvidencePool

    torch.set_num_threads(1)
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}  (cpus: {os.cpu_count()})")
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_question(Path(tmp), args.n, args.dim)
        size_mb = sum(p.stat().st_size for p in paths) / 2**20
        print(f"question: N = {args.n:,} features x D = {args.dim} float16 in 9 slides / 3 sets "
              f"({size_mb:.0f} MiB on disk), K = {args.budget}, M = {args.candidates:,}")

        def read(verify: bool):
            # what the VQA items do per question (pathkit_tasks.vqa.evidence.load_pool): every
            # file of the case read and its rows concatenated in slide order
            loaded = [load_feature_file(p, verify=verify) for p in paths]
            features = torch.cat([torch.as_tensor(f.features) for f in loaded])
            coords = torch.cat([torch.as_tensor(f.coords).to(torch.int64) for f in loaded]).numpy()
            slide = np.concatenate([np.full(len(f.features), j) for j, f in enumerate(loaded)])
            return features, coords, slide

        features, coords, slide = read(False)
        pool = EvidencePool(features, coords, slide, (0, 0, 0, 1, 1, 1, 2, 2, 2),
                            "Which candidate set contains tumour with lymphovascular invasion?",
                            ("Set 1", "Set 2", "Set 3", "None of the sets"), "largest")
        embedder = HashedNgramEmbedder(256).fit([pool.question, *pool.choices])
        rng = np.random.default_rng(1)
        relevance = LearnedRelevance(rng.standard_normal((256, args.dim)).astype(np.float32) / args.dim ** 0.5,
                                     np.zeros(args.dim, np.float32), np.ones(args.dim, np.float32), embedder.idf,
                                     {"benchmark": True})
        selectors = {"flat-topk": FlatTopKSelector(relevance="learned"),
                     "pathoargus": PathoArgusSelector(relevance="learned")}
        for selector in selectors.values():
            selector._relevance = relevance
            selector.select(pool, budget=args.budget, candidates=args.candidates)  # warm-up

        times: dict[str, list[float]] = {k: [] for k in ("read", "read+verify", *selectors)}
        peaks: dict[str, list[int]] = {k: [] for k in times}
        for _ in range(args.rounds):
            for name, fn in (("read", lambda: read(False)), ("read+verify", lambda: read(True)),
                             *((n, lambda s=s: s.select(pool, budget=args.budget, candidates=args.candidates))
                               for n, s in selectors.items())):
                seconds, peak = _peak_of(fn)
                times[name].append(seconds)
                peaks[name].append(peak)
        chosen = {n: s.select(pool, budget=args.budget, candidates=args.candidates) for n, s in selectors.items()}

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{'step':<13}{'median s':>10}{'min s':>9}{'peak MiB':>10}   (over {args.rounds} alternating rounds)")
    for name in times:
        print(f"{name:<13}{med[name]:>10.3f}{min(times[name]):>9.3f}{max(peaks[name]) / 2**20:>10.1f}")
    for name, selection in chosen.items():
        print(f"{name}: kept {len(selection.indices)} features, scored {selection.n_scored}, "
              f"per set {selection.per_set}")
    print("\nratios (median over median):")
    for name in selectors:
        print(f"  {name} / read = {med[name] / med['read']:.3f}   {name} / read+verify = "
              f"{med[name] / med['read+verify']:.3f}")
    print(f"  pathoargus / flat-topk = {med['pathoargus'] / med['flat-topk']:.2f}")
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
