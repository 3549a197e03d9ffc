"""The per-slide tile manifest: a Parquet table of tiles with the slide and parameter metadata
(docs/file-formats.md, "Tile manifest")."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.formats import check_version
from pathkit_core.workspace import atomic_write_with, canonical_json, sha256_file

if TYPE_CHECKING:
    import polars as pl

MANIFEST_FORMAT = "pathkit.tile_manifest"
MANIFEST_VERSION = 1
# Key of the JSON metadata in the Parquet key-value metadata.
META_KEY = "pathkit.manifest"

# Column -> polars dtype name; the order is the file's column order.
TILE_COLUMNS: dict[str, str] = {
    "slide_id": "String", "tile_index": "Int64", "x": "Int64", "y": "Int64", "level": "Int32", "read_px": "Int32",
    "size0": "Int32", "tile_px": "Int32", "target_mpp": "Float64", "tissue_fraction": "Float64",
    "grid_col": "Int32", "grid_row": "Int32",
}

REQUIRED_META = (
    "slide_id", "slide_path", "slide_sha256", "params_hash", "target_mpp", "tile_px",
    "mpp", "mpp_source", "width", "height",
)


def _schema() -> dict[str, Any]:
    import polars as pl

    return {name: getattr(pl, dtype) for name, dtype in TILE_COLUMNS.items()}


def empty_tiles() -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(schema=_schema())


@dataclass
class Manifest:
    """A slide's tiles (`tiles`, a polars DataFrame) and metadata (`meta`), read from `path`."""

    tiles: pl.DataFrame
    meta: dict[str, Any]
    path: Path | None = None
    _file_hash: str | None = field(default=None, repr=False)

    @property
    def slide_id(self) -> str:
        return str(self.meta["slide_id"])

    @property
    def slide_path(self) -> Path:
        return Path(self.meta["slide_path"])

    @property
    def n_tiles(self) -> int:
        return int(self.tiles.height)

    @property
    def tile_px(self) -> int:
        return int(self.meta["tile_px"])

    @property
    def target_mpp(self) -> float:
        return float(self.meta["target_mpp"])

    @property
    def params_hash(self) -> str:
        return str(self.meta["params_hash"])

    def coords(self) -> Any:
        """(N, 2) int64 numpy array of level-0 (x, y), in tile_index order."""
        return self.tiles.select("x", "y").to_numpy()

    def file_sha256(self) -> str:
        """sha256 of the manifest file (what feature files record as the manifest hash)."""
        if self.path is None:
            raise PathkitError("this manifest was not read from a file")
        if self._file_hash is None:
            self._file_hash = sha256_file(self.path)
        return self._file_hash


def _check_columns(tiles: pl.DataFrame, where: str) -> pl.DataFrame:
    missing = [c for c in TILE_COLUMNS if c not in tiles.columns]
    if missing:
        raise PathkitError(f"{where}: tile manifest lacks column(s) {', '.join(missing)}")
    return tiles.select(list(TILE_COLUMNS)).cast(_schema())


def write_manifest(path: str | Path, tiles: pl.DataFrame, meta: dict[str, Any]) -> Path:
    """Write tiles + metadata atomically as one Parquet file (metadata as JSON key-value)."""
    import pyarrow.parquet as pq

    target = Path(path)
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise PathkitError(f"{target}: manifest metadata lacks {', '.join(missing)}")
    tiles = _check_columns(tiles, str(target))
    full_meta = {"format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION, **meta}
    table = tiles.to_arrow().replace_schema_metadata({META_KEY: canonical_json(full_meta)})
    return atomic_write_with(target, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def slide_identities(path: str | Path, meta: Mapping[str, Any]) -> tuple[str | None, str]:
    """(the identity a manifest recorded of its slide, the identity of the file at `path` made
    the same way): its content identity (`pathkit_core.sources.file_identity`) where the manifest
    holds one, else the whole file's sha256 an older manifest holds."""
    if meta.get("slide_identity"):
        from pathkit_core.wsi.scenes import content_identity

        return meta["slide_identity"], content_identity(path)
    return meta.get("slide_sha256"), sha256_file(path)


def read_manifest_meta(path: str | Path) -> dict[str, Any]:
    """Only the metadata (cheap: reads the Parquet footer, not the tiles)."""
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.is_file():
        raise PathkitError(f"{p}: tile manifest not found")
    try:
        schema = pq.read_schema(p)
    except Exception as exc:  # noqa: BLE001 - any parse failure means a damaged file
        raise PathkitError(f"{p}: not a readable Parquet tile manifest ({exc})") from None
    raw = (schema.metadata or {}).get(META_KEY.encode())
    if raw is None:
        raise PathkitError(f"{p}: Parquet file without pathkit manifest metadata ({META_KEY!r})")
    meta = json.loads(raw)
    if meta.get("format") != MANIFEST_FORMAT:
        raise PathkitError(f"{p}: not a pathkit tile manifest (format {meta.get('format')!r})")
    check_version(meta.get("format_version"), what="tile manifest", path=p, current=MANIFEST_VERSION,
                  redo=f"pathkit tile {meta.get('slide_path') or 'SLIDE'} --out NEW_FOLDER")
    return meta


def read_manifest(path: str | Path) -> Manifest:
    """Read a tile manifest written by `write_manifest` (or `pathkit tile`)."""
    import polars as pl
    import pyarrow.parquet as pq

    p = Path(path)
    meta = read_manifest_meta(p)
    tiles = _check_columns(pl.from_arrow(pq.read_table(p)), str(p))  # type: ignore[arg-type]
    n_meta = meta.get("n_tiles")
    if n_meta is not None and int(n_meta) != tiles.height:
        raise PathkitError(f"{p}: manifest says {n_meta} tiles but holds {tiles.height}")
    return Manifest(tiles=tiles, meta=meta, path=p)


def write_manifest_csv(path: str | Path, tiles: pl.DataFrame) -> Path:
    """CSV export of the tile table (the Parquet file stays the one with metadata)."""
    tiles = _check_columns(tiles, str(path))
    return atomic_write_with(Path(path), lambda tmp: tiles.write_csv(tmp))
