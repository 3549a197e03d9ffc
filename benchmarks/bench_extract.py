"""Extraction throughput: `pathkit extract` end to end (slide on disk -> features on disk) vs a bare
forward loop of the same model on pre-decoded in-memory tensors (same batch size and dtype), and
the peak memory of extraction for N and 4N tiles.

CPU (default): a ViT-S/16-sized encoder with random weights, UNI-style preprocessing
(256 px tiles at 0.5 mpp, resize + centre crop to 224).
GPU: `--device cuda --encoder uni2h` builds the full UNI2-h with random weights (bf16 autocast).

    .venv/bin/python benchmarks/bench_extract.py                 # CPU, ~1-2 minutes on 2 cores
    .venv/bin/python benchmarks/bench_extract.py --device cuda --encoder uni2h --tiles 4096 --workers 8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import PretrainedWeights, TileSpec


def _vit_small_class() -> type:
    from pathkit_encoders._vit import ViTTileEncoder

    class ViTSmallBench(ViTTileEncoder):
        """ViT-S/16 (22 M parameters), random weights: the size class the CPU target names."""

        name: ClassVar[str] = "bench-vit-s"
        description: ClassVar[str] = "benchmark ViT-S/16 with random weights (not a pathology model)"
        embed_dim: ClassVar[int] = 384
        tile_spec: ClassVar[TileSpec] = TileSpec(256, 0.5)
        precision: ClassVar[str] = "bf16"
        is_pathology_model: ClassVar[bool] = False
        timm_name: ClassVar[str] = "vit_small_patch16_224"
        resize_px: ClassVar[int] = 224
        crop_px: ClassVar[int | None] = 224
        weights: ClassVar[PretrainedWeights] = PretrainedWeights(hf_hub_id=None, filename=None)

        arch_kwargs: ClassVar[dict[str, Any]] = dict(img_size=224, num_classes=0, dynamic_img_size=True)

    return ViTSmallBench


def make_encoder(name: str, workdir: Path) -> tuple[Any, Path | None]:
    """The encoder and, for a published architecture, a random checkpoint of it."""
    if name == "vit-s":
        return _vit_small_class()(), None
    from pathkit_core.plugins import get_component

    enc = get_component("encoder", name)()
    if not enc.ships_checkpoint():
        return enc, None
    return enc, enc.random_checkpoint(workdir / f"{name}.safetensors", dtype="bfloat16")


def make_slide(workdir: Path, spec: TileSpec, n_tiles: int, tag: str) -> Path:
    """A synthetic slide tiled at `spec` into roughly `n_tiles` tissue tiles; returns the manifest folder."""
    import math

    from pathkit_core.wsi.synthetic import Blob, write_synthetic_slide
    from pathkit_core.wsi.tiling import TilingParams, tile_slides

    slide_mpp = spec.mpp
    side_tiles = math.ceil(math.sqrt(n_tiles / 0.70))  # the ellipse covers ~70% of the grid in tiles
    side = side_tiles * round(spec.tile_px * spec.mpp / slide_mpp)
    slide = write_synthetic_slide(
        workdir / f"slides-{tag}" / f"bench-{tag}.tiff", width=side, height=side, mpp=slide_mpp, seed=0,
        tissue=[Blob(0.5, 0.5, 0.5, 0.5, texture="nuclei", nuclei_density=1.0)],
    )
    out = workdir / f"tiles-{tag}"
    params = TilingParams(target_mpp=spec.mpp, tile_px=spec.tile_px, min_tissue_area_mm2=0.0)
    [result] = tile_slides([slide], out, params, progress=False)
    if result.status != "ok":
        raise SystemExit(f"tiling failed: {result.reason}")
    return out


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def bare_loop(model: Any, pixels: Any, batch_size: int, device: Any, precision: str) -> float:
    """Seconds for the forward passes alone on in-memory, already normalised tensors."""
    import torch

    from pathkit_core.features.extract import _autocast

    with torch.inference_mode():
        with _autocast(device, precision):
            model(pixels[:batch_size].to(device))  # warm-up
        _sync(device)
        start = time.perf_counter()
        for i in range(0, len(pixels), batch_size):
            with _autocast(device, precision):
                out = model(pixels[i : i + batch_size].to(device, non_blocking=True))
            out.float().cpu()
        _sync(device)
    return time.perf_counter() - start


def end_to_end(enc: Any, model: Any, manifests: Path, out: Path, batch_size: int, workers: int | None,
               device: str, dtype: str) -> float:
    """Seconds of `extract_features` from manifests on disk to feature files on disk (model
    loading excluded, as for the bare loop: it is a fixed cost, not a per-tile one)."""
    from pathkit_core.features.extract import extract_features

    enc.load = lambda *args, **kwargs: model  # the already loaded model; everything else is real
    start = time.perf_counter()
    results = extract_features(enc, manifests, out, batch_size=batch_size, workers=workers, device=device,
                               dtype=dtype, progress=False, overwrite=True)
    elapsed = time.perf_counter() - start
    bad = [r for r in results if r.status != "ok"]
    if bad:
        raise SystemExit(f"extraction failed: {bad}")
    return elapsed


class _MemorySampler:
    """Largest proportional set size (PSS) of this process and its DataLoader workers together,
    sampled every 50 ms while extraction runs: all of it, and its anonymous part (what cannot
    be reclaimed; the rest is mostly the slide file mapped by libtiff). PSS splits the pages
    shared after fork between the processes. Linux only (/proc/<pid>/smaps_rollup)."""

    def __init__(self) -> None:
        import threading

        import psutil

        self.proc = psutil.Process()
        self.peak = self.peak_anon = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _pss(self) -> tuple[int, int]:
        total = anon = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                text = Path(f"/proc/{p.pid}/smaps_rollup").read_text()
            except OSError:  # a worker may exit between listing and reading
                continue
            fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in text.splitlines()[1:]}
            total += fields.get("Pss", 0)
            anon += fields.get("Pss_Anon", 0)
        return total, anon

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            total, anon = self._pss()
            self.peak, self.peak_anon = max(self.peak, total), max(self.peak_anon, anon)

    def __enter__(self) -> _MemorySampler:
        self.before, self.before_anon = self._pss()
        self.peak, self.peak_anon = self.before, self.before_anon
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def memory_child(args: argparse.Namespace) -> None:
    """Load the model, extract the given manifests, print memory figures (MiB) as JSON."""
    import torch

    from pathkit_core.wsi.manifest import read_manifest

    if args.threads:
        torch.set_num_threads(args.threads)
    manifests = Path(args.manifests)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        enc, ckpt = make_encoder(args.encoder, work)
        model = enc.load(args.device, weights_path=ckpt)
        with _MemorySampler() as mem:
            seconds = end_to_end(enc, model, manifests, work / "features", args.batch_size, args.workers,
                                 args.device, args.dtype)
    n = sum(read_manifest(p).n_tiles for p in manifests.glob("*.parquet"))
    mib = 2**20
    print(json.dumps({"tiles": n, "peak_pss_mib": round(mem.peak / mib, 1),
                      "before_pss_mib": round(mem.before / mib, 1), "peak_anon_mib": round(mem.peak_anon / mib, 1),
                      "before_anon_mib": round(mem.before_anon / mib, 1), "seconds": round(seconds, 2)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="vit-s", help="vit-s (CPU default) or a registered encoder")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tiles", type=int, default=192)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=None, help="DataLoader workers [pathkit's default]")
    parser.add_argument("--dtype", default="auto", help="compute dtype (auto: encoder's on GPU, fp32 on CPU)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads in the main process [default]")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-memory", action="store_true", help="skip the N vs 4N peak-memory runs")
    parser.add_argument("--memory-only", action="store_true", help="only the N vs 4N peak-memory runs")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--manifests", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory_child:
        memory_child(args)
        return

    if not args.memory_only:
        speed_run(args)
    if not args.no_memory:
        memory_runs(args)


def speed_run(args: argparse.Namespace) -> None:
    """Bare forward loop vs end to end, interleaved, best of `repeats` each."""
    import numpy as np
    import torch

    from pathkit_core.features.extract import compute_dtype
    from pathkit_core.wsi.reader import TileReader

    device = torch.device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        enc, ckpt = make_encoder(args.encoder, work)
        precision = compute_dtype(enc, device, args.dtype)
        manifests = make_slide(work, enc.tile_spec, args.tiles, "speed")
        model = enc.load(str(device), weights_path=ckpt)
        reader = TileReader(next(manifests.glob("*.parquet")))
        pixels = enc.transform(np.stack(list(reader)))
        n = len(pixels)
        if device.type == "cuda":
            pixels = pixels.pin_memory()
        bare, e2e = [], []
        for _ in range(args.repeats):  # interleaved, best of each: less sensitive to noisy neighbours
            bare.append(bare_loop(model, pixels, args.batch_size, device, precision))
            e2e.append(end_to_end(enc, model, manifests, work / "features", args.batch_size, args.workers,
                                  str(device), args.dtype))
    bare_rate, e2e_rate = n / min(bare), n / min(e2e)
    from pathkit_core.features.extract import default_workers

    workers = default_workers(device) if args.workers is None else args.workers
    print(f"encoder {args.encoder} on {device} ({precision}), {n} tiles of {enc.tile_spec.tile_px} px, "
          f"batch {args.batch_size}, {workers} worker(s), torch threads {torch.get_num_threads()}")
    print(f"  bare forward loop (in-memory tensors): {bare_rate:8.1f} tiles/s")
    print(f"  pathkit extract end to end:            {e2e_rate:8.1f} tiles/s")
    print(f"  ratio end-to-end / bare:               {e2e_rate / bare_rate:8.3f}   (target >= 0.85)")


def memory_runs(args: argparse.Namespace) -> None:
    """Peak memory of extraction for N and 4N tiles, each in a fresh process."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        enc, _ = make_encoder(args.encoder, Path(tmp)) if args.encoder == "vit-s" else (None, None)
        spec = enc.tile_spec if enc is not None else _spec_of(args.encoder)
        rows = []
        for tiles in (args.tiles, 4 * args.tiles):
            # Slides are made here so that the child's peak is extraction alone.
            folder = make_slide(Path(tmp), spec, tiles, f"mem{tiles}")
            cmd = [sys.executable, __file__, "--memory-child", "--manifests", str(folder),
                   "--encoder", args.encoder, "--device", args.device, "--batch-size", str(args.batch_size),
                   *([] if args.workers is None else ["--workers", str(args.workers)]), "--dtype", args.dtype,
                   "--threads", str(args.threads or torch.get_num_threads())]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for r in rows:
        print(f"  peak PSS (main + workers), {r['tiles']:6d} tiles: {r['peak_pss_mib']:8.1f} MiB, anonymous "
              f"{r['peak_anon_mib']:8.1f} MiB (+{r['peak_anon_mib'] - r['before_anon_mib']:.1f} over the "
              f"loaded model; {r['seconds']:.1f} s)")
    print(f"  peak memory ratio {rows[1]['tiles']} / {rows[0]['tiles']} tiles: total "
          f"{rows[1]['peak_pss_mib'] / rows[0]['peak_pss_mib']:.3f}, anonymous "
          f"{rows[1]['peak_anon_mib'] / rows[0]['peak_anon_mib']:.3f}   (1.0 = independent of tile count)")


def _spec_of(name: str) -> TileSpec:
    from pathkit_core.plugins import get_component

    return get_component("encoder", name).tile_spec


if __name__ == "__main__":
    main()
