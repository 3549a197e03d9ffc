"""Read speed of each slide reader against OpenSlide, side by side in one run (docs/formats.md).

The slide (CMU-1-Small-Region by default) is converted once into every format a reader reads, with
the format's own writer (`slide_formats.py`); then the same random 256-px level-0 tiles are read
through `pathkit_core.wsi.slide.open_slide` with each reader, and through OpenSlide, both on the
original and, where OpenSlide opens it, on the converted file itself. Each reader is timed in
alternating rounds so that machine load falls on all alike; the figure is the median round.

    PATHKIT_REALDATA=../shared/data .venv/bin/python benchmarks/bench_readers.py [--tiles 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _formats():
    spec = importlib.util.spec_from_file_location("slide_formats", Path(__file__).with_name("slide_formats.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def convert(source: Path, root: Path) -> dict[str, Path]:
    """The slide in each format whose writer is installed, one level like the original."""
    from pathkit_core.wsi.slide import open_slide

    formats = _formats()
    with open_slide(source) as slide:
        level0, mpp = slide.read_region((0, 0), 0, slide.dimensions), slide.mpp
    out = {"ome-tiff (zlib)": formats.write_ome_tiff(root / "s.ome.tif", [level0], mpp, compression="zlib"),
           "ome-tiff (jpeg 90)": formats.write_ome_tiff(root / "j.ome.tif", [level0], mpp, compression="jpeg",
                                                         quality=90)}
    writers = {
        "ome-zarr (0.4, blosc)": ("zarr", lambda: formats.write_ome_zarr(root / "s.ome.zarr", [level0], mpp,
                                                                         version="0.4")),
        "czi (uncompressed)": ("pylibCZIrw", lambda: formats.write_czi(root / "s.czi", level0, mpp)),
        "dicom (uncompressed)": ("pydicom", lambda: formats.write_dicom_tiled(root / "s.dcm", [level0], mpp)),
    }
    for name, (module, write) in writers.items():
        if importlib.util.find_spec(module) is not None:
            out[name] = write()
    return out


def time_reads(path: Path, reader: str | None, coords: list[tuple[int, int]]) -> float:
    """Seconds to read every tile of `coords` through `reader` (None: the one chosen automatically).
    OpenSlide is given the mpp (it does not read OME-XML) and a DICOM series' first instance (it
    finds the others beside it)."""
    from pathkit_core.wsi.slide import open_slide

    if reader == "openslide" and path.is_dir():
        path = sorted(path.glob("*.dcm"))[0]
    with open_slide(path, reader=reader, mpp=0.5 if reader == "openslide" else None) as slide:
        slide.read_region(coords[0], 0, (256, 256))  # open caches and imports outside the timing
        start = time.perf_counter()
        for xy in coords:
            slide.read_region(xy, 0, (256, 256))
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slide", type=Path, default=None, help="[$PATHKIT_REALDATA/slides/CMU-1-Small-Region.svs]")
    parser.add_argument("--tiles", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    realdata = Path(os.environ.get("PATHKIT_REALDATA", "../shared/data"))
    slide = args.slide or realdata / "slides" / "CMU-1-Small-Region.svs"
    if not slide.is_file():
        print(f"{slide}: not found; set PATHKIT_REALDATA or pass --slide", file=sys.stderr)
        return 2
    from pathkit_core.wsi.slide import open_slide

    with open_slide(slide) as s:
        w, h = s.dimensions
    rng = np.random.default_rng(0)
    coords = [(int(rng.integers(0, w - 256)), int(rng.integers(0, h - 256))) for _ in range(args.tiles)]
    with tempfile.TemporaryDirectory() as tmp:
        files = convert(slide, Path(tmp))
        runs: dict[str, tuple[Path, str | None]] = {"openslide on the original": (slide, "openslide")}
        for name, path in files.items():
            runs[name] = (path, None)
            try:
                time_reads(path, "openslide", coords[:2])
                runs[f"  openslide on the same {name.split()[0]} file"] = (path, "openslide")
            except Exception:  # noqa: BLE001 - OpenSlide does not open this format
                pass
        seconds: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, (path, reader) in runs.items():
                seconds[name].append(time_reads(path, reader, coords))
    base = statistics.median(seconds["openslide on the original"])
    print(f"{args.tiles} random 256-px level-0 tiles of {slide.name}, median of {args.rounds} alternating rounds")
    print(f"{'format (reader)':46s} {'tiles/s':>9s} {'x OpenSlide on original':>24s}")
    for name, values in seconds.items():
        t = statistics.median(values)
        print(f"{name:46s} {args.tiles / t:9.0f} {base / t:24.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
