"""Stitched segmentation: the cost of overlapping windows, and inference memory against slide size.

1. Overhead: one synthetic liver slide (6144 x 4608 px at 0.5 um/px) segmented end to end (tiling,
   tiny-vit extraction, a kNN head, streaming stitch, every output file) with 50 % overlap and with
   none, in alternating pairs; the time ratio is printed beside the ratio of windows (the goal: the
   overhead is the extra windows' share, not more).
2. Memory: slides of 10,000 / 30,000 / 100,000 px square at 0.25 um/px, windows of 224 px at
   0.5 um/px with 50 % overlap; each slide's windows (synthetic 64-d features, as many as the
   tissue holds) streamed through the kNN head, stitched and written (masks, pyramidal TIFFs,
   GeoJSON, overlay) in a fresh process whose peak RSS is reported (the goal: flat).

    .venv/bin/python benchmarks/bench_segmentation.py [--pairs 3] [--sizes 10000,30000,100000] [--cache DIR]

Slides are written once into the cache folder (the 100,000 px one takes a minute or two and ~350 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def class_centres(dim: int, n_classes: int = 7, seed: int = 0):
    import torch

    return torch.randn(n_classes, dim, generator=torch.Generator().manual_seed(seed))


def knn_head(dim: int, n_classes: int = 7, per_class: int = 40, seed: int = 0):
    """A kNN head (the `knn` generator) over training features around `class_centres`."""
    import torch
    from pathkit_generators.knn import KNearestNeighbours

    from pathkit_core.contracts import GeneratorSpec

    g = torch.Generator().manual_seed(seed + 1)
    centres = class_centres(dim, n_classes, seed)
    items = [{"case_id": f"p{k}_{i}", "features": (centres[k] + 0.3 * torch.randn(dim, generator=g))[None],
              "target": k} for k in range(n_classes) for i in range(per_class)]
    spec = GeneratorSpec(task="segmentation", feature_dim=dim, class_names=tuple(f"C{k}" for k in range(n_classes)),
                         train_items=items)
    return KNearestNeighbours().build(spec)


def facts(run_dir: Path, tile_spec, tiling):
    from pathkit_core.contracts import RunFacts

    return RunFacts(workdir=run_dir, run_dir=run_dir, encoder="bench", tile_spec=tile_spec, tiling=tiling)


def segment(model, feature_file: Path, run_dir: Path, tile_spec, tiling, class_names) -> dict:
    """Predict, stitch and write one slide's outputs, as `pathkit run` does; returns its record."""
    from pathkit_core.tasks.segmentation import SegmentationTask
    from pathkit_core.training.bags import BagDataset, BagSpec
    from pathkit_core.training.trainer import TrainConfig

    task = SegmentationTask()
    items = BagDataset([BagSpec("slide", (feature_file,), None, {})])
    f = facts(run_dir, tile_spec, tiling)
    raw = task.predict(model, items, f, batch_size=4096, cfg=TrainConfig(cpu=True, progress=False))
    record = {**raw["slide"], "foreground": 0, "foreground_class": class_names[0], "class_names": list(class_names),
              "threshold": None}
    task.write_predictions(run_dir / "predictions.jsonl", {"slide": record}, ["slide"], f)
    return record


# --------------------------------------------------------------------------- 1. overhead


