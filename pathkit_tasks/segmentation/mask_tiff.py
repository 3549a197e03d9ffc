"""Pyramidal TIFF masks at the slide's own geometry, which OpenSlide and QuPath open in place.

Level 0 has the slide's level-0 size and mpp (resolution tags, centimetre unit); each further
level halves it, down to one tile. Every level is a tiled page in the main IFD chain and the
reduced ones carry subfiletype=1: OpenSlide opens such a file as `generic-tiff` and ignores
`subifds` pyramids (docs/wsi.md, "How OpenSlide opens a TIFF pathkit writes"). Pixels come from a
cell map by their centres, tile by tile, so a 100,000 px slide is written in constant memory; tiles
of one value (most of them) are compressed once, and a run of identical tiles in file order (background, the inside of a
region) is stored once, every tile of the run pointing at the same bytes (tifffile's iterator of
(bytes, byte count) items; libtiff, OpenSlide and tifffile read tiles by offset and count, so
shared data reads as repeated tiles). Deflate: masks must stay exact (JPEG would blur the labels).
"""

from __future__ import annotations

import itertools
import math
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import atomic_path

if TYPE_CHECKING:
    import numpy as np

TILE = 256
# zlib level of the tiles: 1 is three times faster than 6 on mask tiles (long runs of a few
# values) for about twice the bytes, a few hundred per tile.
DEFLATE_LEVEL = 1


