"""Tiling at a physical field of view: level choice, tissue grid, one slide, and a batch with resume
(docs/wsi.md, sections 3 and 4)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import multiprocessing
import os
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError, slide_id_problem
from pathkit_core.formats import check_version
from pathkit_core.progress import ProgressBar
from pathkit_core.shard import Shard
from pathkit_core.status_log import append_events, compact, read_log, slide_events
from pathkit_core.workspace import FileLock, StorageError, confined, remove_stale_temporaries
from pathkit_core.wsi.manifest import (
    empty_tiles,
    read_manifest_meta,
    slide_identities,
    write_manifest,
    write_manifest_csv,
)
from pathkit_core.wsi.masks import MaskFrame, pack_mask
from pathkit_core.wsi.params import TileGeometry, TilingParams
from pathkit_core.wsi.scenes import slide_file
from pathkit_core.wsi.segmentation import best_level_for, get_segmenter, segment_slide
from pathkit_core.wsi.slide import (
    MPP_CODES,
    SlideError,
    check_slide_file,
    check_unique_ids,
    find_slides,
    lookup_mpp,
    open_slide,
    slide_id_for,
    with_mpp_fix,
)
from pathkit_core.wsi.tissue_geojson import (
    find_tissue_geojson,
    geojson_identity,
    tissue_geojson_path,
    write_tissue_geojson,
)

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

    from pathkit_core.status_log import StatusLog
    from pathkit_core.wsi.slide import Slide

STATUS_FILE = "tiling_status.json"
CANNOT_WRITE = "cannot-write"
# A level up to this much coarser than the target is still read (and resampled up by at most
# this much) instead of a level with 4x the pixels: 40x slides at 0.2527 um/px have their 2x
# level at 0.5054, 1% coarser than a 0.5 target.
LEVEL_TOLERANCE = 0.02
# Upsampling level 0 by more than this invents detail the scanner never saw: refused.
MAX_UPSAMPLE = 0.10


class TilingWarning(UserWarning):
    """A slide that tiled but deserves attention (little tissue, no tissue, upsampled)."""


# --------------------------------------------------------------------------- geometry


def choose_geometry(slide_mpp: float, level_downsamples: Sequence[float], params: TilingParams, *,
                    path: str | Path | None = None) -> TileGeometry:
    """The coarsest level not coarser than the target (within LEVEL_TOLERANCE), sizes from the slide's
    exact mpp: a 0.499-um/px slide tiled at 0.5 um/px reads 257 px and resamples them to 256."""
    ds_target = params.target_mpp / slide_mpp  # level-0 px per output px
    if ds_target < 1.0 - MAX_UPSAMPLE:
        raise SlideError(
            "resolution-too-low", path,
            f"the slide's resolution ({slide_mpp:.4g} um/px) is coarser than the target "
            f"{params.target_mpp:g} um/px by more than {MAX_UPSAMPLE:.0%}; upsampling would invent "
            "detail (choose a coarser --mpp)",
        )
    level = best_level_for(level_downsamples, ds_target, LEVEL_TOLERANCE)
    d_level = float(level_downsamples[level])
    tile_px = int(params.tile_px)  # type: ignore[arg-type]
    size0 = tile_px * ds_target
    return TileGeometry(slide_mpp=slide_mpp, target_mpp=params.target_mpp, tile_px=tile_px,
                        stride_px=params.stride, level=level, level_downsample=d_level,
                        read_px=max(1, round(size0 / d_level)), size0=size0, stride0=params.stride * ds_target)


def _integral_rows(mask: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows `rows` (sorted, unique, in [0, height]) of the mask's summed-area table: row r holds the
    tissue count of mask[:r, :c] for c = 0..width. The grid's corners touch a few hundred rows, so one
    pass sums the mask's rows between wanted rows instead of building the whole table (docs/benchmarks.md)."""
    import numpy as np

    # Counts are exact in int32 below 2**31 mask pixels (half the memory traffic of int64).
    dtype = np.int32 if mask.size < 2**31 else np.int64
    out = np.zeros((len(rows), mask.shape[1] + 1), dtype=dtype)
    column_counts = np.zeros(mask.shape[1], dtype=dtype)
    done = 0
    for k, r in enumerate(rows.tolist()):
        if r > done:
            column_counts += mask[done:r].sum(axis=0, dtype=dtype)
            done = r
        np.cumsum(column_counts, out=out[k, 1:])
    return out


