"""Per-slide attention export: tables aligned with the tile manifest and heatmaps over the QC thumbnail."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pathkit_core.contracts import Case, ItemsWithBagSpecs, PathkitError, slide_id_problem
from pathkit_core.workspace import atomic_write_text, atomic_write_with, confined

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

ATTENTION_COLUMNS = ("slide_id", "tile_index", "x", "y", "attention", "attention_score", "attention_rank",
                     "attention_percentile")
# Anchor colours of the heatmap scale, low attention to high (a perceptually ordered blue-to-red ramp).
HEATMAP_RAMP = ((48, 18, 59), (65, 125, 235), (40, 210, 165), (240, 215, 55), (190, 25, 10))


@runtime_checkable
class TileAttentionModel(Protocol):
    """An optional method of a slide-classification `TaskModel`: per-tile evidence for each case of a
    batch.

    `tile_attention(batch)` returns per case a dict with "case_id", "tile_index" and
    "tile_file" (as in the items), "attention" (weights summing to 1 over the case's tiles)
    and "attention_score" (raw scores). A model that has it gets its test-split attention
    exported as per-slide tables and heatmaps (`<run>/attention/`).
    """

    def tile_attention(self, batch: Any) -> list[dict[str, Any]]: ...


def slide_id_of(feature_file: str | Path) -> str:
    """The slide id a feature file is named by (`<id>.safetensors`, `<id>.pt`, `<id>.h5`), when the
    case does not state it (`Case.meta["slide_ids"]`, as a dataset whose files carry a prefix does)."""
    name = Path(feature_file).name
    stem = name.split(".FAILED")[0]
    for suffix in (".safetensors", ".pt", ".pth", ".h5", ".hdf5"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return stem


def read_tile_table(path: str | Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """A tile manifest as (tile_index, x, y[, size0]) rows plus its metadata: a pathkit Parquet
    manifest, or a CSV (GOLDMARK's per-slide manifest: tile_id or tile_index, x, y)."""
    import polars as pl

    path = Path(path)
    if path.suffix == ".parquet":
        from pathkit_core.wsi.manifest import read_manifest

        manifest = read_manifest(path)
        cols = [c for c in ("tile_index", "x", "y", "size0") if c in manifest.tiles.columns]
        return manifest.tiles.select(cols), dict(manifest.meta)
    if not path.exists():
        raise PathkitError(f"tile manifest {path} does not exist")
    try:
        table = pl.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - polars raises several error types for bad CSV
        raise PathkitError(f"tile manifest {path} is not a readable CSV: {exc}") from None
    if "tile_index" not in table.columns:
        if "tile_id" in table.columns:
            table = table.rename({"tile_id": "tile_index"})
        else:
            table = table.with_row_index("tile_index")
    missing = [c for c in ("x", "y") if c not in table.columns]
    if missing:
        raise PathkitError(f"tile manifest {path} lacks column(s) {', '.join(missing)}")
    cols = [c for c in ("tile_index", "x", "y", "size0") if c in table.columns]
    return table.select(cols).cast({"tile_index": pl.Int64, "x": pl.Int64, "y": pl.Int64}), {}


def attention_table(
    slide_id: str,
    tile_index: Sequence[int] | np.ndarray,
    attention: Sequence[float] | np.ndarray,
    attention_score: Sequence[float] | np.ndarray | None = None,
    *,
    coords: np.ndarray | None = None,
    tiles: pl.DataFrame | None = None,
    where: str = "",
) -> pl.DataFrame:
    """One row per attended tile: its manifest row (`tile_index`), level-0 x/y, softmax weight,
    raw score, rank (1 = most attended) and percentile (1.0 = most attended).

    With `tiles` (a tile manifest) x/y come from the manifest and, when `coords` are also
    given, must agree with it: a disagreement means features and manifest do not belong together.
    """
    import numpy as np
    import polars as pl

    idx = np.asarray(tile_index, dtype=np.int64)
    att = np.asarray(attention, dtype=np.float64)
    score = np.full(idx.shape, np.nan) if attention_score is None else np.asarray(attention_score, np.float64)
    if not (idx.shape == att.shape == score.shape):
        raise PathkitError(f"{where or slide_id}: tile_index, attention and scores differ in length")
    x = y = None
    if tiles is not None:
        lookup = tiles.select("tile_index", "x", "y")
        known = lookup["tile_index"].to_numpy()
        order = np.argsort(known)
        pos = np.searchsorted(known[order], idx)
        bad = (pos >= known.size) | (known[order][np.clip(pos, 0, max(known.size - 1, 0))] != idx)
        if known.size == 0 or bad.any():
            first = int(idx[bad][0]) if bad.any() else int(idx[0])
            raise PathkitError(
                f"{where or slide_id}: tile {first} is not in the tile manifest ({known.size} tiles): the "
                "feature file and the manifest do not belong together"
            )
        rows = order[pos]
        x = lookup["x"].to_numpy()[rows]
        y = lookup["y"].to_numpy()[rows]
        if coords is not None and np.any(coords):
            given = np.asarray(coords, dtype=np.int64)
            mismatch = (given[:, 0] != x) | (given[:, 1] != y)
            if mismatch.any():
                i = int(np.flatnonzero(mismatch)[0])
                raise PathkitError(
                    f"{where or slide_id}: tile {int(idx[i])} is at ({given[i, 0]}, {given[i, 1]}) in the feature "
                    f"file but at ({x[i]}, {y[i]}) in the tile manifest"
                )
    elif coords is not None and np.any(coords):
        x = np.asarray(coords, dtype=np.int64)[:, 0]
        y = np.asarray(coords, dtype=np.int64)[:, 1]
    order_desc = np.argsort(-att, kind="mergesort")
    rank = np.empty(att.size, dtype=np.int64)
    rank[order_desc] = np.arange(1, att.size + 1)
    percentile = 1.0 - (rank - 1) / max(att.size - 1, 1) if att.size > 1 else np.ones(att.size)
    return pl.DataFrame({
        "slide_id": [slide_id] * att.size,
        "tile_index": idx,
        "x": pl.Series("x", x, dtype=pl.Int64) if x is not None else pl.Series("x", [None] * att.size, pl.Int64),
        "y": pl.Series("y", y, dtype=pl.Int64) if y is not None else pl.Series("y", [None] * att.size, pl.Int64),
        "attention": att,
        "attention_score": score,
        "attention_rank": rank,
        "attention_percentile": percentile,
    }).sort("tile_index")


def write_attention(table: pl.DataFrame, out_dir: str | Path, slide_id: str) -> tuple[Path, Path]:
    """`<slide_id>.attention.parquet` and `.attention.csv`, written atomically."""
    parquet = atomic_write_with(slide_file(out_dir, slide_id, ".attention.parquet"), table.write_parquet)
    csv_path = atomic_write_with(slide_file(out_dir, slide_id, ".attention.csv"), table.write_csv)
    return parquet, csv_path


def slide_file(out_dir: str | Path, slide_id: str, suffix: str) -> Path:
    """`<out_dir>/<slide_id><suffix>`, for a slide id that can name a file (the rule of tiling and
    extraction) and stays under `out_dir`; anything else is a one-line error."""
    problem = slide_id_problem(slide_id)
    if problem:
        raise PathkitError(f"attention export into {out_dir}: {problem}")
    return confined(out_dir, f"{slide_id}{suffix}", what=f"attention export of slide {slide_id!r}")


def _ramp(values: np.ndarray) -> np.ndarray:
    import numpy as np

    anchors = np.asarray(HEATMAP_RAMP, dtype=np.float64)
    pos = np.clip(values, 0.0, 1.0) * (len(anchors) - 1)
    low = np.floor(pos).astype(int).clip(0, len(anchors) - 2)
    frac = (pos - low)[:, None]
    return (anchors[low] * (1 - frac) + anchors[low + 1] * frac).astype(np.uint8)


def render_heatmap(
    table: pl.DataFrame,
    out_png: str | Path,
    *,
    thumbnail: str | Path | None = None,
    downsample: tuple[float, float] | None = None,
    tile_size0: int | Sequence[int] | None = None,
    alpha: float = 0.55,
    max_side: int = 2048,
    blank_tile_px: int = 8,
) -> Path:
    """Colour each tile by its attention percentile over the QC thumbnail (or a white canvas).

    `downsample` is level-0 pixels per thumbnail pixel (x, y); `tile_size0` the tile side in
    level-0 pixels (per tile or one value; default the smallest coordinate step).
    """
    import numpy as np
    from PIL import Image

    if table.height == 0 or table["x"].null_count() == table.height:
        raise PathkitError(f"{out_png}: no tile coordinates to draw a heatmap from")
    xs = table["x"].to_numpy().astype(np.float64)
    ys = table["y"].to_numpy().astype(np.float64)
    if tile_size0 is None:
        steps = np.diff(np.unique(np.concatenate([xs, ys])))
        tile_size0 = int(steps[steps > 0].min()) if (steps > 0).any() else 1
    sizes = np.broadcast_to(np.asarray(tile_size0, dtype=np.float64), xs.shape)
    if thumbnail is not None and Path(thumbnail).exists() and downsample is not None:
        base = np.asarray(Image.open(thumbnail).convert("RGB"), dtype=np.float64)
        dsx, dsy = downsample
    else:
        extent_x = float((xs + sizes).max())
        extent_y = float((ys + sizes).max())
        # A blank canvas needs no slide resolution: a few pixels per tile show the pattern.
        scale = max(float(sizes.min()) / blank_tile_px, max(extent_x, extent_y) / max_side, 1e-9)
        dsx = dsy = scale
        base = np.full((max(1, int(np.ceil(extent_y / dsy))), max(1, int(np.ceil(extent_x / dsx))), 3), 255.0)
    h, w = base.shape[:2]
    overlay = base.copy()
    colours = _ramp(table["attention_percentile"].to_numpy())
    x0 = np.clip(np.floor(xs / dsx).astype(int), 0, w - 1)
    y0 = np.clip(np.floor(ys / dsy).astype(int), 0, h - 1)
    x1 = np.clip(np.ceil((xs + sizes) / dsx).astype(int), x0 + 1, w)
    y1 = np.clip(np.ceil((ys + sizes) / dsy).astype(int), y0 + 1, h)
    # Least attended first, so that the most attended tiles stay on top where tiles overlap.
    for i in np.argsort(table["attention_percentile"].to_numpy(), kind="mergesort"):
        overlay[y0[i]:y1[i], x0[i]:x1[i]] = colours[i]
    blended = (base * (1 - alpha) + overlay * alpha).clip(0, 255).astype(np.uint8)
    img = Image.fromarray(blended)
    return atomic_write_with(Path(out_png), lambda tmp: img.save(tmp, format="PNG"))


def _tile_sources(case: Case | None, feature_file: Path, ordinal: int, tile_dir: Path | None) -> dict[str, Any]:
    """Where the tile manifest and QC thumbnail of one feature file are: the case's meta
    (`tile_manifests`, `thumbnails`, aligned with its feature files) or `<tile_dir>/<slide_id>.*`."""
    meta: Mapping[str, Any] = case.meta if case is not None else {}
    slide_ids = meta.get("slide_ids") or ()
    slide_id = str(slide_ids[ordinal]) if ordinal < len(slide_ids) else slide_id_of(feature_file)
    manifests = meta.get("tile_manifests") or ()
    thumbs = meta.get("thumbnails") or ()
    manifest = Path(manifests[ordinal]) if ordinal < len(manifests) and manifests[ordinal] else None
    thumb = Path(thumbs[ordinal]) if ordinal < len(thumbs) and thumbs[ordinal] else None
    if manifest is None and tile_dir is not None and (tile_dir / f"{slide_id}.parquet").exists():
        manifest = tile_dir / f"{slide_id}.parquet"
    if thumb is None and tile_dir is not None and (tile_dir / f"{slide_id}.qc.png").exists():
        thumb = tile_dir / f"{slide_id}.qc.png"
    return {"slide_id": slide_id, "manifest": manifest, "thumbnail": thumb}


def export_run_attention(
    model: Any,
    bags: Any,
    cases: Sequence[Case],
    out_dir: str | Path,
    *,
    tile_dir: str | Path | None = None,
    heatmaps: bool = True,
) -> Path:
    """For every test bag: per slide a Parquet/CSV attention table aligned with its tile
    manifest and a heatmap PNG; `index.csv` lists them (and why a heatmap is missing)."""
    import numpy as np
    import torch

    out_dir = Path(out_dir)
    tile_dir = Path(tile_dir) if tile_dir is not None else None
    by_id = {c.case_id: c for c in cases}
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    model.eval()
    index_rows: list[dict[str, Any]] = []
    for position in range(len(bags)):
        item = bags[position]
        case = by_id.get(item["case_id"])
        batch = model.collate([item])
        batch = {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in batch.items()}
        with torch.no_grad():
            result = model.tile_attention(batch)[0]
        files = np.asarray(result.get("tile_file", np.zeros(len(result["tile_index"]), np.int64)))
        all_files = np.asarray(item.get("tile_file", torch.zeros(len(item["features"]))).cpu())
        all_index = np.asarray(item.get("tile_index", torch.arange(len(item["features"]))).cpu())
        all_coords = np.asarray(item["coords"].cpu()) if "coords" in item else None
        feature_files = bags.specs[position].feature_files if isinstance(bags, ItemsWithBagSpecs) else ()
        for ordinal in sorted(set(files.tolist())):
            sel = files == ordinal
            tile_index = np.asarray(result["tile_index"])[sel]
            coords = None
            if all_coords is not None:
                keys = all_files.astype(np.int64) * (1 << 40) + all_index.astype(np.int64)
                pos = np.searchsorted(keys, ordinal * (1 << 40) + tile_index)
                coords = all_coords[pos]
            feature_file = Path(feature_files[ordinal]) if ordinal < len(feature_files) else Path(item["case_id"])
            source = _tile_sources(case, feature_file, ordinal, tile_dir)
            tiles, meta = (read_tile_table(source["manifest"]) if source["manifest"] is not None else (None, {}))
            table = attention_table(source["slide_id"], tile_index, np.asarray(result["attention"])[sel],
                                    np.asarray(result["attention_score"])[sel], coords=coords, tiles=tiles,
                                    where=f"case {item['case_id']}, {feature_file.name}")
            parquet, _ = write_attention(table, out_dir, source["slide_id"])
            row = {"case_id": item["case_id"], "slide_id": source["slide_id"], "n_tiles": table.height,
                   "table": parquet.name, "heatmap": "", "note": ""}
            if heatmaps:
                thumb_meta = meta.get("thumbnail") or {}
                downsample = ((float(thumb_meta["downsample_x"]), float(thumb_meta["downsample_y"]))
                              if {"downsample_x", "downsample_y"} <= set(thumb_meta) else None)
                size0 = None
                if tiles is not None and "size0" in tiles.columns:
                    size0 = int(tiles["size0"].max())
                try:
                    png = render_heatmap(table, slide_file(out_dir, source["slide_id"], ".heatmap.png"),
                                         thumbnail=source["thumbnail"] if downsample else None,
                                         downsample=downsample, tile_size0=size0)
                    row["heatmap"] = png.name
                    if source["thumbnail"] is None or downsample is None:
                        row["note"] = "no QC thumbnail: drawn on a blank canvas"
                except PathkitError as exc:
                    row["note"] = str(exc)
            index_rows.append(row)
    lines = []
    header = ["case_id", "slide_id", "n_tiles", "table", "heatmap", "note"]
    for row in index_rows:
        lines.append(row)
    _write_index(out_dir / "index.csv", header, lines)
    return out_dir


def _write_index(path: Path, header: list[str], rows: list[dict[str, Any]]) -> None:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())


__all__ = [
    "ATTENTION_COLUMNS",
    "attention_table",
    "export_run_attention",
    "read_tile_table",
    "render_heatmap",
    "slide_id_of",
    "write_attention",
]


def attention_index(run_dir: str | Path, checkpoint: str = "best") -> list[dict[str, str]]:
    """Rows of `<run>/attention/<checkpoint>/index.csv` (case, slide, table, heatmap, note) as
    `export_run_attention` wrote them; [] when the run exported none."""
    path = Path(run_dir) / "attention" / checkpoint / "index.csv"
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
