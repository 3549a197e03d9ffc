"""Synthetic liver slides with known regions: tumour nodules of a distinct texture with necrotic
centres, fibrous bands, inflammatory foci, steatosis, ductular reaction, normal parenchyma.

Each slide's layout is shapely geometry in level-0 pixels (class regions painted in order over the
parenchyma), so its ground truth is exact: the viable tumour as GeoJSON polygons (necrosis as
holes) and as a mask image, and each class's true area. Textures are functions of level-0
coordinates (continuous across tiles and levels), rendered through
`pathkit_sdk.synthetic.write_synthetic_slide`'s function path; training patches are cut from
the same renderer, so a patch head learnt on them applies to the slides' windows. Stand-ins, not
histology: one colour and pattern per HepatoBench class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

CLASSES = ("TUM", "FIB", "INF", "NEC", "NOR", "REA", "STE")
TUM, FIB, INF, NEC, NOR, REA, STE = range(7)
# Base colour per class and the colour of its pattern.
BASE = ((165, 100, 185), (235, 160, 195), (225, 180, 215), (210, 190, 195), (215, 135, 165), (190, 165, 225),
        (240, 200, 215))
PATTERN = ((70, 40, 110), (195, 85, 140), (50, 30, 100), (150, 140, 150), (160, 70, 120), (90, 60, 150),
           (252, 250, 252))
GLASS = (242, 241, 245)
LABEL_DOWNSAMPLE = 4  # level-0 px per label-raster pixel used to render (boundaries within 2 um)


def _hash(ix: np.ndarray, iy: np.ndarray, salt: int) -> np.ndarray:
    """A deterministic pseudo-random value in [0, 1) per integer lattice point."""
    import numpy as np

    v = np.sin(ix * 12.9898 + iy * 78.233 + salt * 37.719) * 43758.5453
    return v - np.floor(v)


def _dots(x: np.ndarray, y: np.ndarray, cell_um: float, radius_um: float, mpp: float, salt: int) -> np.ndarray:
    """Round objects of `radius_um`, one per `cell_um` lattice cell at a random offset."""
    import numpy as np

    cell = cell_um / mpp
    ix, iy = np.floor(x / cell), np.floor(y / cell)
    cx = (ix + 0.2 + 0.6 * _hash(ix, iy, salt)) * cell
    cy = (iy + 0.2 + 0.6 * _hash(ix, iy, salt + 1)) * cell
    return (x - cx) ** 2 + (y - cy) ** 2 < (radius_um / mpp) ** 2


def texture(label: int, x: np.ndarray, y: np.ndarray, mpp: float) -> np.ndarray:
    """Where class `label`'s pattern colour shows at level-0 pixel centres (x, y) (bool)."""
    import numpy as np

    if label == TUM:  # dense, large nuclei
        return _dots(x, y, 11.0, 4.0, mpp, 1)
    if label == FIB:  # diagonal collagen fibres
        return np.sin((x + y) * mpp / 2.5) > 0.35
    if label == INF:  # many small lymphocytes
        return _dots(x, y, 5.0, 1.8, mpp, 3)
    if label == NEC:  # granular debris
        g = 2.0 / mpp
        return _hash(np.floor(x / g), np.floor(y / g), 5) < 0.3
    if label == NOR:  # hepatocyte cords
        return (np.sin(x * mpp / 3.0) > 0.6) | (np.sin(y * mpp / 3.0) > 0.85)
    if label == REA:  # ductules: rings
        cell = 26.0 / mpp
        ix, iy = np.floor(x / cell), np.floor(y / cell)
        d = np.hypot(x - (ix + 0.5) * cell, y - (iy + 0.5) * cell) * mpp
        return np.abs(d - 8.0) < 2.2
    return _dots(x, y, 24.0, 9.0, mpp, 7)  # STE: fat vacuoles


@dataclass
class LiverLayout:
    """A slide's regions: `tissue` and `(class, geometry)` painted in order over NOR (level-0 px)."""

    width: int
    height: int
    mpp: float
    tissue: Any
    regions: list[tuple[int, Any]] = field(default_factory=list)

    def class_geometry(self) -> dict[int, Any]:
        """Each class's visible region (later regions cover earlier ones), clipped to the tissue."""
        import shapely

        covered = shapely.Polygon()
        out: dict[int, Any] = {}
        for label, geom in reversed(self.regions):
            visible = geom.intersection(self.tissue).difference(covered)
            out[label] = shapely.union_all([out[label], visible]) if label in out else visible
            covered = covered.union(geom)
        out[NOR] = self.tissue.difference(covered)
        return out

    def tumour(self) -> Any:
        """The viable tumour: TUM's visible region (necrotic centres are holes)."""
        return self.class_geometry().get(TUM)

    def areas_mm2(self) -> dict[str, float]:
        scale = (self.mpp * 1e-3) ** 2
        geoms = self.class_geometry()
        return {CLASSES[k]: float(geoms[k].area * scale) if k in geoms else 0.0 for k in range(len(CLASSES))}

    def label_raster(self, downsample: int = LABEL_DOWNSAMPLE) -> np.ndarray:
        """Class + 1 per raster pixel (0 glass), pixel-centre rule."""
        import numpy as np
        from affine import Affine
        from rasterio.features import rasterize

        shape = (math.ceil(self.height / downsample), math.ceil(self.width / downsample))
        shapes = [(self.tissue, NOR + 1)] + [(g.intersection(self.tissue), k + 1) for k, g in self.regions
                                            if not g.intersection(self.tissue).is_empty]
        return rasterize(shapes, out_shape=shape, transform=Affine(downsample, 0, 0, 0, downsample, 0), fill=0,
                         dtype=np.uint8)

    def renderer(self) -> Any:
        """A `write_synthetic_slide` tissue function (level-0 pixel centres, downsample -> RGB)."""
        import numpy as np

        labels = self.label_raster()
        base = np.array([GLASS, *BASE], dtype=np.float32)
        pattern = np.array([GLASS, *PATTERN], dtype=np.float32)

        def render(x: np.ndarray, y: np.ndarray, ds: float) -> np.ndarray:
            r = np.clip((y / LABEL_DOWNSAMPLE).astype(np.int64), 0, labels.shape[0] - 1)
            c = np.clip((x / LABEL_DOWNSAMPLE).astype(np.int64), 0, labels.shape[1] - 1)
            lab = labels[r, c]
            rgb = base[lab].copy()
            for k in np.unique(lab):
                if k == 0:
                    continue
                where = (lab == k) & texture(int(k) - 1, x, y, self.mpp)
                rgb[where] = pattern[k]
            noise = (_hash(np.floor(x / 2), np.floor(y / 2), 11) - 0.5) * 12.0
            rgb += (noise * (lab > 0))[..., None]
            return np.clip(rgb, 0, 255).astype(np.uint8)

        return render


