"""Synthetic pyramidal TIFF slides with a controllable tissue layout, for tests, benchmarks and demos
(public: a plugin's demo and tests write their slides with it; docs/api/sdk.md).

OpenSlide opens the result as `generic-tiff` (mpp from the TIFF resolution tags) or, with
`aperio=True`, as `aperio` (mpp and objective power from the ImageDescription): every level is a
tiled page in the main IFD chain, reduced levels carry subfiletype=1 (docs/wsi.md, "How OpenSlide
opens a TIFF pathkit writes").
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import atomic_path

if TYPE_CHECKING:
    import numpy as np

RGB = tuple[int, int, int]

# Typical colours of an H&E slide at low magnification and of glass.
GLASS: RGB = (242, 241, 245)
EOSIN: RGB = (222, 140, 190)
HAEMATOXYLIN: RGB = (120, 80, 160)
NUCLEUS: RGB = (70, 40, 110)
PEN_COLOURS: dict[str, RGB] = {
    "blue": (30, 70, 170),
    "green": (60, 160, 120),
    "black": (35, 35, 40),
    "red": (190, 25, 35),
}

# A tissue renderer: level-0 x and y of pixel centres (H, W) and the level downsample -> RGB uint8.
TissueFn = Callable[["np.ndarray", "np.ndarray", float], "np.ndarray"]


@dataclass(frozen=True)
class Blob:
    """An elliptical piece of tissue. Centre and radii are fractions of the slide width/height.

    `texture`: "flat" (one colour), "noise" (stain-intensity noise) or "nuclei" (dark round
    nuclei on the base colour, `nuclei_density` per 100 um^2); colour and texture may encode a
    label so that encoders and heads have something to learn.
    """

    cx: float
    cy: float
    rx: float
    ry: float
    colour: RGB = EOSIN
    texture: str = "nuclei"
    angle_deg: float = 0.0
    nuclei_colour: RGB = NUCLEUS
    nuclei_density: float = 1.0
    nucleus_radius_um: float = 3.0
    noise: float = 10.0


@dataclass(frozen=True)
class PenStroke:
    """A marker line through `points` (fractions of width/height), `width_um` wide."""

    points: tuple[tuple[float, float], ...]
    colour: str | RGB = "blue"
    width_um: float = 400.0


def default_layout() -> list[Blob]:
    """Two pieces of tissue: an eosin-rich one and a cellular one."""
    return [
        Blob(0.3, 0.5, 0.18, 0.32, colour=EOSIN, texture="nuclei", nuclei_density=0.6),
        Blob(0.7, 0.45, 0.16, 0.25, colour=(180, 110, 175), texture="nuclei", angle_deg=30.0),
    ]


class _Layout:
    """Renders blobs and pen strokes, with bounding boxes for the fast paths."""

    def __init__(self, blobs: Sequence[Blob], strokes: Sequence[PenStroke], width: int, height: int,
                 mpp: float, background: RGB, seed: int) -> None:
        self.blobs = list(blobs)
        self.strokes = list(strokes)
        self.width, self.height, self.mpp = width, height, mpp
        self.background = background
        self.seed = seed
        self.blob_boxes = []
        for b in self.blobs:
            if b.texture not in ("flat", "noise", "nuclei"):
                raise PathkitError(f"unknown blob texture {b.texture!r}: flat, noise or nuclei")
            rx, ry = b.rx * width, b.ry * height
            t = math.radians(b.angle_deg)
            hx = math.hypot(rx * math.cos(t), ry * math.sin(t))
            hy = math.hypot(rx * math.sin(t), ry * math.cos(t))
            self.blob_boxes.append((b.cx * width - hx, b.cy * height - hy, b.cx * width + hx, b.cy * height + hy))
        self.stroke_boxes = []
        for s in self.strokes:
            half = s.width_um / mpp / 2.0
            xs = [p[0] * width for p in s.points]
            ys = [p[1] * height for p in s.points]
            self.stroke_boxes.append((min(xs) - half, min(ys) - half, max(xs) + half, max(ys) + half))

    def _inside(self, b: Blob, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Ellipse membership; x and y broadcast (a row and a column give the whole grid)."""
        t = math.radians(b.angle_deg)
        dx, dy = x - b.cx * self.width, y - b.cy * self.height
        ax, ay = b.rx * self.width, b.ry * self.height
        if b.angle_deg == 0.0:
            return (dx / ax) ** 2 + (dy / ay) ** 2 <= 1.0
        c, s = math.cos(t), math.sin(t)
        u = dx * c + dy * s
        v = dy * c - dx * s
        return (u / ax) ** 2 + (v / ay) ** 2 <= 1.0

    def classify(self, box: tuple[float, float, float, float]) -> tuple[str, int]:
        """("background", -1), ("interior", blob index) or ("mixed", -1) for a level-0 box."""
        x0, y0, x1, y1 = box

        def hits(b: tuple[float, float, float, float]) -> bool:
            return not (b[2] < x0 or b[0] > x1 or b[3] < y0 or b[1] > y1)

        touching = [i for i, b in enumerate(self.blob_boxes) if hits(b)]
        if any(hits(b) for b in self.stroke_boxes):
            return "mixed", -1
        if not touching:
            return "background", -1
        if len(touching) == 1:
            import numpy as np

            b = self.blobs[touching[0]]
            cx = np.array([x0, x1, x0, x1], dtype=np.float64)
            cy = np.array([y0, y0, y1, y1], dtype=np.float64)
            if self._inside(b, cx, cy).all():  # ellipses are convex
                return "interior", touching[0]
        return "mixed", -1

    def blob_pixels(self, b: Blob, x: np.ndarray, y: np.ndarray, ds: float, rng: Any) -> np.ndarray:
        import numpy as np

        base = np.broadcast_to(np.array(b.colour, dtype=np.float32), x.shape + (3,)).copy()
        if b.texture == "noise":
            amp = b.noise / math.sqrt(max(ds, 1.0))
            base += rng.normal(0.0, amp, size=x.shape)[..., None].astype(np.float32)
        elif b.texture == "nuclei":
            r_px = b.nucleus_radius_um / self.mpp / ds
            area_um2 = x.size * (self.mpp * ds) ** 2
            n = rng.poisson(b.nuclei_density * area_um2 / 100.0)
            fraction = min(1.0, b.nuclei_density * math.pi * b.nucleus_radius_um**2 / 100.0)
            nucleus = np.array(b.nuclei_colour, dtype=np.float32)
            if r_px < 1.0 or n > x.size:
                # Nuclei smaller than a pixel average into the colour.
                base = base * (1 - fraction) + nucleus * fraction
                base += rng.normal(0.0, 4.0, size=x.shape)[..., None].astype(np.float32)
            else:
                h, w = x.shape
                cy_ = rng.uniform(0, h, n)
                cx_ = rng.uniform(0, w, n)
                dots = np.zeros((h, w), dtype=bool)
                r_i = int(math.ceil(r_px))
                oy, ox = np.mgrid[-r_i:r_i + 1, -r_i:r_i + 1]
                disc = ox**2 + oy**2 <= r_px**2
                oy, ox = oy[disc], ox[disc]
                yy = (cy_.astype(np.int64)[:, None] + oy[None, :]).ravel()
                xx = (cx_.astype(np.int64)[:, None] + ox[None, :]).ravel()
                ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
                dots[yy[ok], xx[ok]] = True
                base[dots] = nucleus
                base += rng.normal(0.0, 5.0, size=x.shape)[..., None].astype(np.float32)
        return base

    def render(self, xs: np.ndarray, ys: np.ndarray, ds: float, rng: Any) -> np.ndarray:
        """RGB of the pixel grid with level-0 centres `xs` (columns) by `ys` (rows)."""
        import numpy as np

        x = xs.astype(np.float32)[None, :]
        y = ys.astype(np.float32)[:, None]
        shape = (ys.size, xs.size)
        out = np.empty(shape + (3,), dtype=np.uint8)
        out[...] = self.background
        box = (float(xs[0]), float(ys[0]), float(xs[-1]), float(ys[-1]))

        def hits(b: tuple[float, float, float, float]) -> bool:
            return not (b[2] < box[0] or b[0] > box[2] or b[3] < box[1] or b[1] > box[3])

        for b, bbox in zip(self.blobs, self.blob_boxes, strict=True):
            if not hits(bbox):
                continue
            inside = np.broadcast_to(self._inside(b, x, y), shape)
            if not inside.any():
                continue
            where = inside[..., None]
            if b.texture == "flat":
                np.copyto(out, np.array(b.colour, dtype=np.uint8), where=where)
            else:
                pix = self.blob_pixels(b, np.broadcast_to(x, shape), np.broadcast_to(y, shape), ds, rng)
                np.copyto(out, np.clip(pix, 0, 255).astype(np.uint8), where=where)
        for stroke, bbox in zip(self.strokes, self.stroke_boxes, strict=True):
            if not hits(bbox):
                continue
            colour = PEN_COLOURS[stroke.colour] if isinstance(stroke.colour, str) else stroke.colour
            half = stroke.width_um / self.mpp / 2.0
            on = np.zeros(shape, dtype=bool)
            pts = [(p[0] * self.width, p[1] * self.height) for p in stroke.points]
            for (ax, ay), (bx, by) in zip(pts[:-1], pts[1:], strict=False):
                vx, vy = bx - ax, by - ay
                length2 = vx * vx + vy * vy or 1e-9
                t = np.clip(((x - ax) * vx + (y - ay) * vy) / length2, 0.0, 1.0)
                on |= (x - ax - t * vx) ** 2 + (y - ay - t * vy) ** 2 <= half * half
            np.copyto(out, np.array(colour, dtype=np.uint8), where=on[..., None])
        return out