def _area_under(sat: np.ndarray, rows: np.ndarray, xs: np.ndarray, ys: np.ndarray, height: int) -> np.ndarray:
    """Integral of the mask over [0, x) x [0, y) for real x, y, from the table rows `rows` of
    `_integral_rows`: the integral of a piecewise-constant mask is bilinear inside each cell, so
    bilinear interpolation of the summed-area table is exact."""
    import numpy as np

    w = sat.shape[1] - 1
    xs, ys = np.clip(xs, 0.0, w), np.clip(ys, 0.0, height)
    x0 = np.minimum(np.floor(xs).astype(np.int64), w - 1)
    y0 = np.minimum(np.floor(ys).astype(np.int64), height - 1)
    k = np.searchsorted(rows, y0)  # table row of y0; y0 + 1 is the next one held
    ax, ay = xs - x0, ys - y0
    return (sat[k, x0] * (1 - ax) * (1 - ay) + sat[k, x0 + 1] * ax * (1 - ay)
            + sat[k + 1, x0] * (1 - ax) * ay + sat[k + 1, x0 + 1] * ax * ay)


def tissue_fractions(mask: np.ndarray, x0: np.ndarray, y0: np.ndarray, w: float, h: float) -> np.ndarray:
    """Exact area fraction of each rectangle [x0, x0+w) x [y0, y0+h) (mask pixels) on tissue."""
    import numpy as np

    mask = np.asarray(mask).astype(bool, copy=False)
    height = mask.shape[0]
    x1, y1 = x0 + w, y0 + h
    y_cells = [np.minimum(np.floor(np.clip(y, 0.0, height)).astype(np.int64), height - 1) for y in (y0, y1)]
    rows = np.unique(np.concatenate([*y_cells, *(c + 1 for c in y_cells)]))
    sat = _integral_rows(mask, rows)
    total = (_area_under(sat, rows, x1, y1, height) - _area_under(sat, rows, x0, y1, height)
             - _area_under(sat, rows, x1, y0, height) + _area_under(sat, rows, x0, y0, height))
    return total / max(w * h, 1e-12)


def _grid_count(extent: int, size0: float, stride0: float, pad: bool) -> int:
    """Grid positions along a side of `extent` level-0 px: tiles fully inside, or with `pad` until
    the last one reaches past the edge."""
    if pad:
        return int(math.ceil(max(extent - size0, 0.0) / stride0 - 1e-9)) + 1 if extent > 0 else 0
    return int(math.floor((extent - size0) / stride0 + 1e-9)) + 1 if extent >= size0 else 0


