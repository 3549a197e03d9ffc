"""Stitched segmentation: the cost of overlapping windows, and inference memory against slide size.

1. Overhead: one synthetic liver slide (6144 x 4608 px at 0.5 um/px) segmented end to end (tiling,
   tiny-vit extraction, a kNN head, streaming stitch, every output file) with 50 % overlap and with
   none, in alternating pairs; the time ratio is printed beside the ratio of windows (the goal: the
   overhead is the extra windows' share, not more).
2. Memory: slides of 10,000 / 30,000 / 100,000 px square at 0.25 um/px, windows of 224 px at
   0.5 um/px with 50 % overlap; each slide's windows (synthetic 64-d features, as many as the
   tissue holds) streamed through the kNN head, stitched and written (masks, pyramidal TIFFs,
   GeoJSON, overlay) in a fresh process whose peak RSS is reported (the goal: flat).
3. Against MONAI (`--monai`, skipped with a message when MONAI is not installed; nothing is installed
   here): the 30,000 px slide of part 2, the same kNN head on the same window features, stitched by
   pathkit (the tiling's tissue windows, every output file written) and by MONAI's
   `sliding_window_inference` (every window of the grid, background included, as MONAI cannot skip
   any; the probability map in memory, nothing written). MONAI runs on the cell grid: the input is the
   (1, 1, rows, cols) grid of cells, windows of 2 x 2 cells every cell (224 px windows at 50 % overlap),
   `mode="constant"` (pathkit's "average"), `with_coord` so that the predictor looks up each window's
   features, which it classifies with the same head. Pairs alternate; the printed ratio is MONAI's time
   over pathkit's. The maps are compared: pathkit on every window of the grid (the same windows as
   MONAI, tissue weighting off) must give MONAI's map over all cells; pathkit on its tissue windows
   gives MONAI's map on every cell whose windows all hold tissue.

    .venv/bin/python benchmarks/bench_segmentation.py [--pairs 3] [--sizes 10000,30000,100000] [--cache DIR]
    .venv/bin/python benchmarks/bench_segmentation.py --monai --pairs 5 --skip-overhead --sizes ""
    .venv/bin/python benchmarks/bench_segmentation.py --before /path/to/older/checkout --skip-overhead --sizes ""

4. Before and after (`--before ROOT`): part 3's pathkit run with every output file (the 30,000 px
   slide's tissue windows) timed in alternating fresh processes, one with the code of the
   checkout ROOT (its own benchmarks/bench_segmentation.py `segment`), one with this one's; each
   process times three runs after an untimed one and reports their median.

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


def segment(model, feature_file: Path, run_dir: Path, tile_spec, tiling, class_names,
            stitch: dict | None = None) -> dict:
    """Predict, stitch and write one slide's outputs, as `pathkit run` does; returns its record."""
    from pathkit_core.training.bags import BagDataset, BagSpec
    from pathkit_core.training.trainer import TrainConfig
    from pathkit_tasks.segmentation.task import SegmentationTask

    task = SegmentationTask()
    items = BagDataset([BagSpec("slide", (feature_file,), None, {"stitch": stitch} if stitch else {})])
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
    from pathkit_core.wsi.tiling import TilingParams, tile_slides
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    slide = cache / f"square-{size}.tiff"
    if not slide.exists():
        blobs = [Blob(0.35, 0.5, 0.25, 0.35, texture="flat"),
                 Blob(0.72, 0.45, 0.18, 0.3, colour=(180, 110, 175), texture="flat")]
        write_synthetic_slide(slide, width=size, height=size, mpp=0.25, tissue=blobs)
    params = TilingParams(target_mpp=0.5, tile_px=224, overlap=0.5, pad_edges=True, min_tissue_fraction=0.1,
                          min_tissue_area_mm2=0.0)
    tiled = tile_slides([slide], cache / "tiles", params, progress=False)
    if tiled[0].code == "stale-manifest":  # tiled by older slide code: the cache is re-made
        tiled = tile_slides([slide], cache / "tiles", params, progress=False, overwrite=True)
    if tiled[0].manifest_path is None:
        raise SystemExit(tiled[0].reason)
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


# --------------------------------------------------------------------------- 3. against MONAI


