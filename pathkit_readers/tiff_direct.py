"""The OpenSlide reader's direct decoding of the JPEG-tiled TIFF levels of Aperio and generic-tiff slides
(`OpenSlideReader.direct_levels`): OpenSlide's pixels bit for bit, checked against it (docs/wsi.md, "Direct
TIFF decoding"). A region it cannot serve exactly returns False and is read through OpenSlide, which also
raises the documented errors."""

from __future__ import annotations

import logging
import os
import struct
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import simplejpeg
import tifffile

from pathkit_core.wsi.slide import read_rgb

log = logging.getLogger(__name__)

#: OpenSlide vendors whose levels are exactly the tiled pages of the TIFF file.
DIRECT_VENDORS = frozenset({"aperio", "generic-tiff"})
_JPEG = 7
_ADOBE_TRANSFORM = {2: 0, 6: 1}  # TIFF photometric RGB / YCbCr -> Adobe APP14 transform flag
_SOI = b"\xff\xd8"
_CACHE_BYTES = 32 << 20  # decoded tiles kept for regions that straddle tile borders


@dataclass(frozen=True)
class _Level:
    width: int
    height: int
    tile_w: int
    tile_h: int
    across: int
    offsets: np.ndarray
    counts: np.ndarray
    header: bytes  # SOI, the Adobe colour-space marker, the page's JPEG tables


