"""What decides a tile manifest (`TilingParams`) and how one output tile maps onto a slide
(`TileGeometry`): the records tiling, tissue segmentation and the QC image share."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import content_hash

# Bumped whenever a change to the algorithm changes manifests for the same parameters, so old
# manifests are not silently resumed.
TILING_VERSION = 2


@dataclass
class TilingParams:
    """Everything that decides a tile manifest; `params_hash()` keys resume and caches. The tile is
    `tile_px * target_mpp` micrometres, or `tile_um` (docs/wsi.md, section 3; the steps' defaults: section 2)."""

    target_mpp: float = 0.5
    tile_px: int | None = 256
    tile_um: float | None = None
    stride_px: int | None = None  # in output pixels; default: tile_px * (1 - overlap)
    overlap: float = 0.0
    min_tissue_fraction: float = 0.5
    min_tissue_area_mm2: float = 25.0
    exclude_below_min_area: bool = False
    segmenter: str = "otsu"
    segmenter_options: dict[str, Any] = field(default_factory=dict)
    thumbnail_px: int = 2048
    seg_mpp: float = 4.0
    blur_sigma_um: float = 8.0
    sat_min: float = 0.07
    sat_max: float = 0.15
    background_value: float = 220.0 / 255.0
    background_saturation: float = 15.0 / 255.0
    pen_colours: tuple[str, ...] = ("blue", "green", "black", "red")
    pen_margin_um: float = 16.0
    pen_min_width_um: float = 20.0
    pen_rim_um: float = 80.0
    pen_red_min_width_um: float = 40.0
    open_radius_um: float = 8.0
    close_radius_um: float = 16.0
    min_hole_area_mm2: float = 0.1
    min_region_area_mm2: float = 0.01
    # Windows also over the right and bottom edges, read past the slide as glass (stitched
    # segmentation covers the whole slide; MONAI and TIAToolbox pad the image the same way).
    pad_edges: bool = False
    # The slide reader (`pathkit list slide-readers`); "" takes the first that opens each slide.
    slide_reader: str = ""
    # A folder of edited tissue masks (`<slide_id>.tissue.geojson` or `<slide_id>.geojson`, QuPath's
    # GeoJSON) used instead of the segmenter where a slide has one. Not in the hash: each slide's file
    # content is recorded in its manifest and checked on resume (docs/wsi.md, "Tissue masks a person can correct").
    tissue_geojson: str = ""

    def __post_init__(self) -> None:
        if self.tile_um is not None:
            if not math.isfinite(self.tile_um) or self.tile_um <= 0:  # nan passes every comparison
                raise PathkitError(f"tile size {self.tile_um} um must be a positive finite number")
            derived = round(self.tile_um / self.target_mpp)
            if self.tile_px not in (None, 256, derived):
                raise PathkitError(f"give a tile size in pixels ({self.tile_px}) or in micrometres ({self.tile_um}), "
                                   "not both")
            self.tile_px = int(derived)
        if self.tile_px is None:
            raise PathkitError("a tile size is needed: tile_px or tile_um")
        self.tile_px = int(self.tile_px)
        self.pen_colours = tuple(self.pen_colours)
        unknown_pen = sorted(set(self.pen_colours) - {"blue", "green", "black", "red"})
        checks = [  # (holds, the problem when it does not)
            (0.05 <= self.target_mpp <= 20, f"target mpp {self.target_mpp} outside 0.05-20 um/px"),
            (8 <= self.tile_px <= 8192, f"tile size {self.tile_px} px outside 8-8192"),
            (0.0 <= self.overlap < 1.0, f"overlap {self.overlap} must be in [0, 1)"),
            (self.stride_px is None or self.stride_px >= 1, f"stride {self.stride_px} px must be positive"),
            (0.0 <= self.min_tissue_fraction <= 1.0,
             f"min tissue fraction {self.min_tissue_fraction} must be in [0, 1]"),
            (math.isfinite(self.min_tissue_area_mm2) and self.min_tissue_area_mm2 >= 0,
             f"min tissue area {self.min_tissue_area_mm2} mm^2 must be a finite number >= 0"),
            (not unknown_pen, f"unknown pen colour(s) {unknown_pen}"),
            (self.thumbnail_px >= 64, f"thumbnail size {self.thumbnail_px} px is too small"),
        ]
        problems = [problem for holds, problem in checks if not holds]
        if problems:
            raise PathkitError("invalid tiling parameters: " + "; ".join(problems))

    @property
    def stride(self) -> int:
        """Grid step in output pixels."""
        if self.stride_px is not None:
            return int(self.stride_px)
        return max(1, round(self.tile_px * (1.0 - self.overlap)))  # type: ignore[operator]

    @property
    def tile_size_um(self) -> float:
        return float(self.tile_px) * self.target_mpp  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["pen_colours"] = list(self.pen_colours)
        if not self.pad_edges:
            del out["pad_edges"]  # added later: manifests made before it keep their hash
        if not self.slide_reader:
            del out["slide_reader"]  # the same: automatic choice keeps the hashes of before
        del out["tissue_geojson"]
        return out

    def params_hash(self) -> str:
        """Stable hash of every parameter (and the algorithm version); slide-independent. A learned
        segmenter's `weights` path is left out: its content is the segmenter's identity, recorded per
        manifest, so moving the file reruns nothing and another file re-tiles."""
        data = self.as_dict()
        options = dict(data.get("segmenter_options") or {})
        if options.pop("weights", None) is not None:
            data["segmenter_options"] = options
        return content_hash({"tiling_version": TILING_VERSION, **data})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TilingParams:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class TileGeometry:
    """How one output tile maps onto the slide: level-0 extent, read level and read size."""

    slide_mpp: float
    target_mpp: float
    tile_px: int
    stride_px: int
    level: int
    level_downsample: float
    read_px: int  # pixels read at `level` (then resized to tile_px)
    size0: float  # tile extent in level-0 pixels (exact, fractional)
    stride0: float  # grid step in level-0 pixels