def overhead(pairs: int, cache: Path) -> None:
    from pathkit_datasets._liver_synthetic import liver_layout, write_liver_slide
    from pathkit_encoders.tiny_vit import TinyViTEncoder

    from pathkit_core.features.extract import extract_features
    from pathkit_core.wsi.tiling import TilingParams, tile_slides

    slide = cache / "liver-201.tiff"
    if not slide.exists():
        write_liver_slide(slide, liver_layout(201), seed=201)
    encoder = TinyViTEncoder()
    model = knn_head(encoder.embed_dim)
    spec = encoder.tile_spec
    times: dict[float, list[float]] = {0.0: [], 0.5: []}
    windows: dict[float, int] = {}
    parts: dict[float, list[dict]] = {0.0: [], 0.5: []}
    for pair in range(pairs + 1):  # pair 0 warms up (first extraction, imports, caches): not timed
        for overlap in (0.5, 0.0):
            tiling = {"overlap": overlap, "pad_edges": True, "min_tissue_fraction": 0.1}
            with tempfile.TemporaryDirectory(dir=cache) as tmp:
                run_dir = Path(tmp)
                t0 = time.perf_counter()
                params = TilingParams(target_mpp=spec.mpp, tile_px=spec.tile_px, **tiling)
                tiled = tile_slides([slide], run_dir / "tiles", params, progress=False)
                t1 = time.perf_counter()
                extract_features(encoder, [tiled[0].manifest_path], run_dir / "features", batch_size=256,
                                 workers=1, device="cpu")
                t2 = time.perf_counter()
                segment(model, run_dir / "features" / encoder.name / "liver-201.safetensors", run_dir, spec, tiling,
                        [f"C{k}" for k in range(7)])
                t3 = time.perf_counter()
            windows[overlap] = tiled[0].n_tiles
            if pair:
                times[overlap].append(t3 - t0)
                parts[overlap].append({"tile": t1 - t0, "extract": t2 - t1, "segment": t3 - t2})
    ratios = [a / b for a, b in zip(times[0.5], times[0.0], strict=True)]
    print(f"overhead: liver slide 6144 x 4608 px at 0.5 um/px, tiny-vit (128 px at 1 um/px), kNN head; {pairs} "
          "alternating pairs after an untimed one")
    for overlap in (0.0, 0.5):
        mean = {k: sum(p[k] for p in parts[overlap]) / pairs for k in ("tile", "extract", "segment")}
        print(f"  overlap {overlap:.0%}: {windows[overlap]} windows, {min(times[overlap]):.2f} s best "
              f"(tiling {mean['tile']:.2f}, extraction {mean['extract']:.2f}, predict+stitch+outputs "
              f"{mean['segment']:.2f} s mean)")
    print(f"  windows ratio {windows[0.5] / windows[0.0]:.2f}; time ratio per pair "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (median {sorted(ratios)[len(ratios) // 2]:.2f})")


# --------------------------------------------------------------------------- 2. memory


def prepare_memory_slide(size: int, cache: Path) -> tuple[Path, Path]:
    """A size x size slide at 0.25 um/px, its tiling (224 px at 0.5 um/px, 50 %, padded edges) and
    a synthetic feature file of its windows: near the class centre of the band of the slide it lies
    in (seven vertical bands), so that the class map has regions, as a real one does."""
    import numpy as np
    import torch

    from pathkit_core.features.store import write_features
    from pathkit_core.wsi.manifest import read_manifest
    from pathkit_core.wsi.synthetic import Blob, write_synthetic_slide
    from pathkit_core.wsi.tiling import TilingParams, tile_slides

    slide = cache / f"square-{size}.tiff"
    if not slide.exists():
        blobs = [Blob(0.35, 0.5, 0.25, 0.35, texture="flat"),
                 Blob(0.72, 0.45, 0.18, 0.3, colour=(180, 110, 175), texture="flat")]
        write_synthetic_slide(slide, width=size, height=size, mpp=0.25, tissue=blobs)
    params = TilingParams(target_mpp=0.5, tile_px=224, overlap=0.5, pad_edges=True, min_tissue_fraction=0.1,
                          min_tissue_area_mm2=0.0)
    tiled = tile_slides([slide], cache / "tiles", params, progress=False)
    manifest = read_manifest(tiled[0].manifest_path)
    features = cache / f"square-{size}.safetensors"
    if not features.exists():
        n = manifest.n_tiles
        rng = np.random.default_rng(size)
        band = np.minimum((manifest.coords()[:, 0] * 7 // size).astype(np.int64), 6)
        noise = torch.from_numpy(0.3 * rng.standard_normal((n, 64), dtype=np.float32))
        feats = (class_centres(64)[torch.from_numpy(band)] + noise).half()
        write_features(features, feats, manifest.coords(), {"slide_id": slide.stem, "manifest_path":
                                                            str(tiled[0].manifest_path), "tile_px": "224"})
    return slide, features


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def memory_child(size: int, cache: Path) -> None:
    """In a fresh process: stream, stitch and write one slide; print its windows and peak RSS."""
    from pathkit_core.contracts import TileSpec
    from pathkit_core.features.store import read_feature_meta

    model = knn_head(64)
    base = _rss_kb("VmRSS")
    # reset the peak so that it counts from here, not the imports' transient allocations
    Path("/proc/self/clear_refs").write_text("5")
    features = cache / f"square-{size}.safetensors"
    tiling = {"overlap": 0.5, "pad_edges": True, "min_tissue_fraction": 0.1}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        record = segment(model, features, Path(tmp), TileSpec(224, 0.5), tiling, [f"C{k}" for k in range(7)])
    seconds = time.perf_counter() - t0
    peak = _rss_kb("VmHWM")
    grid = record["grid"]
    print(json.dumps({"size": size, "windows": int(read_feature_meta(features)["n_tiles"]), "seconds": seconds,
                      "cells": [grid["width"], grid["height"]], "peak_rss_mb": peak / 1024,
                      "after_imports_mb": base / 1024}))


def memory(sizes: list[int], cache: Path) -> None:
    print("memory: square slides at 0.25 um/px, 224 px windows at 0.5 um/px, 50 % overlap, 64-d features; "
          "predict + stitch + outputs in a fresh process each")
    for size in sizes:
        prepare_memory_slide(size, cache)
        out = subprocess.run([sys.executable, str(HERE), "--child", str(size), "--cache", str(cache)], check=True,
                             capture_output=True, text=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        map_mb = row["cells"][0] * row["cells"][1] * 8 * 4 / 2**20
        print(f"  {size:>7,} px: {row['windows']:>7,} windows, map {row['cells'][0]} x {row['cells'][1]} cells "
              f"({map_mb:.1f} MB), peak RSS {row['peak_rss_mb']:.0f} MB "
              f"({row['peak_rss_mb'] - row['after_imports_mb']:.0f} MB above the process before it), "
              f"{row['seconds']:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "pathkit-bench-segmentation")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--skip-overhead", action="store_true")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PATHKIT_DIRECT_TIFF", "1")
    if args.child is not None:
        memory_child(args.child, args.cache)
        return
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}")
    if not args.skip_overhead:
        overhead(args.pairs, args.cache)
    memory([int(s) for s in args.sizes.split(",") if s], args.cache)
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