def plan_grid(dimensions: tuple[int, int], geometry: TileGeometry, tissue: np.ndarray,
              mask_downsample: tuple[float, float], min_tissue_fraction: float, *,
              pad_edges: bool = False) -> pl.DataFrame:
    """Regular grid over the slide (tiles fully inside it, or with `pad_edges` covering the right and
    bottom edges too), kept where tissue >= the minimum. Positions are round(i * stride0) in level-0
    pixels, so rounding never accumulates into a drift of the physical grid."""
    import numpy as np
    import polars as pl

    size0, stride0 = geometry.size0, geometry.stride0
    n_cols, n_rows = (_grid_count(extent, size0, stride0, pad_edges) for extent in dimensions)
    if n_cols <= 0 or n_rows <= 0:
        return empty_tiles().drop("slide_id")
    xs0 = np.round(np.arange(n_cols) * stride0).astype(np.int64)
    ys0 = np.round(np.arange(n_rows) * stride0).astype(np.int64)
    mdx, mdy = mask_downsample
    gx, gy = (g.ravel() for g in np.meshgrid(np.arange(n_cols), np.arange(n_rows)))  # tile_index runs along rows
    frac = tissue_fractions(tissue, xs0[gx] / mdx, ys0[gy] / mdy, size0 / mdx, size0 / mdy)
    # Tolerance for float error in the integral at an exact 0.5 boundary.
    keep = (frac >= min_tissue_fraction - 1e-9) & (frac > 0)
    kc, kr = gx[keep], gy[keep]
    n = int(keep.sum())
    same = {"level": geometry.level, "read_px": geometry.read_px, "size0": round(size0), "tile_px": geometry.tile_px,
            "target_mpp": geometry.target_mpp}  # one value for every tile
    columns = {"tile_index": np.arange(n), "x": xs0[kc], "y": ys0[kr], **{k: np.full(n, v) for k, v in same.items()},
               "tissue_fraction": np.round(np.clip(frac[keep], 0.0, 1.0), 6), "grid_col": kc, "grid_row": kr}
    return pl.DataFrame(columns).cast(empty_tiles().drop("slide_id").schema)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- one slide


@dataclass
class TileResult:
    """What happened to one slide: status ok, skipped (resumed), failed or empty."""

    slide_id: str
    slide_path: str
    status: str
    reason: str = ""
    n_tiles: int = 0
    manifest_path: Path | None = None
    code: str = ""
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tissue_area_mm2: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["manifest_path"] = str(self.manifest_path) if self.manifest_path else None
        return out


def manifest_path_for(out_dir: str | Path, slide_id: str) -> Path:
    return confined(out_dir, f"{slide_id}.parquet", what=f"tile manifest of slide {slide_id!r}")


def qc_path_for(out_dir: str | Path, slide_id: str) -> Path:
    return confined(out_dir, f"{slide_id}.qc.png", what=f"QC thumbnail of slide {slide_id!r}")


def _resumable(manifest: Path, slide_path: Path, params_hash: str, mpp_override: float | None, code_key: str | None,
               geojson_id: str | None, segmenter_id: Mapping[str, Any] | None) -> tuple[dict[str, Any], str]:
    """(meta, why it cannot be reused) of an existing manifest; why is "" when it can."""
    try:
        meta = read_manifest_meta(manifest)
    except PathkitError as exc:
        return {}, f"unreadable ({exc})"
    if meta.get("params_hash") != params_hash:
        return meta, f"made with other parameters (hash {meta.get('params_hash')})"
    if meta.get("mpp_override") != mpp_override:
        return meta, f"made with slide mpp override {meta.get('mpp_override')} (now {mpp_override})"
    if code_key is not None and meta.get("code_key") != code_key:
        return meta, "made by another version of the tiling code"
    if meta.get("slide_size") != slide_file(slide_path).stat().st_size:  # the file that holds it, for one scene
        return meta, "the slide file changed since (size differs)"
    # Always by content, not only when the mtime differs: an edit in place may restore the mtime. A large
    # slide's sampled identity reads 96 KiB (docs/wsi.md, section 4).
    expected, actual = slide_identities(slide_path, meta)
    if expected != actual:
        return meta, "the slide file changed since (content identity differs)"
    segmentation = meta.get("segmentation") or {}
    if segmentation.get("geojson_identity") != geojson_id:
        return meta, "made from another tissue mask (the tissue GeoJSON was added, edited or removed)"
    recorded = segmentation.get("segmenter_identity") or {}
    if geojson_id is None and segmenter_id is not None and recorded != dict(segmenter_id):
        return meta, f"made by the segmenter with another identity ({recorded}, now {dict(segmenter_id)})"
    return meta, ""


