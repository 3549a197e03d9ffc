"""Tile reader: a torch Dataset over a tile manifest yielding uint8 RGB tiles, one slide handle per process
(docs/wsi.md, section 5). Streaming them with worker processes (`iter_tile_batches`, `tile_loader`) is
`pathkit_sdk.tiles`; their names here warn until pathkit 0.3."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from pathkit_core._deprecation import moved_names
from pathkit_core.contracts import PathkitError, SlideReader
from pathkit_core.wsi.manifest import Manifest, read_manifest, slide_identities
from pathkit_core.wsi.resample import resize_tiles
from pathkit_core.wsi.scenes import slide_file
from pathkit_core.wsi.slide import SlideError, read_rgb


def direct_enabled() -> bool:
    """False when `PATHKIT_DIRECT_TIFF=0` asks every tile reader to read through the slide handle."""
    return os.environ.get("PATHKIT_DIRECT_TIFF", "1").strip().lower() not in ("0", "false", "no", "off")


class TileReader(Dataset):
    """Map-style dataset: `reader[i]` is manifest row i as uint8 (tile_px, tile_px, 3) RGB.

    The slide handle opens lazily, with the reader that tiled the slide, and is reopened when the process
    id changes, so each DataLoader worker reads through its own. `direct` (default `$PATHKIT_DIRECT_TIFF`)
    reads the levels the reader decodes itself (`SlideReader.direct_levels`). `slide_path` overrides the
    manifest's (a slide moved since tiling).
    """

    def __init__(self, manifest: Manifest | str | Path, slide_path: str | Path | None = None, *,
                 direct: bool | None = None) -> None:
        self.manifest = manifest if isinstance(manifest, Manifest) else read_manifest(manifest)
        self.direct = direct_enabled() if direct is None else bool(direct)
        self.slide_path = Path(slide_path) if slide_path is not None else self.manifest.slide_path
        tiles = self.manifest.tiles
        self._x, self._y = tiles["x"].to_numpy(), tiles["y"].to_numpy()
        self._level, self._read_px, self._tile_px = (tiles[c].to_numpy() for c in ("level", "read_px", "tile_px"))
        self._handle: Any = None
        self._decoder: SlideReader.DirectLevels | None = None
        self._pid: int | None = None
        self._scratch: Any = None  # reused uint32 read buffer
        self._raw: Any = None  # reused regions of read_batch before resampling
        if not slide_file(self.slide_path).exists():
            raise PathkitError(f"{self.slide_path}: slide of manifest {self.manifest.path} not found (pass "
                               "slide_path= if the slide moved)")

    def __len__(self) -> int:
        return int(self._x.shape[0])

    @property
    def tile_px(self) -> int:
        return self.manifest.tile_px

    def _slide(self) -> Any:
        pid = os.getpid()
        if self._handle is None or self._pid != pid:
            from pathkit_core.wsi.reader_choice import get_reader, open_handle

            name = str(self.manifest.meta.get("slide_reader") or "openslide")  # the reader that tiled it
            self._handle, _ = open_handle(self.slide_path, name)
            self._pid = pid
            self._decoder = get_reader(name)().direct_levels(self.slide_path, self._handle) if self.direct else None
        return self._handle

    def read(self, i: int, out: np.ndarray | None = None) -> np.ndarray:
        """Tile i as uint8 (tile_px, tile_px, 3), written into `out` when given."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"tile {i} out of range for {len(self)} tiles")
        return self.read_batch([i], None if out is None else out[None])[0]

    def read_batch(self, rows: Sequence[int] | np.ndarray, out: np.ndarray | None = None, *,
                   resample: bool = True) -> np.ndarray:
        """Tiles `rows` as one uint8 (B, tile_px, tile_px, 3) array, resampled as one batch.

        `resample=False` returns the regions as read, (B, read_px, read_px, 3), for a caller that
        resamples them elsewhere (on the GPU: `pathkit_core.wsi.resample.resize_tiles`); rows
        of different read sizes are then resampled here all the same. `out` receives the tiles.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        n = len(self)
        if rows.size and (rows.min() < -n or rows.max() >= n):
            raise IndexError(f"tile rows out of range for {n} tiles")
        rows = rows % n if n else rows
        read_sizes, tile_sizes = np.unique(self._read_px[rows]), np.unique(self._tile_px[rows])
        read_px = int(read_sizes[0]) if rows.size else self.tile_px
        tile_px = int(tile_sizes[0]) if rows.size else self.tile_px
        if len(read_sizes) > 1 or len(tile_sizes) > 1:  # not from pathkit's tiler: one tile at a time
            tiles = np.stack([self.read(int(i)) for i in rows])
        elif read_px == tile_px or not resample:
            if out is not None and out.flags.c_contiguous and out.shape[1] == read_px:
                return self._read_regions(rows, read_px, out)
            tiles = self._read_regions(rows, read_px, np.empty((rows.size, read_px, read_px, 3), dtype=np.uint8))
        else:
            if self._raw is None or self._raw.shape[0] < rows.size or self._raw.shape[1] != read_px:
                self._raw = np.empty((rows.size, read_px, read_px, 3), dtype=np.uint8)
            tiles = resize_tiles(self._read_regions(rows, read_px, self._raw[: rows.size]), tile_px)
        if out is None:
            return tiles
        out[...] = tiles
        return out

    def _read_regions(self, rows: np.ndarray, read_px: int, out: np.ndarray) -> np.ndarray:
        for j, i in enumerate(rows):
            tile = self._region(int(i), int(self._level[i]), read_px, out[j])
            if tile is not out[j]:
                out[j] = tile
        return out

    def _region(self, i: int, level: int, px: int, out: np.ndarray) -> np.ndarray:
        """The (px, px) region of tile i at `level`: from the reader's direct levels when they serve it,
        else through the slide handle."""
        self._slide()
        if self._decoder is not None and self._decoder.read(level, (int(self._x[i]), int(self._y[i])), (px, px), out):
            return out
        return self._through_handle(i, level, px, out)

    def _through_handle(self, i: int, level: int, px: int, out: np.ndarray | None = None) -> np.ndarray:
        handle = self._slide()
        if self._scratch is None or self._scratch.size < px * px:
            self._scratch = np.empty(px * px, dtype=np.uint32)
        try:
            return read_rgb(handle, (int(self._x[i]), int(self._y[i])), level, (px, px), path=self.slide_path,
                            out=out, scratch=self._scratch)
        except SlideError as exc:
            # OpenSlide handles are unusable after an error; the next read reopens.
            self._drop_handles()
            raise PathkitError(f"{exc} (tile {i} of {self.manifest.path})") from None

    def __getitem__(self, i: int) -> np.ndarray:
        return self.read(i)

    def __iter__(self) -> Iterator[np.ndarray]:
        return map(self.read, range(len(self)))

    def verify_slide(self) -> None:
        """Raise PathkitError if the slide file is not the one the manifest was made from."""
        expected, actual = slide_identities(self.slide_path, self.manifest.meta)
        if expected != actual:
            raise PathkitError(
                f"{self.slide_path}: content identity {actual[:20]}... differs from the manifest's "
                f"{str(expected)[:20]}... ({self.manifest.path}); the slide changed since tiling, re-tile it"
            )

    def _drop_handles(self) -> None:
        if self._decoder is not None and self._pid == os.getpid():
            self._decoder.close()
        self._decoder = self._handle = None

    def close(self) -> None:
        if self._handle is not None and self._pid == os.getpid():
            self._handle.close()
        self._drop_handles()
        self._pid = None

    def __getstate__(self) -> dict[str, Any]:
        # handles and buffers do not cross processes
        return {**self.__dict__, "_handle": None, "_decoder": None, "_pid": None, "_scratch": None, "_raw": None}


class TileStream(IterableDataset):
    """Iterable dataset yielding (tile_index, tile), each DataLoader worker one contiguous block of the
    manifest (row-major tiles are neighbours on the slide, so the slide's tile cache is reused)."""

    def __init__(self, manifest: Manifest | str | Path, slide_path: str | Path | None = None, *,
                 direct: bool | None = None) -> None:
        self.reader = TileReader(manifest, slide_path, direct=direct)

    def __len__(self) -> int:
        return len(self.reader)

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        info, n = get_worker_info(), len(self.reader)
        per = n if info is None else -(-n // info.num_workers)
        start = 0 if info is None else info.id * per
        for i in range(start, min(n, start + per)):
            yield i, self.reader.read(i)


# moved to the helper API in pathkit 0.2 (docs/wsi.md, section 5): served with a warning until 0.3
__getattr__ = moved_names(__name__, dict.fromkeys(("iter_tile_batches", "tile_loader"), "pathkit_sdk.tiles"))