class DirectTiffLevels:
    """Reads regions of the JPEG-tiled levels of one slide file, in this process only: a
    `pathkit_core.contracts.SlideReader.DirectLevels`."""

    def __init__(self, path: Path, handle: Any, levels: dict[int, _Level], downsamples: tuple[float, ...]) -> None:
        self.path = path
        self.handle = handle  # the OpenSlide handle each level's first read is compared with
        self.levels = levels
        self.downsamples = downsamples
        self.verified: set[int] = set()
        self.enabled = True
        self.direct_reads = 0  # regions served here (tests and benchmarks look at it)
        self._fd: int | None = os.open(path, os.O_RDONLY)
        self._cache: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._cache_bytes = 0

    @classmethod
    def open(cls, path: str | Path, handle: Any) -> DirectTiffLevels | None:
        """The direct reader for an open OpenSlide `handle`, or None if no level qualifies."""
        path = Path(path)
        if handle.properties.get("openslide.vendor") not in DIRECT_VENDORS:
            return None
        try:
            with tifffile.TiffFile(path) as tif:
                pages = [p for p in tif.pages if getattr(p, "is_tiled", False)]
                levels: dict[int, _Level] = {}
                for level, (w, h) in enumerate(handle.level_dimensions):
                    page = next((p for p in pages if (p.imagewidth, p.imagelength) == (w, h)), None)
                    if page is None or not _decodable(page):
                        continue
                    levels[level] = _Level(
                        width=w, height=h, tile_w=int(page.tilewidth), tile_h=int(page.tilelength),
                        across=-(-w // int(page.tilewidth)),
                        offsets=np.asarray(page.dataoffsets, dtype=np.int64),
                        counts=np.asarray(page.databytecounts, dtype=np.int64),
                        header=_stream_header(page),
                    )
        except Exception as exc:  # noqa: BLE001 - any parse problem means: read through OpenSlide
            log.debug("%s: no direct TIFF reading (%s)", path, exc)
            return None
        if not levels:
            return None
        return cls(path, handle, levels, tuple(float(d) for d in handle.level_downsamples))

    def read(self, level: int, location: tuple[int, int], size: tuple[int, int], out: np.ndarray) -> bool:
        """Fill `out` (h, w, 3 uint8, C-contiguous) with OpenSlide's `read_rgb` of the region.

        `location` is in level-0 pixels, as OpenSlide takes it. Returns False, with `out` in an
        undefined state, when the region must be read through OpenSlide instead. A level's first
        read is compared with OpenSlide's (`check`).
        """
        lv = self.levels.get(level)
        if lv is None or not self.enabled or self._fd is None:
            return False
        ds = self.downsamples[level]
        fx, fy = location[0] / ds, location[1] / ds
        if not (fx.is_integer() and fy.is_integer()):
            return False  # OpenSlide resamples sub-pixel offsets
        x0, y0 = int(fx), int(fy)
        w, h = int(size[0]), int(size[1])
        try:
            if x0 % lv.tile_w == 0 and y0 % lv.tile_h == 0 and (w, h) == (lv.tile_w, lv.tile_h) \
                    and x0 + w <= lv.width and y0 + h <= lv.height and out.flags.c_contiguous:
                self._decode(lv, (y0 // lv.tile_h) * lv.across + x0 // lv.tile_w, out)
            else:
                self._stitch(level, lv, x0, y0, w, h, out)
            if level not in self.verified:
                self.check(level, out, read_rgb(self.handle, location, level, (w, h), path=self.path))
        except Exception as exc:  # noqa: BLE001 - OpenSlide reads it again and reports the error
            log.debug("%s: direct read of level %d at %s failed (%s)", self.path, level, location, exc)
            return False
        self.direct_reads += 1
        return True

    def _decode(self, lv: _Level, k: int, out: np.ndarray) -> None:
        count = int(lv.counts[k])
        if count == 0:
            out[...] = 255  # a tile never written: transparent in OpenSlide, white here
            return
        assert self._fd is not None
        data = os.pread(self._fd, count, int(lv.offsets[k]))
        if len(data) != count or not data.startswith(_SOI):
            raise OSError(f"tile {k} is not a JPEG stream")
        decoded = simplejpeg.decode_jpeg(lv.header + data[2:], colorspace="RGB", fastdct=False, fastupsample=False,
                                         strict=True, buffer=out)
        if decoded.shape != out.shape:
            raise ValueError(f"tile {k} decodes to {decoded.shape}, expected {out.shape}")
        if not np.shares_memory(decoded, out):
            out[...] = decoded

    def _tile(self, level: int, lv: _Level, k: int) -> np.ndarray:
        key = (level, k)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        tile = np.empty((lv.tile_h, lv.tile_w, 3), dtype=np.uint8)
        self._decode(lv, k, tile)
        self._cache[key] = tile
        self._cache_bytes += tile.nbytes
        while self._cache_bytes > _CACHE_BYTES and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cache_bytes -= old.nbytes
        return tile

    def _stitch(self, level: int, lv: _Level, x0: int, y0: int, w: int, h: int, out: np.ndarray) -> None:
        # Clip the region to the level; what lies outside is white, as OpenSlide's transparent
        # pixels are after compositing.
        cx0, cy0 = max(x0, 0), max(y0, 0)
        cx1, cy1 = min(x0 + w, lv.width), min(y0 + h, lv.height)
        if (cx0, cy0, cx1, cy1) != (x0, y0, x0 + w, y0 + h):
            out[...] = 255
        if cx0 >= cx1 or cy0 >= cy1:
            return
        tw, th = lv.tile_w, lv.tile_h
        for ty in range(cy0 // th, (cy1 - 1) // th + 1):
            for tx in range(cx0 // tw, (cx1 - 1) // tw + 1):
                tile = self._tile(level, lv, ty * lv.across + tx)
                # overlap of this tile (origin ox, oy) with the clipped region, in level pixels
                ox, oy = tx * tw, ty * th
                ax0, ay0, ax1, ay1 = max(cx0, ox), max(cy0, oy), min(cx1, ox + tw), min(cy1, oy + th)
                out[ay0 - y0:ay1 - y0, ax0 - x0:ax1 - x0] = tile[ay0 - oy:ay1 - oy, ax0 - ox:ax1 - ox]

    def check(self, level: int, direct: np.ndarray, reference: np.ndarray) -> None:
        """Record the comparison of a direct read with OpenSlide's; a mismatch disables the path and
        `direct` takes OpenSlide's pixels."""
        if np.array_equal(direct, reference):
            self.verified.add(level)
            return
        direct[...] = reference
        self.enabled = False
        log.warning("%s: level %d decoded directly differs from OpenSlide's pixels; reading this slide through "
                    "OpenSlide", self.path, level)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._cache.clear()
        self._cache_bytes = 0


def _stream_header(page: Any) -> bytes:
    """What goes before a tile's stream (minus its own SOI): SOI, Adobe APP14, the JPEG tables.

    libjpeg takes a 3-component stream with an Adobe marker as RGB (transform 0) or YCbCr
    (transform 1); without one it guesses from the component ids, which Aperio's RGB tiles fail.
    """
    body = b"Adobe" + struct.pack(">HHHB", 100, 0, 0, _ADOBE_TRANSFORM[int(page.photometric)])
    app14 = b"\xff\xee" + struct.pack(">H", len(body) + 2) + body
    tables = bytes(page.jpegtables or b"")
    if tables:  # an abbreviated stream of tables: SOI, DQT/DHT segments, EOI
        tables = tables[2:-2] if tables.startswith(_SOI) and tables.endswith(b"\xff\xd9") else b""
    return _SOI + app14 + tables


def _decodable(page: Any) -> bool:
    """A page whose tiles are baseline 8-bit 3-sample JPEG in one plane (a page tifffile cannot describe
    raises, and `DirectTiffLevels.open` leaves the slide to OpenSlide)."""
    return (int(page.compression) == _JPEG and int(page.photometric) in _ADOBE_TRANSFORM
            and int(page.planarconfig) == 1 and int(page.samplesperpixel) == 3 and int(page.bitspersample) == 8
            and len(page.dataoffsets) == -(-page.imagewidth // page.tilewidth) * -(-page.imagelength // page.tilelength)
            )