def tile_slide(slide_path: str | Path, out_dir: str | Path, params: TilingParams, *, mpp: float | None = None,
               mpp_source: str = "user", overwrite: bool = False, write_csv: bool = False, lock_timeout: float = 3600.0,
               code_key: str | None = None, geojson_file: Path | None = None) -> TileResult:
    """Tile one slide into `<out_dir>/<slide_id>.parquet` (+ `.qc.png`); errors as SlideError.

    Resumes: an existing manifest with the same parameter hash, mpp override and slide content
    is kept (status "skipped"). One that differs is replaced only with `overwrite`. `geojson_file`
    is this slide's edited tissue mask, over `params.tissue_geojson`'s folder.
    """
    start = time.perf_counter()
    path = Path(slide_path)
    slide_id = slide_id_for(path)
    problem = slide_id_problem(slide_id)
    if problem:  # the rule `pathkit extract` applies: a slide tiled here is never refused there
        raise SlideError("bad-slide-id", path, f"{problem}; rename the file")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_file = manifest_path_for(out, slide_id)
    check_slide_file(path)  # before the lock: a named pipe would block the reader
    geojson = geojson_file or find_tissue_geojson(params.tissue_geojson, slide_id)
    if geojson is not None and not geojson.is_file():
        raise SlideError("not-found", path, f"its tissue GeoJSON {geojson} does not exist")
    # what else decides the mask: a learned segmenter's weights sha256; none when an edited GeoJSON makes it
    segmenter_id = None if geojson is not None else get_segmenter(params.segmenter).identity(params)
    with FileLock(out / f".{slide_id}.lock", timeout=lock_timeout):
        # A killed run leaves the temporaries of atomic writes behind; only the lock holder may remove them.
        for target in (manifest_file, qc_path_for(out, slide_id), out / f"{slide_id}.csv",
                       tissue_geojson_path(out, slide_id)):
            remove_stale_temporaries(target)
        if manifest_file.exists():
            meta, why = _resumable(manifest_file, path, params.params_hash(), mpp, code_key, geojson_identity(geojson),
                                   segmenter_id)
            if not why:
                return TileResult(slide_id, str(path), "skipped", "manifest exists with the same parameters",
                                  int(meta.get("n_tiles", 0)), manifest_file, seconds=time.perf_counter() - start,
                                  tissue_area_mm2=meta.get("tissue_area_mm2"))
            if not overwrite:
                raise SlideError("stale-manifest", path, f"{manifest_file} exists but was {why}; pass --overwrite to "
                                 "replace it or tile into another --out folder")
        result = _tile_unlocked(path, slide_id, out, params, mpp, mpp_source, write_csv, code_key, geojson,
                                segmenter_id)
    result.seconds = time.perf_counter() - start
    return result


def _empty_reason(area: float, tiles: pl.DataFrame, params: TilingParams) -> str:
    """Why the slide gets an empty manifest ("" when it does not)."""
    if area == 0:
        return "no tissue found"
    if area < params.min_tissue_area_mm2 and params.exclude_below_min_area:
        return f"excluded: tissue area {area:.2f} mm^2 below the minimum"
    return "" if tiles.height else f"no tile reaches the minimum tissue fraction {params.min_tissue_fraction:g}"


