"""Region masks on a slide: raster frames, GeoJSON read and written, masks rasterised and vectorised
by QuPath's pixel-centre convention with shapely and rasterio (docs/segmentation.md, "Ground truth
(formats)"). A raster lies on the slide by its `MaskFrame`: pixel (col, row) covers level-0
[col * dx, (col + 1) * dx) x [row * dy, (row + 1) * dy). Mask images and ground-truth records, which
only plugins read, are in `pathkit_sdk.masks` (their names here warn until pathkit 0.3)."""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core._deprecation import moved_names
from pathkit_core.contracts import PathkitError, brief_list
from pathkit_core.workspace import atomic_write_text

if TYPE_CHECKING:
    import numpy as np

# Sub-pixel shift that turns the strict centre rule into AWT's top-left rule for centres on an edge.
_TIE_SHIFT = 1e-6


@dataclass(frozen=True)
class MaskFrame:
    """A raster grid on the slide: `width` x `height` pixels, each `dx` x `dy` level-0 pixels, with
    `mpp` micrometres per raster pixel when the slide's resolution is known."""

    width: int
    height: int
    dx: float = 1.0
    dy: float = 1.0
    mpp: float | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.height, self.width)

    @property
    def pixel_area_mm2(self) -> float | None:
        return None if self.mpp is None else (self.mpp * 1e-3) ** 2 * (self.dy / self.dx)

    @classmethod
    def over(cls, width0: float, height0: float, downsample: float, slide_mpp: float | None = None) -> MaskFrame:
        """The grid of `downsample`-sized pixels covering a `width0` x `height0` level-0 extent."""
        return cls(max(1, math.ceil(width0 / downsample - 1e-9)), max(1, math.ceil(height0 / downsample - 1e-9)),
                   float(downsample), float(downsample), None if slide_mpp is None else slide_mpp * downsample)


def pack_mask(mask: np.ndarray) -> dict[str, Any]:
    """A boolean mask as JSON-able text (bits packed, deflated, base64): for manifest metadata."""
    import numpy as np

    mask = np.asarray(mask, dtype=bool)
    if mask.ndim != 2:
        raise PathkitError(f"a packed mask is 2-D, not {mask.shape}")
    data = base64.b64encode(zlib.compress(np.packbits(mask, axis=None).tobytes(), 6)).decode("ascii")
    return {"height": int(mask.shape[0]), "width": int(mask.shape[1]), "bits": data}


def unpack_mask(packed: Mapping[str, Any], where: str) -> np.ndarray:
    """The mask `pack_mask` packed; a damaged record is a PathkitError naming `where`."""
    import numpy as np

    try:
        h, w = int(packed["height"]), int(packed["width"])
        raw = zlib.decompress(base64.b64decode(packed["bits"], validate=True))
    except (KeyError, TypeError, ValueError, binascii.Error, zlib.error) as exc:
        raise PathkitError(f"{where}: damaged packed mask ({type(exc).__name__}: {exc})") from None
    if h < 0 or w < 0 or len(raw) != (h * w + 7) // 8:
        raise PathkitError(f"{where}: packed mask of {len(raw)} bytes does not hold {h} x {w} pixels")
    return np.unpackbits(np.frombuffer(raw, dtype=np.uint8), count=h * w).reshape(h, w).astype(bool)


# --------------------------------------------------------------------------- geometry


def _affine(frame: MaskFrame) -> Any:
    from affine import Affine

    return Affine(frame.dx, 0.0, 0.0, 0.0, frame.dy, 0.0)


def rasterise(geometry: Any, frame: MaskFrame) -> np.ndarray:
    """The pixels of `frame` whose centres lie inside `geometry` (level-0 coordinates), as bool (H, W)."""
    import numpy as np
    import shapely
    from rasterio.features import rasterize

    if geometry is None or geometry.is_empty:
        return np.zeros(frame.shape, dtype=bool)
    shifted = shapely.affinity.translate(geometry, -_TIE_SHIFT * frame.dx, -_TIE_SHIFT * frame.dy)
    burned = rasterize([(shifted, 1)], out_shape=frame.shape, transform=_affine(frame), all_touched=False,
                       fill=0, dtype=np.uint8)
    return burned.astype(bool)