def _tissue_drawing(tissue: Sequence[Blob] | TissueFn | None, pen: Sequence[PenStroke], width: int, height: int,
                    mpp: float | None, background: RGB, seed: int) -> tuple[_Layout | None, TissueFn]:
    """(the blob layout, None) for blobs (default `default_layout()`), (None, the function) for a
    tissue function."""
    if tissue is None or not callable(tissue):
        blobs = default_layout() if tissue is None else list(tissue)
        return _Layout(blobs, list(pen), width, height, mpp or 0.5, background, seed), None  # type: ignore[return-value]
    if pen:
        raise PathkitError("pen strokes are drawn by the blob layout; a tissue function draws its own")
    return None, tissue


def _pyramid_levels(width: int, height: int, min_level_px: int, downsample_step: int) -> list[tuple[int, int, float]]:
    """(width, height, downsample) of each level, halving (or `downsample_step`) down to `min_level_px`."""
    levels = [(width, height, 1.0)]
    d = 1
    while max(levels[-1][0], levels[-1][1]) > min_level_px and downsample_step > 1:
        d *= downsample_step
        lw, lh = max(1, round(width / d)), max(1, round(height / d))
        if (lw, lh) == levels[-1][:2]:
            break
        levels.append((lw, lh, float(d)))
    return levels