def _tile_unlocked(path: Path, slide_id: str, out: Path, params: TilingParams, mpp: float | None, mpp_source: str,
                   write_csv: bool, code_key: str | None, geojson: Path | None,
                   segmenter_id: Mapping[str, Any] | None) -> TileResult:
    import openslide
    import polars as pl

    import pathkit_core
    from pathkit_core.wsi.qc import render_qc  # numpy and PIL: not for `pathkit status`

    st = slide_file(path).stat()
    with open_slide(path, mpp=mpp, mpp_source=mpp_source, reader=params.slide_reader or None) as slide:
        geometry = choose_geometry(slide.mpp, slide.level_downsamples, params, path=path)
        thumb, mask, mds_x, mds_y = segment_slide(slide, params, geojson=geojson)
        tiles = plan_grid(slide.dimensions, geometry, mask.tissue, (mds_x, mds_y), params.min_tissue_fraction,
                          pad_edges=params.pad_edges)
        meta = _slide_meta(slide, params, geometry, st)
    from pathkit_core.wsi.scenes import content_identity

    # whole-file sha256 for a small file; header, tail and blocks for a large one; every file of a folder slide
    identity = content_identity(path)
    area = mask.area_mm2
    read_mpp = geometry.level_downsample * slide.mpp
    notes = []
    if read_mpp > params.target_mpp * (1 + 1e-6):
        notes.append(f"resampled up {read_mpp / params.target_mpp - 1:.1%} from level {geometry.level} "
                     f"({read_mpp:.4g} um/px)")
    reason = _empty_reason(area, tiles, params)
    status = "empty" if reason else "ok"
    if reason:
        tiles = tiles.head(0)
    tiles = tiles.with_columns(pl.lit(slide_id).alias("slide_id"))
    frame = MaskFrame(mask.tissue.shape[1], mask.tissue.shape[0], mds_x, mds_y, mask.mpp)
    sha256 = identity.removeprefix("sha256:") if identity.startswith("sha256:") and "#" not in identity else ""
    meta.update(
        slide_id=slide_id, slide_path=str(path.resolve()), slide_identity=identity, slide_sha256=sha256,
        **({"code_key": code_key} if code_key is not None else {}),
        n_tiles=int(tiles.height), tissue_area_mm2=round(area, 4),
        # recorded per slide and said once per batch (`low_tissue_note`), not once per biopsy
        below_min_tissue_area=bool(area < params.min_tissue_area_mm2),
        thumbnail={"width": thumb.shape[1], "height": thumb.shape[0], "level": thumb.level,
                   "downsample_x": thumb.downsample_x, "downsample_y": thumb.downsample_y, "mpp": thumb.mpp},
        mask={"width": frame.width, "height": frame.height, "downsample_x": mds_x, "downsample_y": mds_y,
              "mpp": mask.mpp},
        tissue_mask=pack_mask(mask.tissue),  # stitched segmentation reads it instead of segmenting again
        segmentation={"segmenter": "geojson" if geojson is not None else params.segmenter, **mask.info,
                      **({} if geojson is not None else {"segmenter_identity": segmenter_id})},
        warnings=notes, status=status,
        pathkit_version=pathkit_core.__version__, openslide_version=openslide.__library_version__,
    )
    render_qc(thumb, mask, tiles, geometry, qc_path_for(out, slide_id))
    if write_csv:
        write_manifest_csv(out / f"{slide_id}.csv", tiles)
    # the contours a person can correct and give back with --tissue-geojson (docs/formats.md)
    write_tissue_geojson(tissue_geojson_path(out, slide_id), mask.tissue, frame)
    # The manifest is written last: its presence marks the slide as done for resume.
    manifest_file = write_manifest(manifest_path_for(out, slide_id), tiles, meta)
    for note in notes + ([reason] if reason else []):
        warnings.warn(f"{slide_id}: {note}", TilingWarning, stacklevel=2)
    return TileResult(slide_id, str(path), status, reason, int(tiles.height), manifest_file, warnings=notes,
                      tissue_area_mm2=round(area, 4))


def low_tissue_note(results: Iterable[TileResult], params: TilingParams) -> str | None:
    """One line for a whole batch on the slides with less tissue than `min_tissue_area_mm2`
    (GOLDMARK's cohort rule, which biopsies never meet), or None when there are none."""
    low = [r for r in results if r.status in ("ok", "skipped", "empty") and r.tissue_area_mm2
           and r.tissue_area_mm2 < params.min_tissue_area_mm2]
    if not low:
        return None
    smallest = min(r.tissue_area_mm2 or 0.0 for r in low)
    what = ("excluded (empty manifests)" if params.exclude_below_min_area
            else "kept, flagged `below_min_tissue_area` in their manifests (exclude_below_min_area leaves them out)")
    return (f"{len(low)} slide(s) have less tissue than the {params.min_tissue_area_mm2:g} mm^2 cohort minimum "
            f"(a resection-cohort minimum, which biopsies usually fall below; smallest {smallest:.2f} mm^2): {what}")