def _full_grid_features(size: int, cache: Path):
    """(features of every window of the padded grid (rows, cols, 64) float16, the tissue windows'
    manifest path): each window's features near the centre of its vertical band, as in part 2; the
    tissue windows' rows are the same numbers in pathkit's feature file."""
    import numpy as np
    import torch

    from pathkit_core.wsi.manifest import read_manifest

    slide, features = prepare_memory_slide(size, cache)
    from pathkit_core.features.store import read_feature_meta

    manifest_path = Path(read_feature_meta(features)["manifest_path"])
    meta = read_manifest(manifest_path).meta
    stride0 = float(meta["stride0"])
    n = int(np.ceil((size - float(meta["size0"])) / stride0)) + 1  # windows per side, padded edges
    xs = np.round(np.arange(n) * stride0).astype(np.int64)
    band = np.minimum(xs * 7 // size, 6)
    rng = np.random.default_rng(size + 1)
    noise = torch.from_numpy(1.5 * rng.standard_normal((n, n, 64), dtype=np.float32))  # mixed votes
    grid = (class_centres(64)[torch.from_numpy(band)][None, :, :] + noise).half()  # (rows, cols, 64)
    return grid, xs, manifest_path


def _write_window_features(path: Path, grid, xs, manifest_path: Path, keep) -> None:
    """A pathkit feature file of the grid's windows where `keep` (rows, cols) is true."""
    import numpy as np
    import torch

    from pathkit_core.features.store import write_features

    rows, cols = np.nonzero(keep)
    coords = torch.from_numpy(np.stack([xs[cols], xs[rows]], axis=1))
    feats = grid[torch.from_numpy(rows), torch.from_numpy(cols)]
    write_features(path, feats, coords, {"slide_id": path.stem, "manifest_path": str(manifest_path),
                                         "tile_px": "224"})


def _tissue_windows(size: int, cache: Path):
    """(grid features, window positions, manifest path, (rows, cols) tissue windows, the feature
    file of the tissue windows, written into the cache)."""
    import numpy as np

    from pathkit_core.wsi.manifest import read_manifest

    grid, xs, manifest_path = _full_grid_features(size, cache)
    n = len(xs)
    coords = read_manifest(manifest_path).coords()
    tissue = np.zeros((n, n), dtype=bool)
    tissue[np.searchsorted(xs, coords[:, 1]), np.searchsorted(xs, coords[:, 0])] = True
    tissue_file = cache / f"monai-tissue-{size}.safetensors"
    _write_window_features(tissue_file, grid, xs, manifest_path, tissue)
    return grid, xs, manifest_path, tissue, tissue_file


def _stored_map(run_dir: Path):
    import numpy as np

    with np.load(run_dir / "segmentation" / "maps" / "slide.npz") as data:
        return data["probabilities"].astype(np.float32), data["covered"]


def monai_side_by_side(pairs: int, cache: Path, size: int = 30000) -> None:
    import numpy as np
    import torch

    try:
        from monai.inferers import sliding_window_inference
    except ImportError:
        print("monai: not installed, skipped (a separate environment with `pip install monai` compares it)")
        return
    from pathkit_core.contracts import TileSpec

    torch.set_num_threads(1)
    grid, xs, manifest_path, tissue, tissue_file = _tissue_windows(size, cache)
    n = len(xs)
    every_file = cache / f"monai-every-{size}.safetensors"
    _write_window_features(every_file, grid, xs, manifest_path, np.ones((n, n), dtype=bool))
    model = knn_head(64).eval()
    classes = [f"C{k}" for k in range(7)]
    tiling = {"overlap": 0.5, "pad_edges": True, "min_tissue_fraction": 0.1}
    spec = TileSpec(224, 0.5)
    flat = grid.reshape(n * n, 64)

    def predictor(window, slices):  # (B, 1, 2, 2) cells and their slices -> (B, K, 2, 2)
        idx = torch.tensor([s[2].start * n + s[3].start for s in slices])
        with torch.inference_mode():
            probs = model.probabilities(flat[idx].float())
        return probs[:, :, None, None].expand(-1, -1, *window.shape[2:]).contiguous()

    cells = n + 1  # a window is 2 x 2 cells, one every cell: n windows cover n + 1 cells

    def run_monai():
        image = torch.zeros((1, 1, cells, cells))
        with torch.inference_mode():
            out = sliding_window_inference(image, (2, 2), 1024, predictor, overlap=0.5, mode="constant",
                                           with_coord=True)
        return out[0].permute(1, 2, 0).numpy()

    def run_pathkit(features: Path, stitch: dict):
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            t0 = time.perf_counter()
            segment(model, features, Path(tmp), spec, tiling, classes, stitch)
            seconds = time.perf_counter() - t0
            return seconds, _stored_map(Path(tmp))

    plain = {"tissue_weighting": False}
    contenders = {
        "pathkit, tissue windows, every output": lambda: run_pathkit(tissue_file, plain),
        "pathkit, tissue windows, no overlay": lambda: run_pathkit(tissue_file, {**plain, "overlay": False}),
        "pathkit, every window, no overlay": lambda: run_pathkit(every_file, {**plain, "overlay": False}),
    }
    print(f"monai: {size:,} px slide at 0.25 um/px, {n} x {n} = {n * n:,} windows on the padded grid, "
          f"{int(tissue.sum()):,} of them tissue windows (pathkit's), kNN head on 64-d features, one torch thread; "
          f"{pairs} alternating pairs after an untimed one")
    times: dict[str, list[float]] = {"monai": [], **{k: [] for k in contenders}}
    maps: dict[str, object] = {}
    for pair in range(pairs + 1):
        order = list(contenders) if pair % 2 else list(reversed(contenders))
        t0 = time.perf_counter()
        maps["monai"] = run_monai()
        if pair:
            times["monai"].append(time.perf_counter() - t0)
        for name in order:
            seconds, maps[name] = contenders[name]()
            if pair:
                times[name].append(seconds)
        print(f"  pair {pair}{' (warm-up)' if not pair else ''}: load {Path('/proc/loadavg').read_text().split()[0]}, "
              + ", ".join(f"{k.split(',')[0] if k == 'monai' else k.removeprefix('pathkit, ')} "
                          f"{(times[k][-1] if pair else float('nan')):.3f} s" for k in times))
    ref = maps["monai"]
    for name in contenders:
        mine, covered = maps[name]
        ratios = [m / p for m, p in zip(times["monai"], times[name], strict=True)]
        med = sorted(ratios)[len(ratios) // 2]
        print(f"  {name}: median {sorted(times[name])[len(ratios) // 2]:.3f} s; MONAI / pathkit per pair "
              f"{', '.join(f'{r:.2f}' for r in ratios)} -> median {med:.2f}x")
        # cells whose every covering window is in pathkit's set: all covered cells with every window
        same = covered.copy()
        if "tissue windows" in name:
            full = np.zeros((cells, cells), dtype=bool)
            full[:n, :n] |= tissue
            inner = np.ones((cells, cells), dtype=bool)
            for dy in (0, 1):
                for dx in (0, 1):
                    shifted = np.zeros((cells, cells), dtype=bool)
                    shifted[dy:dy + n, dx:dx + n] = tissue
                    inner &= shifted
            same &= inner
        h, w = mine.shape[:2]
        diff = np.abs(mine[same[:h, :w]] - ref[:h, :w][same[:h, :w]])
        diff16 = np.abs(mine[same[:h, :w]] - ref[:h, :w][same[:h, :w]].astype(np.float16).astype(np.float32))
        print(f"    map vs MONAI on {int(same.sum()):,} cells: max abs difference {diff.max():.2e} "
              f"(pathkit stores float16; against MONAI's map rounded to float16: {diff16.max():.2e})")
    print(f"  median MONAI {sorted(times['monai'])[len(times['monai']) // 2]:.3f} s")


# --------------------------------------------------------------------------- 4. before and after

_TIMED_CHILD = """
import json, os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, os.path.join(sys.argv[1], "benchmarks"))
import bench_segmentation as b
import pathkit_tasks
import torch
from pathkit_core.contracts import TileSpec
if not pathkit_tasks.__file__.startswith(sys.argv[1]):
    raise SystemExit(f"pathkit_tasks came from {pathkit_tasks.__file__}, not {sys.argv[1]}")
torch.set_num_threads(1)
model = b.knn_head(64).eval()
times = []
for i in range(4):
    with tempfile.TemporaryDirectory(dir=sys.argv[2]) as tmp:
        t0 = time.perf_counter()
        b.segment(model, Path(sys.argv[3]), Path(tmp), TileSpec(224, 0.5),
                  {"overlap": 0.5, "pad_edges": True, "min_tissue_fraction": 0.1},
                  [f"C{k}" for k in range(7)], {"tissue_weighting": False})
        if i:
            times.append(time.perf_counter() - t0)
print(json.dumps(sorted(times)[1]))
"""


def before_and_after(before: Path, pairs: int, cache: Path, size: int = 30000) -> None:
    *_, features = _tissue_windows(size, cache)
    roots = {"before": before.resolve(), "after": HERE.parents[1]}

    def timed(root: Path) -> float:
        path = os.pathsep.join(str(root / sub) for sub in ("", "plugins/encoders", "plugins/generators",
                                                           "plugins/datasets", "plugins/metrics"))
        out = subprocess.run([sys.executable, "-c", _TIMED_CHILD, str(root), str(cache), str(features)], check=True,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, cwd=root)
        return float(out.stdout.strip().splitlines()[-1])

    print(f"before and after: pathkit on the {size:,} px slide's tissue windows, every output file; {before} against "
          f"this checkout, alternating fresh processes, {pairs} pairs")
    ratios = []
    for pair in range(pairs):
        order = ("before", "after") if pair % 2 == 0 else ("after", "before")
        got = {side: timed(roots[side]) for side in order}
        ratios.append(got["before"] / got["after"])
        print(f"  pair {pair + 1}: load {Path('/proc/loadavg').read_text().split()[0]}, before {got['before']:.3f} s, "
              f"after {got['after']:.3f} s, before / after {ratios[-1]:.2f}")
    print(f"  median before / after {sorted(ratios)[len(ratios) // 2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "pathkit-bench-segmentation")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--monai", action="store_true", help="the side by side against MONAI's sliding window")
    parser.add_argument("--before", type=Path, default=None, help="an older checkout to time part 3 against")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PATHKIT_DIRECT_TIFF", "1")
    if args.child is not None:
        memory_child(args.child, args.cache)
        return
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}")
    if args.monai:
        monai_side_by_side(args.pairs, args.cache)
    if args.before is not None:
        before_and_after(args.before, args.pairs, args.cache)
    if not args.skip_overhead:
        overhead(args.pairs, args.cache)
    memory([int(s) for s in args.sizes.split(",") if s], args.cache)
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