def _blob(cx: float, cy: float, r: float, rng: Any, points: int = 24, wobble: float = 0.25) -> Any:
    import numpy as np
    import shapely

    angles = np.linspace(0, 2 * np.pi, points, endpoint=False)
    radii = r * (1 + wobble * (rng.random(points) - 0.5) * 2)
    return shapely.Polygon(np.c_[cx + radii * np.cos(angles), cy + radii * np.sin(angles)]).buffer(r * 0.05)


def liver_layout(seed: int, width: int = 6144, height: int = 4608, mpp: float = 0.5) -> LiverLayout:
    """A random but reproducible liver piece: two tumour nodules with necrosis, fibrous bands, and
    foci of inflammation, steatosis and ductular reaction in the parenchyma."""
    import numpy as np
    import shapely

    rng = np.random.default_rng(seed)
    s = min(width, height)
    tissue = _blob(width / 2, height / 2, 1.0, rng, 32, 0.05)
    tissue = shapely.affinity.scale(tissue, width * 0.44, height * 0.42, origin=(width / 2, height / 2))
    layout = LiverLayout(width, height, mpp, tissue)
    u = lambda lo, hi: float(rng.uniform(lo, hi))  # noqa: E731 - a local shorthand
    layout.regions.append((STE, _blob(width * u(0.25, 0.35), height * u(0.68, 0.72), s * 0.11, rng)))
    layout.regions.append((REA, _blob(width * u(0.62, 0.7), height * u(0.72, 0.76), s * 0.08, rng)))
    for cx, cy in ((u(0.2, 0.3), u(0.3, 0.4)), (u(0.45, 0.55), u(0.75, 0.8))):
        layout.regions.append((INF, _blob(width * cx, height * cy, s * 0.07, rng)))
    for y0, y1 in ((u(0.2, 0.3), u(0.5, 0.6)), (u(0.55, 0.65), u(0.85, 0.95))):
        band = shapely.LineString([(0, height * y0), (width * 0.5, height * (y0 + y1) / 2 + s * u(-0.05, 0.05)),
                                   (width, height * y1)])
        layout.regions.append((FIB, band.buffer(s * 0.05)))
    for cx, cy, r in ((u(0.38, 0.45), u(0.38, 0.45), 0.2), (u(0.68, 0.74), u(0.33, 0.42), 0.14)):
        nodule = _blob(width * cx, height * cy, s * r, rng)
        layout.regions.append((TUM, nodule))
        centre = nodule.centroid
        layout.regions.append((NEC, _blob(centre.x + s * u(-0.03, 0.03), centre.y, s * r * 0.38, rng)))
    return layout


def write_liver_slide(path: str | Path, layout: LiverLayout, *, seed: int = 0) -> Path:
    """The layout as a pyramidal TIFF at its mpp (JPEG tiles, OpenSlide `generic-tiff`)."""
    from pathkit_sdk.synthetic import write_synthetic_slide

    return write_synthetic_slide(path, width=layout.width, height=layout.height, mpp=layout.mpp,
                                 tissue=layout.renderer(), seed=seed, jpeg_quality=90)


def patch_at(layout: LiverLayout, render: Any, x0: float, y0: float, field_um: float, px: int) -> np.ndarray:
    """A `px` x `px` RGB patch of `field_um` micrometres with its top-left at level-0 (x0, y0)."""
    import numpy as np

    step = field_um / layout.mpp / px
    xs = x0 + (np.arange(px) + 0.5) * step
    ys = y0 + (np.arange(px) + 0.5) * step
    gx, gy = np.meshgrid(xs, ys)
    return render(gx, gy, step)


def pure_patch_origins(layout: LiverLayout, label: int, field_um: float, count: int, rng: Any,
                       purity: float = 0.97) -> list[tuple[float, float]]:
    """Up to `count` top-left corners of windows that are at least `purity` class `label`."""
    import numpy as np

    labels = layout.label_raster()
    side = field_um / layout.mpp / LABEL_DOWNSAMPLE
    mask = labels == label + 1
    ys, xs = np.nonzero(mask)
    if not len(xs):
        return []
    out = []
    for _ in range(count * 40):
        i = int(rng.integers(len(xs)))
        c0, r0 = int(xs[i] - side / 2), int(ys[i] - side / 2)
        if c0 < 0 or r0 < 0:
            continue
        window = mask[r0:r0 + int(side), c0:c0 + int(side)]
        if window.size and window.shape == (int(side), int(side)) and window.mean() >= purity:
            out.append((c0 * LABEL_DOWNSAMPLE, r0 * LABEL_DOWNSAMPLE))
            if len(out) == count:
                break
    return out