def _slide_meta(slide: Slide, params: TilingParams, g: TileGeometry, st: os.stat_result) -> dict[str, Any]:
    """The manifest metadata of the slide and the tiling geometry (docs/file-formats.md, "Tile manifest")."""
    return {
        "vendor": slide.vendor, "slide_reader": slide.reader, "objective_power": slide.objective_power,
        "width": slide.dimensions[0], "height": slide.dimensions[1], "level_count": slide.level_count,
        "level_dimensions": [list(d) for d in slide.level_dimensions], "level_downsamples": slide.level_downsamples,
        "mpp": slide.mpp, "mpp_x": slide.mpp_info.mpp_x, "mpp_y": slide.mpp_info.mpp_y, "mpp_source": slide.mpp_source,
        "mpp_override": slide.mpp if slide.mpp_source.startswith("user") else None,
        "slide_size": st.st_size, "slide_mtime_ns": st.st_mtime_ns,
        "target_mpp": params.target_mpp, "tile_px": g.tile_px, "tile_um": params.tile_size_um, "stride_px": g.stride_px,
        "read_level": g.level, "read_px": g.read_px, "level_downsample": g.level_downsample, "size0": g.size0,
        "stride0": g.stride0, "min_tissue_fraction": params.min_tissue_fraction,
        "min_tissue_area_mm2": params.min_tissue_area_mm2,
        "params": params.as_dict(), "params_hash": params.params_hash(),
    }


# --------------------------------------------------------------------------- many slides


class TilingFailed(PathkitError):
    """Raised by `tile_slides(strict=True)` at the first failing slide; `.results` so far."""

    def __init__(self, message: str, results: list[TileResult]) -> None:
        super().__init__(message)
        self.results = results


def _tile_job(job: dict[str, Any]) -> dict[str, Any]:
    """Worker entry point (top level so process pools can pickle it)."""
    path = Path(job["path"])
    params = TilingParams.from_dict(job["params"])
    try:
        with warnings.catch_warnings():
            # In a batch the warnings travel in the result (status file, summary table).
            warnings.simplefilter("ignore", TilingWarning)
            result = tile_slide(path, job["out_dir"], params, mpp=job["mpp"], mpp_source=job["mpp_source"],
                                overwrite=job["overwrite"], write_csv=job["write_csv"], code_key=job.get("code_key"),
                                geojson_file=Path(job["geojson"]) if job.get("geojson") else None)
    except Exception as exc:  # noqa: BLE001 - one broken slide must not stop the batch
        code = exc.code if isinstance(exc, SlideError) else CANNOT_WRITE if isinstance(exc, StorageError) else "error"
        reason = str(exc) if isinstance(exc, PathkitError) else f"{path}: {type(exc).__name__}: {exc}"
        result = TileResult(slide_id_for(path), str(path), "failed", reason, code=code)
    return result.as_dict()


def _result_from_dict(d: Mapping[str, Any]) -> TileResult:
    return TileResult(**{**d, "manifest_path": Path(d["manifest_path"]) if d.get("manifest_path") else None})


_STATUS_FORMAT = "pathkit.tiling_status"
TILING_STATUS_VERSION = 1  # `format_version` of the header line (none in 0.1.0's: version 1)
_STATUS_HEADER = {"format": _STATUS_FORMAT, "format_version": TILING_STATUS_VERSION}


