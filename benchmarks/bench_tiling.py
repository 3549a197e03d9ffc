"""Benchmark of whole-slide tiling: tile-reader throughput, segmentation speed, peak memory.

Prints, measured side by side in one run:
1. tiles/s of the manifest tile reader (`iter_tile_batches`, 2 worker processes, uint8 arrays
   out, with and without the direct TIFF decoder; and TileReader in a torch DataLoader) vs a
   bare single-process loop of OpenSlide `read_region` over the same coordinates (target >= 1.5x);
2. seconds for thumbnail + segmentation + grid on a 100,000 x 100,000-px synthetic slide
   (target < 2 s), with the pyramid levels read (level 0 must not be among them);
3. peak RSS of `tile_slide` on slides of growing size (target: flat);
   and `tile_slide` in-process on 30,000 px slides at 0.5 and 0.25 um/px (`--large-only`), where its
   time goes, and the mask morphology against the scikit-image/SciPy calls it replaced; with
   `--trident`, side by side with TRIDENT's tiling of the same slides (and with `--before DIR`, an
   export of older pathkit code, timed in a child process), interleaved, tile coordinates compared;
4. with PATHKIT_REALDATA set, the per-tile reading speed on two real scanner files against a
   bare `read_region` loop, in alternating rounds (CMU-1-Small-Region is 0.499 um/px: every
   tile is resampled 257 -> 256 px; target >= 1.5x).

Usage: .venv/bin/python benchmarks/bench_tiling.py [--out bench-out/tiling] [--quick] [--real-only]
       [--large-only] [--trident] [--before DIR] [--pairs N]
Synthetic slides are cached in the output folder between runs. TRIDENT is not on PyPI and is never
installed by this script: put an installed copy on PYTHONPATH (docs/benchmarks.md says how).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _make(path: Path, **kwargs) -> Path:
    from pathkit_sdk.synthetic import write_synthetic_slide

    stamp = path.with_suffix(".json")
    wanted = json.dumps(kwargs, sort_keys=True, default=str)
    if path.exists() and stamp.exists() and stamp.read_text() == wanted:
        return path
    t = time.perf_counter()
    write_synthetic_slide(path, **kwargs)
    stamp.write_text(wanted)
    print(f"  (wrote {path.name} in {time.perf_counter() - t:.1f} s)")
    return path


def _flat_blobs():
    from pathkit_sdk.synthetic import Blob

    return [
        Blob(0.3, 0.5, 0.2, 0.3, texture="flat"),
        Blob(0.7, 0.4, 0.15, 0.25, colour=(180, 110, 175), texture="flat", angle_deg=20.0),
        Blob(0.65, 0.82, 0.05, 0.05, texture="flat"),
    ]


def bench_reader(out: Path, quick: bool) -> float:
    import openslide

    from pathkit_core.wsi.manifest import read_manifest
    from pathkit_core.wsi.tiling import TilingParams, tile_slide
    from pathkit_sdk.tiles import iter_tile_batches, tile_loader

    size = 6144 if quick else 16384
    slide = _make(out / f"reader_{size}.tif", width=size, height=size, mpp=0.5, seed=1)
    params = TilingParams(target_mpp=0.5, tile_px=256, min_tissue_area_mm2=0.0)
    tile_slide(slide, out / "tiles", params, overwrite=True)
    manifest = read_manifest(out / "tiles" / f"{slide.stem}.parquet")
    coords = manifest.tiles.select("x", "y", "level", "read_px").rows()
    n = len(coords)

    cpu_ms: dict[str, list[float]] = {k: [] for k in ("bare", "batches", "openslide", "dataloader", "inproc")}

    def cpu() -> float:
        # this process plus finished children (workers are joined before the clock stops)
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    def bare() -> float:
        handle = openslide.OpenSlide(str(slide))
        c, t = cpu(), time.perf_counter()
        for x, y, level, read_px in coords:
            handle.read_region((x, y), level, (read_px, read_px))
        dt = time.perf_counter() - t
        cpu_ms["bare"].append((cpu() - c) / n * 1e3)
        handle.close()
        return n / dt

    def batches(workers: int, key: str, direct: bool = True) -> float:
        c, t = cpu(), time.perf_counter()
        count, dtypes = 0, set()
        for indices, tiles in iter_tile_batches(manifest, batch_size=32, workers=workers, direct=direct):
            count += len(indices)
            dtypes.add(tiles.dtype.name)
        dt = time.perf_counter() - t
        cpu_ms[key].append((cpu() - c) / n * 1e3)
        assert count == n and dtypes == {"uint8"}
        return n / dt

    def dataloader() -> float:
        c, t = cpu(), time.perf_counter()
        count = 0
        for batch in tile_loader(manifest, batch_size=32, num_workers=2):
            count += int(batch.shape[0])
        dt = time.perf_counter() - t
        cpu_ms["dataloader"].append((cpu() - c) / n * 1e3)
        assert count == n
        return n / dt

    # Same pixels either way (the direct decoder is checked against OpenSlide per level; the
    # tests compare every tile), so the contenders differ in speed only.
    first = next(iter_tile_batches(manifest, batch_size=16, workers=0, direct=True))[1]
    assert (first == next(iter_tile_batches(manifest, batch_size=16, workers=0, direct=False))[1]).all()
    bare()  # warm the page cache for all
    next(iter(tile_loader(manifest, batch_size=8, num_workers=0)))  # import torch outside the timings
    # The machine is shared: alternate the contenders and compare neighbouring runs, so a burst
    # of foreign load does not fall on one side only; report the median of the pair ratios.
    runs = []
    for _ in range(3):
        b = bare()
        f = batches(2, "batches")
        o = batches(2, "openslide", direct=False)
        d = dataloader()
        runs.append((b, f, o, d, f / b, o / b, d / b))
    one = batches(0, "inproc")
    med = [statistics.median(r[i] for r in runs) for i in range(7)]
    print(f"reader: {n} tiles of 256 px from a {size}x{size} JPEG slide (median of 3 alternating runs)")
    print(f"  bare read_region loop, 1 process       : {med[0]:8.1f} tiles/s")
    print(f"  iter_tile_batches, in-process           : {one:8.1f} tiles/s  ({one / med[0]:.2f}x)")
    print(f"  iter_tile_batches, 2 workers (shm ring) : {med[1]:8.1f} tiles/s  ({med[4]:.2f}x, target >= 1.5x)")
    print(f"    same, OpenSlide decoding only         : {med[2]:8.1f} tiles/s  ({med[5]:.2f}x)")
    print(f"  TileReader in a torch DataLoader, 2 w.  : {med[3]:8.1f} tiles/s  ({med[6]:.2f}x)")
    print(f"  pair ratios (ring): {', '.join(f'{r[4]:.2f}' for r in runs)}; "
          f"OpenSlide-only ring: {', '.join(f'{r[5]:.2f}' for r in runs)}")
    per = {k: statistics.median(v) for k, v in cpu_ms.items()}
    print(f"  CPU per tile, all processes: bare {per['bare']:.2f} ms, in-process {per['inproc']:.2f} ms, "
          f"ring 2 workers {per['batches']:.2f} ms (OpenSlide only {per['openslide']:.2f} ms), "
          f"DataLoader 2 workers {per['dataloader']:.2f} ms")
    return med[4]


def bench_real_slides(out: Path, rounds: int = 7) -> dict[str, float]:
    """Per-tile speed on real scanner JPEG: the reader (batches of 32, direct decoding or
    OpenSlide only, resampled to the tile size) against a bare `read_region` loop over the same
    coordinates, one process each, in alternating rounds; the median of the per-round ratios."""
    from pathkit_core.wsi.manifest import read_manifest
    from pathkit_core.wsi.tiling import TilingParams, tile_slide

    root = os.environ.get("PATHKIT_REALDATA")
    if not root:
        print("real slides: skipped (PATHKIT_REALDATA is not set)")
        return {}
    cases = [  # (file, slide mpp override, tiling): CMU-1's 240-px tiles make every read straddle 4
        ("CMU-1-Small-Region.svs", None, TilingParams(target_mpp=0.5, tile_px=256, min_tissue_area_mm2=0.0)),
        ("PIT_06_00633_01.tiff", 0.5, TilingParams(target_mpp=0.5, tile_px=256, min_tissue_area_mm2=0.0)),
    ]
    repeats = 20
    print(f"real slides, one process, every tile of the manifest read {repeats} times per run, {rounds} "
          f"alternating rounds (median of the per-round ratios; load average {os.getloadavg()[0]:.2f}):")
    summary = {}
    for name, mpp, params in cases:
        slide = Path(root) / "slides" / name
        tile_slide(slide, out / "real", params, mpp=mpp, overwrite=True)
        manifest = read_manifest(out / "real" / f"{slide.stem}.parquet")
        rates = _real_slide_rates(slide, manifest, rounds, repeats)
        direct_ratio = [d / b for d, b in zip(rates["direct"], rates["bare"], strict=True)]
        os_ratio = [o / b for o, b in zip(rates["openslide"], rates["bare"], strict=True)]
        read_px, tile_px = int(manifest.tiles["read_px"][0]), manifest.tile_px
        resample = f", reader resamples {read_px} -> {tile_px} px" if read_px != tile_px else ""
        med = {k: statistics.median(v) for k, v in rates.items()}
        print(f"  {name}: {manifest.n_tiles} tiles{resample}; bare read_region {med['bare']:7.1f} tiles/s; reader "
              f"direct {med['direct']:7.1f} ({statistics.median(direct_ratio):.2f}x, min {min(direct_ratio):.2f}, "
              f"max {max(direct_ratio):.2f}); reader OpenSlide only {med['openslide']:7.1f} "
              f"({statistics.median(os_ratio):.2f}x, min {min(os_ratio):.2f}, max {max(os_ratio):.2f})")
        summary[name] = statistics.median(direct_ratio)
    if "CMU-1-Small-Region.svs" in summary:
        print(f"  CMU-1 reader / bare read_region: {summary['CMU-1-Small-Region.svs']:.2f}x (goal >= 1.5x); "
              f"load average {os.getloadavg()[0]:.2f}")
    return summary


def _real_slide_rates(slide: Path, manifest, rounds: int, repeats: int) -> dict[str, list[float]]:  # noqa: ANN001
    """tiles/s per round of the bare loop and the reader (direct decoding / OpenSlide only)."""
    import numpy as np
    import openslide

    from pathkit_core.wsi.reader import TileReader

    coords = manifest.tiles.select("x", "y", "level", "read_px").rows() * repeats
    rows = np.tile(np.arange(manifest.n_tiles), repeats)
    readers = {direct: TileReader(manifest, direct=direct) for direct in (True, False)}
    batch = np.empty((32, manifest.tile_px, manifest.tile_px, 3), dtype=np.uint8)
    for reader in readers.values():
        reader.read_batch(rows[:32], out=batch[: min(32, len(rows))])  # open (and check the decoder) untimed

    def bare() -> float:
        handle = openslide.OpenSlide(str(slide))
        t = time.perf_counter()
        for x, y, level, read_px in coords:
            handle.read_region((x, y), level, (read_px, read_px))
        dt = time.perf_counter() - t
        handle.close()
        return len(coords) / dt

    def reader_run(direct: bool) -> float:
        reader = readers[direct]
        t = time.perf_counter()
        for start in range(0, len(rows), 32):
            chunk = rows[start : start + 32]
            reader.read_batch(chunk, out=batch[: len(chunk)])
        return len(rows) / (time.perf_counter() - t)

    contenders = {"bare": bare, "direct": lambda: reader_run(True), "openslide": lambda: reader_run(False)}
    rates: dict[str, list[float]] = {k: [] for k in contenders}
    for r in range(rounds):
        for key in contenders if r % 2 == 0 else list(contenders)[::-1]:
            rates[key].append(contenders[key]())
    for reader in readers.values():
        reader.close()
    return rates


def bench_segmentation(out: Path) -> float:
    from pathkit_core.wsi.segmentation import segment_slide
    from pathkit_core.wsi.slide import Slide, open_slide
    from pathkit_core.wsi.tiling import TilingParams, choose_geometry, plan_grid

    slide_path = _make(
        out / "big_100k.tif", width=100_000, height=100_000, mpp=0.25, tissue=_flat_blobs(),
        compression="deflate", tile_size=256,
    )
    params = TilingParams(target_mpp=0.5, tile_px=256)
    levels_read: list[int] = []
    original = Slide.read_region

    def spy(self, location, level, size):  # noqa: ANN001
        levels_read.append(level)
        return original(self, location, level, size)

    Slide.read_region = spy  # type: ignore[method-assign]
    try:
        timings, cpu_times = [], []
        for _ in range(3):
            levels_read.clear()
            with open_slide(slide_path) as slide:
                t, c = time.perf_counter(), time.process_time()
                geometry = choose_geometry(slide.mpp, slide.level_downsamples, params)
                thumb, mask, mdx, mdy = segment_slide(slide, params)
                tiles = plan_grid(slide.dimensions, geometry, mask.tissue, (mdx, mdy), 0.5)
                timings.append(time.perf_counter() - t)
                cpu_times.append(time.process_time() - c)
    finally:
        Slide.read_region = original  # type: ignore[method-assign]
    best = min(timings)
    print("segmentation + grid on a 100,000 x 100,000-px slide (0.25 um/px, tiles 256 px at 0.5):")
    print(f"  {best:.2f} s wall, {min(cpu_times):.2f} s CPU (target < 2 s); levels read: {sorted(set(levels_read))} "
          f"(level 0 read: {0 in levels_read}); thumbnail {thumb.shape}, mask {mask.tissue.shape}, "
          f"{tiles.height} tiles, tissue {mask.area_mm2:.1f} mm^2")
    return best


def _old_morphology(tissue, r_open: int, r_close: int):
    """The tissue-mask morphology as it was: scikit-image opening/closing with the disk sequence,
    SciPy's hole filling (the reference `pathkit_tissue.morphology` must equal)."""
    from scipy import ndimage as ndi
    from skimage.morphology import closing, disk, opening

    tissue = opening(tissue, disk(r_open, decomposition="sequence"))
    tissue = closing(tissue, disk(r_close, decomposition="sequence"))
    return ndi.binary_fill_holes(tissue)