def vectorise(mask: np.ndarray, frame: MaskFrame) -> Any:
    """The foreground of `mask` as a shapely MultiPolygon in level-0 coordinates, along pixel edges
    (4-connected regions, holes kept, collinear vertices dropped): it rasterises back to `mask`."""
    import numpy as np
    import shapely
    from rasterio.features import shapes
    from shapely.geometry import shape

    mask = np.ascontiguousarray(mask, dtype=np.uint8)
    polygons = [shape(g).simplify(0) for g, _ in shapes(mask, mask=mask.astype(bool), connectivity=4,
                                                          transform=_affine(frame))]
    return shapely.MultiPolygon([p for p in polygons if not p.is_empty])


QUPATH_COLOURS: dict[str, tuple[int, int, int]] = {"Tumor": (200, 0, 0), "Tumour": (200, 0, 0)}


def geojson_features(geometry: Any, name: str, colour: tuple[int, int, int] | None = None,
                     properties: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """QuPath annotation features (one per polygon) of `geometry`, level-0 pixel coordinates."""
    from shapely.geometry import mapping

    colour = colour or QUPATH_COLOURS.get(name, (200, 0, 0))
    parts = list(getattr(geometry, "geoms", [geometry])) if geometry is not None and not geometry.is_empty else []
    return [{"type": "Feature", "geometry": mapping(part),
             "properties": {"objectType": "annotation", "classification": {"name": name, "color": list(colour)},
                            "isLocked": False, **dict(properties or {})}} for part in parts]


def write_geojson(path: str | Path, features: Sequence[Mapping[str, Any]]) -> Path:
    """A GeoJSON FeatureCollection (QuPath imports it: File > Import objects), written atomically."""
    return atomic_write_text(path, json.dumps({"type": "FeatureCollection", "features": list(features)}))


AREAL = ("Polygon", "MultiPolygon")


@dataclass
class GeoJsonRegions:
    """The area features of a GeoJSON file: their union (shapely, level-0 or mask-pixel units), the
    features repaired (index and why) and the features left out (not areal, other class)."""

    geometry: Any
    repaired: list[str]
    skipped: list[str]
    path: Path | None = None

    def notes(self) -> list[str]:
        """The repairs and the features left out, as per-case notes naming the file: a reference
        of points only scores as empty, and the note says why."""
        name = self.path.name if self.path is not None else "GeoJSON"
        return ([f"{name} repaired: {'; '.join(self.repaired)}"] if self.repaired else []) + (
            [f"{name} skipped: {brief_list(self.skipped, 10, sep='; ')}"] if self.skipped else [])


def _features_of(data: Any, path: Path) -> list[Any]:
    if isinstance(data, list):  # QuPath before 0.3 exported a bare list of features
        return data
    if isinstance(data, Mapping):
        kind = data.get("type")
        if kind == "FeatureCollection":
            return list(data.get("features") or [])
        if kind == "Feature":
            return [data]
        if kind in ("Polygon", "MultiPolygon", "GeometryCollection", "Point", "LineString", "MultiPoint",
                    "MultiLineString"):
            return [{"type": "Feature", "geometry": data, "properties": {}}]
    raise PathkitError(f"GeoJSON {path}: expected a FeatureCollection, a Feature, a geometry or a list of "
                       f"features; found {type(data).__name__} {str(data)[:60]!r}")


def _class_name(feature: Mapping[str, Any]) -> str | None:
    props = feature.get("properties")
    if not isinstance(props, Mapping):
        return None
    cls = props.get("classification")
    if isinstance(cls, Mapping):
        return cls.get("name")
    found = cls or props.get("class") or props.get("name")
    return str(found) if found else None


def read_geojson(path: str | Path, *, classes: Iterable[str] | None = None) -> GeoJsonRegions:
    """The union of the area features (Polygon, MultiPolygon; holes kept) of a GeoJSON file, QuPath's
    export included; with `classes`, only features of those classifications. Invalid polygons
    (self-intersections, wrong ring orientation) are repaired by shapely and listed; a feature that
    cannot be read is an error naming it."""
    import numpy as np
    import shapely
    from shapely.geometry import shape

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PathkitError(f"GeoJSON {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PathkitError(f"GeoJSON {path} is not readable JSON: {exc}") from None
    except RecursionError:
        raise PathkitError(f"GeoJSON {path}: nested too deeply to be read (no GeoJSON nests more than a few "
                           "levels)") from None
    wanted = None if classes is None else {str(c).lower() for c in classes}
    parts, repaired, skipped = [], [], []
    for index, feature in enumerate(_features_of(data, path)):
        label = f"feature {index}"
        if not isinstance(feature, Mapping) or not isinstance(feature.get("geometry"), Mapping):
            raise PathkitError(f"GeoJSON {path}: {label} has no geometry object")
        name = _class_name(feature)
        label += f" ({name})" if name else ""
        kind = feature["geometry"].get("type")
        if kind not in AREAL and kind != "GeometryCollection":
            skipped.append(f"{label}: a {kind}, not an area")
            continue
        if wanted is not None and (name or "").lower() not in wanted:
            skipped.append(f"{label}: class {name!r} is not one of {sorted(wanted)}")
            continue
        try:
            geom = shape(feature["geometry"])
            finite = bool(np.isfinite(shapely.get_coordinates(geom)).all())
        except RecursionError:
            raise PathkitError(f"GeoJSON {path}: {label} is nested too deeply to be read") from None
        except Exception as exc:  # noqa: BLE001 - shapely raises several kinds for bad coordinates
            raise PathkitError(f"GeoJSON {path}: {label} has unreadable coordinates ({exc})") from None
        if not finite:
            # NaN, or a number too large for a double (1e400 reads as infinity)
            raise PathkitError(f"GeoJSON {path}: {label} has a NaN or infinite coordinate")
        if not geom.is_valid:
            reason = shapely.is_valid_reason(geom)
            geom = shapely.make_valid(geom)
            repaired.append(f"{label}: {reason}")
        geom = _areal(geom)
        if geom.is_empty:
            skipped.append(f"{label}: no area left")
            continue
        parts.append(geom)
    union = shapely.union_all(parts) if parts else shapely.MultiPolygon()
    return GeoJsonRegions(_areal(union), repaired, skipped, path)


def _areal(geom: Any) -> Any:
    """The polygonal part of a geometry (make_valid can add lines or points)."""
    import shapely

    if geom.geom_type in AREAL:
        return geom
    polys = [g for g in getattr(geom, "geoms", []) if g.geom_type in AREAL]
    return shapely.union_all(polys) if polys else shapely.MultiPolygon()


# moved to the helper API in pathkit 0.2 (docs/api/sdk.md, "Ground-truth masks"): served with a warning until 0.3
__getattr__ = moved_names(__name__, dict.fromkeys((
    "RASTER_SUFFIXES", "GEOJSON_SUFFIXES", "MASK_SUFFIXES", "RasterMask", "read_raster", "frame_on_slide", "resample",
    "write_png", "check_within", "positive_number", "class_list", "reference_mask"), "pathkit_sdk.masks"))


__all__ = [
    "MaskFrame", "pack_mask", "unpack_mask", "rasterise", "vectorise", "QUPATH_COLOURS", "geojson_features",
    "write_geojson", "AREAL", "GeoJsonRegions", "read_geojson",
]