def palette(colours: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """A TIFF colour map (3, 256) uint16: value 0 white (no tissue), value i the colour i - 1."""
    import numpy as np

    cmap = np.zeros((3, 256), dtype=np.uint16)
    cmap[:, 0] = 65535
    for i, rgb in enumerate(colours[:255], start=1):
        cmap[:, i] = [c * 257 for c in rgb]
    return cmap


def level_sizes(width0: int, height0: int) -> list[tuple[int, int, int]]:
    """(width, height, downsample) of each pyramid level: halving until one tile holds it."""
    out, d = [(width0, height0, 1)], 1
    while max(out[-1][0], out[-1][1]) > TILE:
        d *= 2
        out.append((max(1, math.ceil(width0 / d)), max(1, math.ceil(height0 / d)), d))
    return out


def _block_sums(flags: np.ndarray, r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
    """Sum of `flags` over each block [r0, r1) x [c0, c1) (broadcast arrays), by a summed-area table."""
    import numpy as np

    sat = np.zeros((flags.shape[0] + 1, flags.shape[1] + 1), dtype=np.int64)
    if flags.size:
        np.cumsum(np.cumsum(flags, axis=0, dtype=np.int64), axis=1, out=sat[1:, 1:])
    r0, r1 = np.clip(r0, 0, flags.shape[0]), np.clip(r1, 0, flags.shape[0])
    c0, c1 = np.clip(c0, 0, flags.shape[1]), np.clip(c1, 0, flags.shape[1])
    return sat[r1, c1] - sat[r0, c1] - sat[r1, c0] + sat[r0, c0]


class _Runs(dict):
    """Per tile t of `TILE` entries of `index` (the cell of each pixel, non-decreasing), worked out
    when first asked (only tiles across cell borders ask): the distinct cells in order and how
    many pixels each spans."""

    def __init__(self, index: np.ndarray) -> None:
        super().__init__()
        self.index = index

    def __missing__(self, t: int) -> tuple[np.ndarray, tuple[int, ...]]:
        import numpy as np

        part = self.index[t * TILE:(t + 1) * TILE]
        bounds = [0, *(np.flatnonzero(part[1:] != part[:-1]) + 1).tolist(), len(part)]
        self[t] = runs = (part[bounds[:-1]], tuple(b - a for a, b in zip(bounds, bounds[1:], strict=False)))
        return runs


def _tiles(cells: np.ndarray, cell0: float, width: int, height: int, downsample: int, *, plain: dict[int, bytes],
           pool: ThreadPoolExecutor) -> Iterator[bytes]:
    """Deflate-compressed tiles of one level, each pixel the cell under its centre. Which tiles lie
    on one value is found for the whole level at once (summed-area tables of where neighbouring
    cells differ), and their values read at once: a tile of one value, most of a slide, is its
    value's compressed tile in `plain` (shared by the levels). A tile across cell borders is the
    few cells under it, each repeated over its pixels; tiles made of the same cells at the same
    offsets (along a straight border) are compressed once, in `pool`, one tile row ahead of the
    row being handed out."""
    import numpy as np

    rows_n, cols_n = cells.shape
    n_ty, n_tx = math.ceil(height / TILE), math.ceil(width / TILE)
    row_of = np.minimum(((np.arange(n_ty * TILE) + 0.5) * downsample / cell0).astype(np.int64), rows_n - 1)
    col_of = np.minimum(((np.arange(n_tx * TILE) + 0.5) * downsample / cell0).astype(np.int64), cols_n - 1)
    r0, r1 = row_of[::TILE][:, None], row_of[TILE - 1::TILE][:, None]
    c0, c1 = col_of[::TILE][None, :], col_of[TILE - 1::TILE][None, :]
    across = _block_sums(cells[:, 1:] != cells[:, :-1], r0, r1 + 1, c0, c1)
    down = _block_sums(cells[1:, :] != cells[:-1, :], r0, r1, c0, c1 + 1)
    whole = ((np.arange(n_ty) + 1) * TILE <= height)[:, None] & ((np.arange(n_tx) + 1) * TILE <= width)[None, :]
    uniform = (across == 0) & (down == 0) & whole
    first = cells[r0, c0]  # (n_ty, n_tx): the cell under each tile's first pixel, its value if uniform
    for value in np.unique(first[uniform]).tolist():
        if value not in plain:
            plain[value] = _deflate(np.full((TILE, TILE), value, dtype=np.uint8))
    row_runs, col_runs = _Runs(row_of), _Runs(col_of)
    packed: dict[Any, Future[bytes]] = {}  # border tiles by content, compressed in the pool

    def submit(ty: int) -> tuple[list[Any], dict[int, Any]]:
        """Row ty's uniform tiles and its border tiles' keys, their compression started."""
        row: list[Any] = [plain.get(v) for v in first[ty].tolist()]
        keys: dict[int, Any] = {}
        mixed = np.flatnonzero(~uniform[ty]).tolist()
        if mixed:
            r_cells, r_span = row_runs[ty]
            inside_h = min(TILE, max(0, height - ty * TILE))
            for tx in mixed:
                c_cells, c_span = col_runs[tx]
                block = cells[r_cells[:, None], c_cells]
                inside_w = min(TILE, max(0, width - tx * TILE))
                keys[tx] = key = (block.tobytes(), block.shape, r_span, c_span, inside_h, inside_w)
                if key not in packed:
                    tile = np.repeat(np.repeat(block, r_span, axis=0), c_span, axis=1)
                    tile[inside_h:, :] = 0  # beyond the image edge: padding, not tissue
                    tile[:, inside_w:] = 0
                    packed[key] = pool.submit(_deflate, tile)
        return row, keys

    # one row ahead: the pool compresses row ty + 1's border tiles while row ty is handed over
    ahead = submit(0) if n_ty else None
    for ty in range(n_ty):
        row, keys = ahead
        ahead = submit(ty + 1) if ty + 1 < n_ty else None
        for tx, key in keys.items():
            row[tx] = packed[key].result()
        yield from row


def _shared_runs(tiles: Iterable[bytes]) -> Iterator[tuple[bytes, int]]:
    """tifffile's (bytes written, byte count) item per tile: a run of consecutive identical tiles
    writes its bytes once, with its last tile; the others write nothing, so that their offsets
    are where those bytes land."""
    previous, run = None, 0
    for data in tiles:
        if data is previous or (run and data == previous):
            run += 1
            continue
        if run:
            yield from itertools.repeat((b"", len(previous)), run - 1)
            yield previous, len(previous)
        previous, run = data, 1
    if run:
        yield from itertools.repeat((b"", len(previous)), run - 1)
        yield previous, len(previous)


def _deflate(tile: np.ndarray) -> bytes:
    import numpy as np

    return zlib.compress(np.ascontiguousarray(tile, dtype=np.uint8).tobytes(), DEFLATE_LEVEL)


def _threads() -> int:
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def write_mask_tiff(path: str | Path, cells: np.ndarray, *, cell0: float, slide_size: tuple[int, int],
                    slide_mpp: float | None, colours: Sequence[tuple[int, int, int]] | None = None,
                    description: str = "") -> Path:
    """Write the uint8 cell map `cells` (H, W; each cell `cell0` level-0 px) as a pyramidal TIFF
    of the slide's level-0 size, atomically. With `colours`, a palette image (value i drawn in
    colour i - 1, 0 white); otherwise greyscale (a binary mask: 0 and 255)."""
    import numpy as np
    import tifffile

    cells = np.ascontiguousarray(cells, dtype=np.uint8)
    if cells.ndim != 2 or cell0 <= 0:
        raise PathkitError(f"{path}: a mask TIFF needs a 2-D cell map and a positive cell size")
    width0, height0 = int(slide_size[0]), int(slide_size[1])
    target = Path(path)
    plain: dict[int, bytes] = {}
    with ThreadPoolExecutor(max_workers=_threads()) as pool, atomic_path(target) as tmp, \
            tifffile.TiffWriter(tmp, bigtiff=width0 * height0 > 2**31) as tw:
        for level, (w, h, d) in enumerate(level_sizes(width0, height0)):
            kwargs: dict[str, Any] = dict(
                shape=(h, w), dtype=np.uint8, tile=(TILE, TILE), compression="deflate",
                subfiletype=1 if level else 0, metadata=None,
                photometric="palette" if colours is not None else "minisblack",
            )
            if colours is not None:
                kwargs["colormap"] = palette(colours)
            if level == 0 and description:
                kwargs["description"] = description
            if slide_mpp:
                # pixels per centimetre of this level (its downsample measured from sizes, as OpenSlide does)
                kwargs.update(resolution=(1e4 / (slide_mpp * width0 / w), 1e4 / (slide_mpp * height0 / h)),
                              resolutionunit="CENTIMETER")
            tw.write(_shared_runs(_tiles(cells, cell0, w, h, d, plain=plain, pool=pool)), **kwargs)
    return target