def _new_morphology(tissue, r_open: int, r_close: int):
    from pathkit_tissue.morphology import binary_closing, binary_opening, fill_holes

    return fill_holes(binary_closing(binary_opening(tissue, r_open), r_close))


def bench_large_slides(out: Path, pairs: int) -> None:
    """In-process `tile_slide` on ~30k px synthetic slides at 0.5 and 0.25 um/px (the issue's
    TRIDENT comparison), with where the time goes, and the tissue-mask morphology side by side
    with the scikit-image/SciPy calls it replaced (outputs compared). TRIDENT and lazyslide are
    timed only when installed (never by this script)."""
    import importlib.util
    import tempfile

    import numpy as np

    from pathkit_core.wsi.qc import render_qc
    from pathkit_core.wsi.segmentation import segment_slide, segmentation_thumbnail
    from pathkit_core.wsi.slide import open_slide
    from pathkit_core.wsi.tiling import TilingParams, choose_geometry, plan_grid, tile_slide
    from pathkit_tissue.otsu import hsv_channels

    params = TilingParams(target_mpp=0.5, tile_px=256)
    if importlib.util.find_spec("lazyslide") is None:
        print("  lazyslide: not installed, skipped")
    for mpp in (0.5, 0.25):
        slide = _large_slide(out, mpp)
        whole, parts, morph = [], [], []
        for pair in range(pairs + 1):
            with tempfile.TemporaryDirectory(dir=out) as tmp:
                t = time.perf_counter()
                tile_slide(slide, Path(tmp), params)
                seconds = time.perf_counter() - t
            with open_slide(slide) as s:
                t0 = time.perf_counter()
                thumb = segmentation_thumbnail(s, params)
                t1 = time.perf_counter()
                _thumb, mask, mdx, mdy = segment_slide(s, params, thumbnail=thumb)
                t2 = time.perf_counter()
                tiles = plan_grid(s.dimensions, choose_geometry(s.mpp, s.level_downsamples, params), mask.tissue,
                                  (mdx, mdy), params.min_tissue_fraction)
                with tempfile.TemporaryDirectory(dir=out) as tmp:
                    t3 = time.perf_counter()
                    render_qc(thumb, mask, tiles, choose_geometry(s.mpp, s.level_downsamples, params),
                              Path(tmp) / "qc.png")
                    t4 = time.perf_counter()
            # the morphology alone, old and new on the same thresholded mask (alternating order)
            _h, sat, _v = hsv_channels(np.asarray(thumb.rgb))
            raw = sat > 0.1
            order = (_old_morphology, _new_morphology) if pair % 2 else (_new_morphology, _old_morphology)
            got, took = {}, {}
            for fn in order:
                m0 = time.perf_counter()
                got[fn] = fn(raw, 2, 4)
                took[fn] = time.perf_counter() - m0
            if not np.array_equal(got[_old_morphology], got[_new_morphology]):
                raise SystemExit("morphology differs from scikit-image/SciPy")
            if pair:
                whole.append(seconds)
                parts.append((t1 - t0, t2 - t1, t4 - t3))
                morph.append((took[_old_morphology], took[_new_morphology]))
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        ratios = [o / n for o, n in morph]
        print(f"  30,000 px at {mpp} um/px: tile_slide {med(whole):.3f} s (median of {pairs}; "
              f"{', '.join(f'{w:.3f}' for w in whole)}); thumbnail {med([p[0] for p in parts]):.3f} s, "
              f"segmentation {med([p[1] for p in parts]):.3f} s, QC PNG {med([p[2] for p in parts]):.3f} s; "
              f"morphology scikit-image/SciPy {med([m[0] for m in morph]):.3f} s vs pathkit "
              f"{med([m[1] for m in morph]):.3f} s ({med(ratios):.1f}x, equal masks)")