def _shared_tile_key(layout: _Layout | None, box: tuple[float, ...], level: int) -> tuple[Any, ...] | None:
    """The key of a tile whose pixels repeat (glass, a flat blob's interior), None for others."""
    if layout is None:
        return None
    kind, idx = layout.classify(box)
    if kind == "background":
        return ("bg", level)
    if kind == "interior" and layout.blobs[idx].texture == "flat":
        return ("flat", level, idx)
    return None


def _function_tile(render_fn: TissueFn, xs: Any, ys: Any, ds: float) -> Any:
    """A tile drawn by a tissue function over its pixel-centre coordinates, checked for shape."""
    import numpy as np

    gx, gy = np.meshgrid(xs, ys)
    tile = np.array(render_fn(gx, gy, ds), dtype=np.uint8)
    if tile.shape != (len(ys), len(xs), 3):
        raise PathkitError(f"tissue function returned {tile.shape}, expected {(len(ys), len(xs), 3)}")
    return tile


def _encode_tile(tile: Any, compression: str, jpeg_quality: int) -> bytes:
    if compression == "deflate":
        return zlib.compress(tile.tobytes(), 1)
    import imagecodecs

    return imagecodecs.jpeg8_encode(tile, level=jpeg_quality, colorspace="rgb", outcolorspace="ycbcr",
                                    subsampling="420")


