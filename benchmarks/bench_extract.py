"""Extraction throughput, side by side in one run: `pathkit extract` end to end (slide on disk ->
features on disk) against a bare forward loop of the same model on pre-decoded, pre-normalised
in-memory tensors; resampled slides (0.499 and 0.2527 um/px) against an exact one (0.5 um/px);
the real CMU-1-Small-Region slide (0.499 um/px, every tile resampled 257 -> 256 px) when
PATHKIT_REALDATA is set; lazyslide's `feature_extraction` with the same model when lazyslide
is installed; then the peak memory of extraction for N and 4N tiles.

The contenders run in rounds, each round every contender once, the order reversed every other
round; each ratio is taken within a round (neighbouring runs see the same foreign load) and the
median of the rounds is printed with its spread (min-max) and the load average.

CPU (default): a ViT-S/16-sized encoder with random weights, UNI-style preprocessing (256 px
tiles at 0.5 mpp, resize + centre crop to 224), float32.
GPU: `--device cuda --encoder uni2h` builds the full UNI2-h (681 M parameters) with random
weights, bf16 autocast, and prints the absolute tiles/s as well.

    .venv/bin/python benchmarks/bench_extract.py                          # CPU, ~5 minutes on 2 cores
    .venv/bin/python benchmarks/bench_extract.py --tiles 48 --rounds 3 --no-memory   # quick
    .venv/bin/python benchmarks/bench_extract.py --device cuda --encoder uni2h --tiles 8192 \\
        --batch-size 256 --no-memory                                      # one GPU
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PretrainedWeights, TileSpec

ROOT = Path(__file__).resolve().parents[1]


def _vit_small_class() -> type:
    """ViT-S/16 (22 M parameters), random weights: the size class the CPU target names, as a row
    of the encoder table."""
    from pathkit_encoders import EncoderSpec, encoder_class

    spec = EncoderSpec(
        name="bench-vit-s", description="benchmark ViT-S/16 with random weights (not a pathology model)",
        embed_dim=384, tile_spec=TileSpec(256, 0.5), precision="bf16", is_pathology_model=False,
        weights=PretrainedWeights(hf_hub_id=None, filename=None),
        interpolation="bilinear", resize_px=224, crop_px=224,
        timm_name="vit_small_patch16_224", arch=dict(img_size=224, num_classes=0),
    )
    return encoder_class(spec, __name__, "ViTSmallBench")


def make_encoder(name: str, workdir: Path) -> tuple[Any, Path | None]:
    """The encoder and, for a published architecture, a random checkpoint of it."""
    if name == "vit-s":
        return _vit_small_class()(), None
    from pathkit_core.plugins import get_component

    enc = get_component("encoder", name)()
    if not enc.ships_checkpoint():
        return enc, None
    return enc, enc.random_checkpoint(workdir / f"{name}.safetensors", dtype="bfloat16")


def make_slide(workdir: Path, spec: TileSpec, n_tiles: int, tag: str, slide_mpp: float | None = None) -> Path:
    """A synthetic slide at `slide_mpp` tiled at `spec` into roughly `n_tiles` tissue tiles;
    returns the manifest folder."""
    import math

    from pathkit_core.wsi.tiling import TilingParams, tile_slides
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    slide_mpp = slide_mpp or spec.mpp
    side_tiles = math.ceil(math.sqrt(n_tiles / 0.70))  # the ellipse covers ~70% of the grid in tiles
    side = side_tiles * math.ceil(spec.tile_px * spec.mpp / slide_mpp)
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


def tile_cmu1(workdir: Path, spec: TileSpec, min_tiles: int) -> Path | None:
    """CMU-1-Small-Region (0.499 um/px) tiled at `spec`, with an overlap giving >= `min_tiles`."""
    root = os.environ.get("PATHKIT_REALDATA")
    slide = Path(root) / "slides" / "CMU-1-Small-Region.svs" if root else None
    if slide is None or not slide.is_file():
        return None
    from pathkit_core.wsi.tiling import TilingParams, tile_slides

    out = workdir / "tiles-cmu1"
    for overlap in (0.0, 0.5, 0.75, 0.875):  # 30 tiles without overlap: too few to time
        params = TilingParams(target_mpp=spec.mpp, tile_px=spec.tile_px, min_tissue_area_mm2=0.0, overlap=overlap)
        [result] = tile_slides([slide], out, params, progress=False, overwrite=True)
        if result.status == "ok" and result.n_tiles >= min_tiles:
            break
    return out


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def bare_loop(model: Any, pixels: Any, batch_size: int, device: Any, precision: str) -> float:
    """Seconds for the forward passes alone on in-memory, already normalised tensors."""
    import torch

    from pathkit_core.features.inference import autocast

    with torch.inference_mode():
        with autocast(device, precision):
            model(pixels[:batch_size].to(device))  # warm-up
        _sync(device)
        start = time.perf_counter()
        for i in range(0, len(pixels), batch_size):
            with autocast(device, precision):
                out = model(pixels[i : i + batch_size].to(device, non_blocking=True))
            out.float().cpu()
        _sync(device)
    return time.perf_counter() - start


def end_to_end(enc: Any, model: Any, manifests: Path, out: Path, args: argparse.Namespace,
               compile: bool = False) -> float:  # noqa: A002 - torch's name
    """Seconds of `extract_features` from manifests on disk to feature files on disk (model
    loading excluded, as for the bare loop: it is a fixed cost, not a per-tile one)."""
    from pathkit_core.features.extract import extract_features

    enc.load = lambda *a, **k: model  # the already loaded model; everything else is real
    start = time.perf_counter()
    results = extract_features(enc, manifests, out, batch_size=args.batch_size, workers=args.workers,
                               device=args.device, dtype=args.dtype, progress=False, overwrite=True,
                               compile=compile)
    elapsed = time.perf_counter() - start
    bad = [r for r in results if r.status != "ok"]
    if bad:
        raise SystemExit(f"extraction failed: {bad}")
    return elapsed


def _n_tiles(folder: Path) -> int:
    from pathkit_core.wsi.manifest import read_manifest

    return sum(read_manifest(p).n_tiles for p in folder.glob("*.parquet"))


# --------------------------------------------------------------------------- lazyslide


def lazyslide_contender(model: Any, enc: Any, slide: Path, args: argparse.Namespace
                        ) -> tuple[Callable[[], float], int] | None:
    """lazyslide's `feature_extraction` of the same slide's tissue tiles with the same model and
    preprocessing, and its tile count; None (with the reason printed) when lazyslide is absent
    or fails. Its tiling is done once, outside the timings, as pathkit's is, over the whole slide
    (its tissue finder misses the synthetic ellipse; the rates are per tile, and the model is
    over 95% of a tile's cost); its features stay in memory (pathkit's side writes checksummed
    files)."""
    try:
        import lazyslide as zs
    except ImportError:
        print("  lazyslide: not installed, skipped (pip install lazyslide -c constraints.txt to compare)")
        return None
    spec = enc.tile_spec
    try:
        wsi = zs.open_wsi(str(slide))
        zs.pp.tile_tissues(wsi, spec.tile_px, mpp=spec.mpp, tissue_key=None)
        n = len(wsi.shapes["tiles"])
    except Exception as exc:  # noqa: BLE001 - a third-party API; report and go on
        print(f"  lazyslide: tiling failed ({type(exc).__name__}: {exc}), skipped")
        return None

    def transform(tile: Any) -> Any:  # one HWC uint8 tile at a time, in lazyslide's dataset
        return enc.transform(tile)[0]

    def run() -> float:
        start = time.perf_counter()
        zs.tl.feature_extraction(wsi, model=model, model_name="bench", transform=transform,
                                 batch_size=args.batch_size, num_workers=args.workers or 0,
                                 device=args.device, amp=args.device != "cpu", pbar=False)
        return time.perf_counter() - start

    try:
        run()  # warm-up, and the check that the API is the one this script knows
    except Exception as exc:  # noqa: BLE001
        print(f"  lazyslide: feature_extraction failed ({type(exc).__name__}: {exc}), skipped")
        return None
    return run, n


# --------------------------------------------------------------------------- rounds


def run_rounds(contenders: dict[str, tuple[Callable[[], float], int]], ratios: dict[str, tuple[str, str]],
               rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]], list[float]]:
    """Rates (tiles/s) of every contender per round and the per-round ratios of rates."""
    names = list(contenders)
    rates: dict[str, list[float]] = {k: [] for k in names}
    pair: dict[str, list[float]] = {k: [] for k in ratios}
    loads = []
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        for name in names if r % 2 == 0 else names[::-1]:
            fn, n = contenders[name]
            rates[name].append(n / fn())
        for label, (num, den) in ratios.items():
            pair[label].append(rates[num][-1] / rates[den][-1])
        print(f"  round {r + 1} (load {loads[-1]:.2f}): " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in rates.items())
              + " tiles/s; " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in pair.items()), flush=True)
    loads.append(os.getloadavg()[0])
    return rates, pair, loads


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f}; " + \
        ", ".join(f"{v:.3f}" for v in values) + ")"


@contextlib.contextmanager
def bench_encoder(args: argparse.Namespace) -> Iterator[tuple[Any, Path, Any, Path | None, Any]]:
    """(device, a temporary work folder, the encoder, its checkpoint, the compute dtype) of `args`."""
    import torch

    from pathkit_core.features.extract import compute_dtype

    device = torch.device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        enc, ckpt = make_encoder(args.encoder, work)
        yield device, work, enc, ckpt, compute_dtype(enc, device, args.dtype)


def speed_run(args: argparse.Namespace) -> None:
    import torch

    from pathkit_core.features.extract import default_workers
    from pathkit_core.wsi.reader import TileReader

    with bench_encoder(args) as (device, work, enc, ckpt, precision):
        spec = enc.tile_spec
        exact = make_slide(work, spec, args.tiles, "exact")
        model = enc.load(str(device), weights_path=ckpt)
        reader = TileReader(next(exact.glob("*.parquet")))
        pixels = enc.transform(reader.read_batch(range(len(reader))))
        n = len(pixels)
        if device.type == "cuda":
            pixels = pixels.pin_memory()
        contenders: dict[str, tuple[Callable[[], float], int]] = {
            "bare": (lambda: bare_loop(model, pixels, args.batch_size, device, precision), n),
            "e2e": (lambda: end_to_end(enc, model, exact, work / "f-exact", args), n),
        }
        ratios = {"end to end / bare forward": ("e2e", "bare")}
        if not args.no_resampled:
            for mpp in (0.499, 0.2527):
                folder = make_slide(work, spec, args.tiles, f"mpp{mpp}", slide_mpp=mpp)
                key = f"e2e@{mpp}"
                contenders[key] = (lambda f=folder, k=key: end_to_end(enc, model, f, work / f"f-{k}", args),
                                   _n_tiles(folder))
                ratios[f"slide at {mpp} um/px / exact slide (end to end)"] = (key, "e2e")
        cmu = tile_cmu1(work, spec, args.tiles) if not args.no_resampled else None
        if cmu is not None:
            contenders["e2e CMU-1"] = (lambda: end_to_end(enc, model, cmu, work / "f-cmu", args), _n_tiles(cmu))
            ratios["CMU-1-Small-Region (0.499 um/px, real) / exact slide"] = ("e2e CMU-1", "e2e")
        if args.compile:
            end_to_end(enc, model, exact, work / "f-compiled", args, compile=True)  # compile outside the timings
            contenders["e2e compiled"] = (lambda: end_to_end(enc, model, exact, work / "f-compiled", args,
                                                             compile=True), n)
            ratios["compiled / eager (end to end)"] = ("e2e compiled", "e2e")
        if not args.no_lazyslide:
            slide = next((exact.parent / "slides-exact").glob("*.tiff"))
            lazy = lazyslide_contender(model, enc, slide, args)
            if lazy is not None:
                contenders["lazyslide"] = lazy
                ratios["pathkit / lazyslide (end to end, same slide and model)"] = ("e2e", "lazyslide")
        print(f"{len(contenders)} contenders: {', '.join(contenders)}; warming up", flush=True)
        for fn, _ in contenders.values():  # warm-up: imports, first slide opens, allocator pools
            if fn is not contenders["bare"][0]:
                fn()
        rates, pair, loads = run_rounds(contenders, ratios, args.rounds)
    workers = default_workers(device) if args.workers is None else args.workers
    print(f"encoder {args.encoder} on {device} ({precision}), {n} tiles of {spec.tile_px} px, batch "
          f"{args.batch_size}, {workers} worker(s), torch threads {torch.get_num_threads()}, {os.cpu_count()} cpu(s); "
          f"{args.rounds} rounds; load average {', '.join(f'{v:.2f}' for v in loads)} (before each round, end)")
    for name, values in rates.items():
        print(f"  {name:12s} {statistics.median(values):9.1f} tiles/s (median; "
              f"{', '.join(f'{v:.1f}' for v in values)})")
    for label, values in pair.items():
        print(f"  {label}: {_spread(values)}")
    goal = statistics.median(pair["end to end / bare forward"])
    on_gpu = device.type == "cuda"
    print(f"summary: end to end / bare {goal:.3f} (goal >= {0.9 if on_gpu else 0.95}); end to end "
          f"{statistics.median(rates['e2e']):.1f} tiles/s" + (" (goal >= 1,000 on one H200)" if on_gpu else ""))


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
    manifests = Path(args.manifests)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        enc, ckpt = make_encoder(args.encoder, work)
        model = enc.load(args.device, weights_path=ckpt)
        with _MemorySampler() as mem:
            seconds = end_to_end(enc, model, manifests, work / "features", args)
    mib = 2**20
    print(json.dumps({"tiles": _n_tiles(manifests), "peak_pss_mib": round(mem.peak / mib, 1),
                      "before_pss_mib": round(mem.before / mib, 1), "peak_anon_mib": round(mem.peak_anon / mib, 1),
                      "before_anon_mib": round(mem.before_anon / mib, 1), "seconds": round(seconds, 2)}))


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="vit-s", help="vit-s (CPU default) or a registered encoder")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tiles", type=int, default=160, help="tiles per slide (each contender's run)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=None, help="DataLoader workers [pathkit's default]")
    parser.add_argument("--dtype", default="auto", help="compute dtype (auto: encoder's on GPU, fp32 on CPU)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads in the main process [default]")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of alternating runs")
    parser.add_argument("--compile", action="store_true", help="also time extraction with torch.compile")
    parser.add_argument("--no-resampled", action="store_true", help="skip the 0.499 / 0.2527 um/px / CMU-1 slides")
    parser.add_argument("--no-lazyslide", action="store_true", help="skip the lazyslide side by side")
    parser.add_argument("--no-memory", action="store_true", help="skip the N vs 4N peak-memory runs")
    parser.add_argument("--memory-only", action="store_true", help="only the N vs 4N peak-memory runs")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--manifests", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import warnings

    import torch

    warnings.simplefilter("ignore")  # the tiling's resolution notes on the resampled slides
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory_child:
        memory_child(args)
        return
    if not args.memory_only:
        speed_run(args)
    if not args.no_memory:
        memory_runs(args)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