def _large_slide(out: Path, mpp: float) -> Path:
    return _make(out / f"large_30k_{mpp}.tif", width=30_000, height=30_000, mpp=mpp, tissue=_flat_blobs(),
                 compression="jpeg", tile_size=256)


# The older code's `tile_slide`, timed inside a child process that imports it from the export's
# folder (argv[1]); one slide path per input line, seconds and tile count per output line.
_BEFORE_CHILD = """
import sys, tempfile, time, warnings
warnings.simplefilter("ignore")
root = sys.argv[1]
for sub in ("", "/plugins/encoders", "/plugins/generators", "/plugins/datasets", "/plugins/metrics"):
    sys.path.insert(0, root + sub)
import pathkit_core
assert pathkit_core.__file__.startswith(root), pathkit_core.__file__
from pathkit_core.wsi.tiling import TilingParams, tile_slide
params = TilingParams(target_mpp=0.5, tile_px=256)
for line in sys.stdin:
    slide, out = line.rstrip("\\n").split("\\t")
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        t = time.perf_counter()
        r = tile_slide(slide, tmp, params)
        print(time.perf_counter() - t, r.n_tiles, flush=True)
"""


def bench_against_trident(out: Path, pairs: int, before: Path | None) -> None:
    """pathkit's `tile_slide` against TRIDENT on the 30k px slides, in this process, interleaved.

    Timed for pathkit: `tile_slide(slide, fresh_dir, TilingParams(target_mpp=0.5, tile_px=256))`
    (open, thumbnail, Otsu segmentation, grid with the 0.5 tissue-fraction rule, content identity,
    QC PNG, parquet manifest). Timed for TRIDENT, its `run_single_slide.py` steps up to patching:
    `load_wsi(slide, lazy_init=False)`, `segment_tissue(otsu, target_mag=1.25, job_dir, device="cpu",
    num_workers=0)` (thumbnail JPEG, GeoJSON, contour JPEG), `extract_tissue_coords(target_mag=20,
    patch_size=256, min_tissue_proportion=0.5)` (coordinates h5) and `visualize_coords` (JPEG). The
    Otsu segmenter is built once, untimed (TRIDENT's default segmenter is a deep model whose
    weights cannot be downloaded here). Imports are outside the timings on both sides.
    """
    import tempfile

    try:
        import h5py
        from trident import load_wsi
        from trident.segmentation_models import segmentation_model_factory
    except ImportError as exc:
        print(f"  trident: not importable ({exc}), skipped: put an installed copy on PYTHONPATH")
        return
    from pathkit_core import sources
    from pathkit_core.wsi.manifest import read_manifest
    from pathkit_core.wsi.tiling import TilingParams, tile_slide

    model = segmentation_model_factory("otsu")
    params = TilingParams(target_mpp=0.5, tile_px=256)
    child = None
    if before is not None:
        child = subprocess.Popen([sys.executable, "-c", _BEFORE_CHILD, str(before.resolve())],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run_before(slide: Path) -> tuple[float, int]:
        child.stdin.write(f"{slide}\t{out}\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        seconds, n = child.stdout.readline().split()  # type: ignore[union-attr]
        return float(seconds), int(n)

    def run_pathkit(slide: Path, keep: dict) -> float:
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            sources._identity.cache_clear()  # the slide's identity read again, as in a new process
            t = time.perf_counter()
            r = tile_slide(slide, tmp, params)
            seconds = time.perf_counter() - t
            tiles = read_manifest(r.manifest_path).tiles
            keep["pathkit"] = set(zip(tiles["x"].to_list(), tiles["y"].to_list(), strict=True))
        return seconds

    def run_trident(slide: Path, keep: dict) -> float:
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            t = time.perf_counter()
            with load_wsi(slide_path=str(slide), lazy_init=False) as wsi:
                wsi.segment_tissue(model, target_mag=model.target_mag, job_dir=tmp, device="cpu", num_workers=0)
                coords = wsi.extract_tissue_coords(target_mag=20, patch_size=256, save_coords=tmp,
                                                   min_tissue_proportion=0.5)
                wsi.visualize_coords(coords, os.path.join(tmp, "viz"))
            seconds = time.perf_counter() - t
            with h5py.File(coords) as f:
                keep["trident"] = {(int(x), int(y)) for x, y in f["coords"][:]}
        return seconds

    print(f"  against TRIDENT, in-process, {pairs} interleaved rounds after one warm-up "
          f"(load average {os.getloadavg()[0]:.2f} at the start):")
    try:
        for mpp in (0.5, 0.25):
            slide = _large_slide(out, mpp)
            times: dict[str, list[float]] = {"pathkit": [], "trident": [], "before": []}
            keep: dict[str, set] = {}
            n_before = None
            for r in range(pairs + 1):
                order = ["pathkit", "trident"] + (["before"] if child else [])
                for who in order if r % 2 == 0 else order[::-1]:
                    if who == "before":
                        seconds, n_before = run_before(slide)
                    else:
                        seconds = (run_pathkit if who == "pathkit" else run_trident)(slide, keep)
                    if r:
                        times[who].append(seconds)
            med = {k: statistics.median(v) for k, v in times.items() if v}
            ratios = [t / p for t, p in zip(times["trident"], times["pathkit"], strict=True)]
            ours, theirs = keep["pathkit"], keep["trident"]
            print(f"    30,000 px at {mpp} um/px: pathkit {med['pathkit']:.3f} s, TRIDENT {med['trident']:.3f} s: "
                  f"**{statistics.median(ratios):.2f}x** (rounds {', '.join(f'{x:.2f}' for x in ratios)})")
            if child:
                gain = [b / p for b, p in zip(times["before"], times["pathkit"], strict=True)]
                print(f"      before ({before}): {med['before']:.3f} s, {n_before} tiles; now "
                      f"{statistics.median(gain):.2f}x faster than before; before vs TRIDENT "
                      f"{med['trident'] / med['before']:.2f}x")
            print(f"      tiles: pathkit {len(ours)}, TRIDENT {len(theirs)}, same coordinates {len(ours & theirs)} "
                  f"(Jaccard {len(ours & theirs) / max(1, len(ours | theirs)):.4f})")
    finally:
        if child:
            child.stdin.close()  # type: ignore[union-attr]
            child.wait()
    print(f"  load average {os.getloadavg()[0]:.2f} at the end")


# VmHWM (this process's peak resident memory) rather than ru_maxrss, which Linux carries over
# from the forking parent across exec.
_MEMORY_CHILD = """
import sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[3])
from pathkit_core.wsi.tiling import TilingParams, tile_slide
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
base = hwm()
r = tile_slide(sys.argv[1], sys.argv[2], TilingParams(target_mpp=0.5, tile_px=256), overwrite=True)
print(hwm(), base, r.n_tiles)
"""


def bench_memory(out: Path, quick: bool) -> list[tuple[int, float]]:
    sizes = [10_000, 30_000] if quick else [10_000, 30_000, 100_000]
    rows = []
    for size in sizes:
        path = out / ("big_100k.tif" if size == 100_000 else f"mem_{size}.tif")
        if size != 100_000:
            _make(path, width=size, height=size, mpp=0.25, tissue=_flat_blobs(),
                  compression="deflate", tile_size=256)
        res = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, str(path), str(out / "mem_tiles"), str(ROOT)],
            capture_output=True, text=True, check=True,
        )
        kb, base_kb, n_tiles = res.stdout.split()
        rows.append((size, int(kb) / 1024.0))
        print(f"  {size:>7} px square: peak RSS {int(kb) / 1024.0:7.1f} MiB "
              f"(after imports {int(base_kb) / 1024.0:.1f} MiB), {n_tiles} tiles")
    print(f"  peak RSS ratio largest/smallest: {rows[-1][1] / rows[0][1]:.2f} "
          f"for {(sizes[-1] / sizes[0]) ** 2:.0f}x the pixels")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench-out" / "tiling")
    ap.add_argument("--quick", action="store_true", help="smaller slides, skips the 100k slide")
    ap.add_argument("--real-only", action="store_true", help="only the real scanner files (PATHKIT_REALDATA)")
    ap.add_argument("--large-only", action="store_true", help="only the in-process tiling of the 30k px slides")
    ap.add_argument("--trident", action="store_true",
                    help="only the 30k px slides against TRIDENT (skipped when it is not importable)")
    ap.add_argument("--before", type=Path, default=None,
                    help="with --trident: a folder with an export of older pathkit code, timed beside")
    ap.add_argument("--reader-only", action="store_true",
                    help="only the tile reader (the full-size slide unless --quick)")
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import warnings

    warnings.simplefilter("ignore")
    print(f"machine: {os.cpu_count()} cpu(s), load average {os.getloadavg()[0]:.1f} at start")
    if args.real_only:
        bench_real_slides(args.out)
        return
    if args.trident:
        print("in-process tiling of ~30k px slides against TRIDENT:")
        bench_against_trident(args.out, args.pairs, args.before)
        return
    if args.large_only:
        print("in-process tiling of ~30k px slides:")
        bench_large_slides(args.out, args.pairs)
        return
    ratio = bench_reader(args.out, args.quick)
    if args.reader_only:
        print(f"summary: reader speed-up {ratio:.2f}x; load average {os.getloadavg()[0]:.1f} at the end")
        return
    bench_real_slides(args.out)
    if not args.quick:
        bench_segmentation(args.out)
        print("in-process tiling of ~30k px slides:")
        bench_large_slides(args.out, args.pairs)
    print("peak memory of tile_slide vs slide size:")
    bench_memory(args.out, args.quick)
    print(f"summary: reader speed-up {ratio:.2f}x; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