def write_synthetic_slide(
    path: str | Path,
    *,
    width: int,
    height: int,
    mpp: float | None = 0.5,
    tissue: Sequence[Blob] | TissueFn | None = None,
    pen: Sequence[PenStroke] = (),
    aperio: bool = False,
    seed: int = 0,
    tile_size: int = 256,
    downsample_step: int = 2,
    min_level_px: int = 256,
    compression: str = "jpeg",
    jpeg_quality: int = 85,
    objective_power: float | None = None,
    background: RGB = GLASS,
    resolution_unit: str = "CENTIMETER",
) -> Path:
    """Write a pyramidal tiled TIFF that OpenSlide opens with level-0 resolution `mpp`.

    `tissue`: a list of `Blob`s (default `default_layout()`), or a function rendering level-0
    pixel-centre coordinates to RGB. `pen`: marker strokes drawn over the tissue.
    `mpp=None` writes no resolution at all (a slide without mpp); with `aperio=True` the mpp and
    objective power go in an Aperio ImageDescription instead of resolution tags.
    `compression`: "jpeg" (realistic decode cost) or "deflate" (lossless, fast for flat tissue).
    Identical tiles (glass, flat tissue interiors) are encoded once, so large slides stay quick.
    """
    import numpy as np
    import tifffile

    if width < 1 or height < 1:
        raise PathkitError(f"synthetic slide size {width}x{height} must be positive")
    if tile_size % 16:
        raise PathkitError(f"tile size {tile_size} must be a multiple of 16 (TIFF tiles)")
    if compression not in ("jpeg", "deflate"):
        raise PathkitError(f"compression {compression!r}: choose jpeg or deflate")
    layout, render_fn = _tissue_drawing(tissue, pen, width, height, mpp, background, seed)
    levels = _pyramid_levels(width, height, min_level_px, downsample_step)

    def encode(tile: np.ndarray) -> bytes:
        return _encode_tile(tile, compression, jpeg_quality)

    cache: dict[tuple[Any, ...], bytes] = {}

    def tiles_for(level: int, lw: int, lh: int) -> Any:
        # Level downsample measured from sizes, like OpenSlide does.
        ds_x, ds_y = width / lw, height / lh
        ds = (ds_x + ds_y) / 2.0
        for ty in range(0, lh, tile_size):
            for tx in range(0, lw, tile_size):
                w, h = tile_size, tile_size
                box = (tx * ds_x, ty * ds_y, (tx + w) * ds_x, (ty + h) * ds_y)
                key = _shared_tile_key(layout, box, level)
                if key is not None and key in cache:
                    yield cache[key]
                    continue
                xs = (tx + np.arange(w) + 0.5) * ds_x
                ys = (ty + np.arange(h) + 0.5) * ds_y
                if layout is not None:
                    tile = layout.render(xs, ys, ds, np.random.default_rng([seed, level, tx, ty]))
                else:
                    tile = _function_tile(render_fn, xs, ys, ds)
                # Pixels beyond the image edge are padding in TIFF tiles: glass, not tissue.
                tile[max(0, lh - ty):, :] = background
                tile[:, max(0, lw - tx):] = background
                data = encode(np.ascontiguousarray(tile))
                if key is not None:
                    cache[key] = data
                yield data

    target = Path(path)
    q = jpeg_quality
    with atomic_path(target) as tmp, tifffile.TiffWriter(tmp, bigtiff=width * height > 2**31) as tw:
        for level, (lw, lh, _) in enumerate(levels):
            kwargs: dict[str, Any] = dict(
                shape=(lh, lw, 3), dtype=np.uint8, tile=(tile_size, tile_size), photometric="rgb",
                compression="jpeg" if compression == "jpeg" else "deflate",
                subfiletype=1 if level else 0, metadata=None,
            )
            if aperio:
                if mpp is None:
                    raise PathkitError("an Aperio-style slide needs an mpp (it lives in its description)")
                mag = objective_power if objective_power is not None else round(10.0 / mpp)
                kwargs["description"] = (
                    f"Aperio Image Library v12.0.0 synthetic\r\n{width}x{height} [0,0 {lw}x{lh}] "
                    f"({tile_size}x{tile_size}) {'JPEG' if compression == 'jpeg' else 'ZLIB'}/RGB "
                    f"Q={q}|AppMag = {mag:g}|MPP = {mpp:.4f}"
                )
            elif mpp is not None:
                d_l = width / lw
                per_unit = 1e4 if resolution_unit.upper() == "CENTIMETER" else 25400.0
                kwargs["resolution"] = (per_unit / (mpp * d_l), per_unit / (mpp * d_l))
                kwargs["resolutionunit"] = resolution_unit.upper()
            tw.write(tiles_for(level, lw, lh), **kwargs)
    return target


__all__ = ["EOSIN", "GLASS", "HAEMATOXYLIN", "NUCLEUS", "PEN_COLOURS", "RGB", "Blob", "PenStroke", "TissueFn",
           "default_layout", "write_synthetic_slide"]