def read_tiling_log(out_dir: str | Path) -> StatusLog:
    """`<out_dir>/tiling_status.json` folded in one parse (records, plan, header); a format
    version this pathkit does not read is one line naming the file (`pathkit_core.formats`)."""
    path = Path(out_dir) / STATUS_FILE
    log = read_log(path, "tiling status")
    check_version(log.header.get("format_version"), what="tiling status", path=path,
                  current=TILING_STATUS_VERSION, redo="pathkit tile SLIDES --out NEW_FOLDER")
    return log


def read_tiling_status(out_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Per-slide records of `<out_dir>/tiling_status.json` (status, reason, code, ...)."""
    return read_tiling_log(out_dir).slides


def failed_slides(out_dir: str | Path) -> dict[str, str]:
    """slide id -> reason, for slides whose last tiling attempt failed."""
    return {k: v.get("reason", "") for k, v in read_tiling_status(out_dir).items() if v.get("status") == "failed"}


def _update_status(out_dir: Path, results: Iterable[TileResult], params_hash: str,
                   planned: Mapping[str, str] | None = None) -> None:
    """Append one line per result (and one for slides newly planned) to the status file."""
    updated = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    events = slide_events({r.slide_id: {**{k: v for k, v in r.as_dict().items() if k != "seconds"},
                                        "params_hash": params_hash, "updated": updated} for r in results})
    if planned:
        events.append({"planned": dict(planned)})
    append_events(out_dir / STATUS_FILE, out_dir / ".tiling_status.lock", _STATUS_HEADER, events)


def _plan(out_dir: Path, planned: Mapping[str, str], params_hash: str) -> None:
    """Record the slides this process was given, once: only those not planned yet are appended
    (shards of one cohort all plan the same list); a long log is compacted first."""
    log = compact(out_dir / STATUS_FILE, out_dir / ".tiling_status.lock", _STATUS_HEADER, "tiling status")
    new = {sid: p for sid, p in planned.items() if log.planned.get(sid) != p}
    if new:
        _update_status(out_dir, [], params_hash, new)


def tile_slides(slides: Iterable[str | Path], out_dir: str | Path, params: TilingParams, *, workers: int = 1,
                mpp_overrides: Mapping[str, float] | None = None, strict: bool = False, progress: bool = True,
                overwrite: bool = False, write_csv: bool = False, recursive: bool = False, mpp_fix: str | None = None,
                shard: Shard | None = None, code_key: str | None = None, slide_readers: Mapping[str, str] | None = None,
                tissue_geojsons: Mapping[str, str | Path] | None = None, scenes: bool = True) -> list[TileResult]:
    """Tile many slides (files or folders), results in input order; failures are recorded and the batch goes on.

    `mpp_overrides` maps slide id, file name or path to a user-supplied mpp; `mpp_fix` is how the
    calling command takes one (slide.MPP_FIX_TILE), named in a missing or implausible mpp's reason.
    `shard` (`pathkit_core.shard.current_shard`) keeps this process's slides; `tiling_status.json`
    records every slide's last outcome and the slides every shard was given. `code_key` names the tiling
    code (`pathkit run`: a digest of its sources): a manifest made by other code is not reused.
    `slide_readers` and `tissue_geojsons` map a slide's path to its reader and edited tissue mask (a
    cohort table's columns, docs/wsi.md, "Per-slide tiling inputs"). `scenes=False` tiles a CZI of
    several scenes as the file given.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    found = find_slides(slides, recursive=recursive, scenes=scenes)
    phash = params.params_hash()
    duplicates = check_unique_ids(found)
    # Every slide given is recorded as planned before any is tiled, so `pathkit status` counts
    # the slides still to do while the first one is being tiled (sharded or not).
    _plan(out, {slide_id_for(p): str(p) for p in found}, phash)
    paths = found if shard is None else shard.select(found, key=slide_id_for)
    done: list[tuple[int, TileResult]] = []
    jobs: list[tuple[int, dict[str, Any]]] = []
    for i, p in enumerate(paths):
        sid = slide_id_for(p)
        if sid in duplicates:
            others = ", ".join(str(o) for o in duplicates[sid] if o != p)
            done.append((i, TileResult(sid, str(p), "failed", f"{p}: slide id {sid!r} is shared with {others}; "
                                       "rename one (manifests are named by slide id)", code="duplicate-slide-id")))
            continue
        override = lookup_mpp(mpp_overrides, p)
        reader = (slide_readers or {}).get(str(p))
        jobs.append((i, {
            # as_dict leaves the mask folder out (it is not hashed): the worker needs it all the same
            "path": str(p), "out_dir": str(out), "mpp": override,
            "params": {**params.as_dict(), "tissue_geojson": params.tissue_geojson,
                       **({"slide_reader": reader} if reader else {})},
            "geojson": str((tissue_geojsons or {}).get(str(p)) or ""),
            "mpp_source": "user" if override is not None else "", "overwrite": overwrite,
            "write_csv": write_csv, "code_key": code_key,
        }))
    results: dict[int, TileResult] = {}
    pending: list[TileResult] = []  # finished, not yet in the status file
    counts: Counter[str] = Counter()
    last_flush = time.monotonic()

    def show(current: str = "") -> None:
        text = " ".join(f"{s} {counts[s]}" for s in ("ok", "skipped", "empty", "failed"))
        bar.status(f"{text}  {current}" if current else text)

    def flush() -> None:
        nonlocal last_flush
        _update_status(out, pending, phash)
        pending.clear()
        last_flush = time.monotonic()

    bar = ProgressBar("[bold]tiling", len(paths), "slides", enabled=progress)
    try:
        with bar, contextlib.closing(_outcomes(jobs, workers, show)) as outcomes:
            for i, result in itertools.chain(done, outcomes):
                if result.code in MPP_CODES:
                    result.reason = with_mpp_fix(result.reason, mpp_fix)
                results[i] = result
                counts[result.status] += 1
                bar.advance(1)
                show()
                if result.code == CANNOT_WRITE:
                    # Every later slide would fail the same way: stop, keeping what is complete.
                    with contextlib.suppress(StorageError):
                        flush()
                    pending.clear()
                    raise StorageError(f"{result.reason} (tiling stopped at {result.slide_id})")
                pending.append(result)
                # One appended line per slide (status_log); manifests are the resume truth, so
                # batching the lines of successes every couple of seconds loses nothing.
                if result.status == "failed" or time.monotonic() - last_flush > 2.0:
                    flush()
                if strict and result.status == "failed":
                    raise TilingFailed(result.reason, [results[k] for k in sorted(results)])
    finally:
        flush()  # a no-op when nothing is left to record
    return [results[k] for k in sorted(results)]


def _outcomes(jobs: list[tuple[int, dict[str, Any]]], workers: int,
              starting: Callable[[str], None]) -> Iterator[tuple[int, TileResult]]:
    """(input index, result) of each job as it finishes: in this process, or in a pool of `workers`."""
    if workers <= 1 or len(jobs) <= 1:
        for i, job in jobs:
            starting(Path(job["path"]).name)
            yield i, _result_from_dict(_tile_job(job))
        return
    # spawn: the parent runs a progress thread and may hold OpenSlide handles; forking either is unsafe.
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx) as pool:
        futures = {pool.submit(_tile_job, job): (i, job["path"]) for i, job in jobs}
        for _, job in jobs[:workers]:
            starting(Path(job["path"]).name)
        try:
            for fut in as_completed(futures):
                i, path = futures[fut]
                try:
                    result = _result_from_dict(fut.result())
                except Exception as exc:  # noqa: BLE001 - a crashed worker fails its slide only
                    result = TileResult(slide_id_for(Path(path)), path, "failed",
                                        f"{path}: worker crashed: {type(exc).__name__}: {exc}", code="error")
                yield i, result
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
