"""Ground-truth masks for plugins (docs/segmentation.md, "Ground truth (formats)"): mask images read
with the resolution their tags state, placed on a slide (`frame_on_slide`) and read onto a grid by
pixel centres (`resample`), and a ground-truth record of the segmentation task as one boolean mask
(`reference_mask`), read the same way by the segmentation metric and the run report. The grid
(`MaskFrame`) and GeoJSON reading and writing are the core's, in `pathkit_core.wsi.masks`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import atomic_write_with
from pathkit_core.wsi.masks import GeoJsonRegions, MaskFrame, rasterise, read_geojson

if TYPE_CHECKING:
    import numpy as np

RASTER_SUFFIXES = (".png", ".tif", ".tiff", ".npy", ".jpg", ".jpeg", ".bmp")
GEOJSON_SUFFIXES = (".geojson", ".json")
MASK_SUFFIXES = RASTER_SUFFIXES + GEOJSON_SUFFIXES
# Resolutions that tools write when they know none (72 / 96 dpi placeholders): read as "no mpp".
_PLACEHOLDER_DPI = (72.0, 96.0)


# --------------------------------------------------------------------------- rasters


@dataclass
class RasterMask:
    """A mask image as read: its values (H, W), the mpp its tags state (None: not stated) and where."""

    values: np.ndarray
    path: Path | None = None
    mpp: float | None = None

    @property
    def size(self) -> tuple[int, int]:
        return int(self.values.shape[1]), int(self.values.shape[0])


def _tiff_mpp(page: Any) -> float | None:
    tags = page.tags
    if "XResolution" not in tags:
        return None
    num, den = tags["XResolution"].value
    unit = int(tags["ResolutionUnit"].value) if "ResolutionUnit" in tags else 2
    per_unit = num / den if den else 0.0
    if per_unit <= 0 or unit == 1 or (unit == 2 and per_unit in _PLACEHOLDER_DPI):
        return None
    return (1e4 if unit == 3 else 25400.0) / per_unit


def read_raster(path: str | Path) -> RasterMask:
    """A mask image (PNG, TIFF with its largest page, NPY, ...) as a 2-D array; RGB(A) images give
    the largest of their colour channels (any colour is foreground). Errors name the file."""
    import numpy as np

    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise PathkitError(f"mask {path} does not exist")
    mpp = None
    try:
        if suffix == ".npy":
            values = np.load(path, allow_pickle=False)
        elif suffix in (".tif", ".tiff"):
            import tifffile

            with tifffile.TiffFile(path) as tif:
                page = max(tif.pages, key=lambda p: int(p.shape[0]) * int(p.shape[1]) if len(p.shape) >= 2 else 0)
                values = page.asarray()
                mpp = _tiff_mpp(page)
        else:
            from PIL import Image

            with Image.open(path) as image:
                image.load()
                values = np.asarray(image.convert("RGB") if image.mode in ("P", "CMYK", "YCbCr", "LA")
                                    else image)
    except Exception as exc:  # noqa: BLE001 - PIL, tifffile and numpy raise many kinds
        raise PathkitError(f"mask {path} cannot be read as an image ({type(exc).__name__}: {exc})") from None
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise PathkitError(f"mask {path} holds {values.dtype} values; expected numbers (one per pixel)")
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        # NaN compares false with everything: it would read as background without a word
        raise PathkitError(f"mask {path} holds {int((~np.isfinite(values)).sum())} NaN or infinite value(s); a mask "
                           "needs a number per pixel (0 background)")
    if values.ndim == 3 and values.shape[-1] in (3, 4):
        values = values[..., :3].max(axis=-1)
    if values.ndim != 2 or values.size == 0:
        raise PathkitError(f"mask {path} has shape {values.shape}; expected a 2-D image (one value per pixel)")
    return RasterMask(values, path, mpp)


def frame_on_slide(raster: RasterMask, slide_size: tuple[int, int], slide_mpp: float | None, *,
                   downsample: float | None = None, mask_mpp: float | None = None,
                   slide_name: str = "the slide") -> MaskFrame:
    """How `raster` lies on a slide of level-0 `slide_size`: by the downsample given, else the mask
    mpp given or read from its tags, else from the two sizes. A mask that does not cover the slide
    at that scale (to within one of its pixels) is an error naming both and their sizes."""
    w, h = raster.size
    W0, H0 = slide_size  # noqa: N806 - level-0 sizes
    where = f"mask {raster.path}" if raster.path else "the mask"
    source = "given downsample"
    if downsample is None:
        stated = mask_mpp if mask_mpp is not None else raster.mpp
        if stated is not None and slide_mpp:
            source = "given mask mpp" if mask_mpp is not None else "its resolution tags"
            downsample = stated / slide_mpp
    if downsample is None:
        dx, dy, source = W0 / w, H0 / h, "the two sizes"
        if abs(dx - dy) > max(dx, dy) / min(w, h) + 1e-9 and abs(dx / dy - 1) > 0.01:
            raise PathkitError(
                f"{where} ({w} x {h} px) cannot be matched to {slide_name} ({W0} x {H0} px): the sizes imply "
                f"downsamples {dx:.4g} across and {dy:.4g} down; give the mask's downsample or mpp")
        downsample = (dx + dy) / 2
    d = float(downsample)
    if d <= 0 or not math.isfinite(d):
        raise PathkitError(f"{where}: downsample {downsample!r} must be a positive number")
    if abs(w * d - W0) > d + 1e-6 or abs(h * d - H0) > d + 1e-6:
        raise PathkitError(
            f"{where} ({w} x {h} px at downsample {d:.4g}, from {source}) cannot be matched to {slide_name} "
            f"({W0} x {H0} px): at that scale it covers {w * d:.0f} x {h * d:.0f} level-0 px; give the right "
            "downsample or mpp")
    return MaskFrame(w, h, d, d, None if slide_mpp is None else slide_mpp * d)


def resample(values: np.ndarray, source: MaskFrame, target: MaskFrame) -> np.ndarray:
    """`values` on `source` read onto `target` by pixel centres: each target pixel takes the source
    pixel its centre falls in (nothing outside the source: zero). Exact when the frames agree."""
    import numpy as np

    if (source.width, source.height, source.dx, source.dy) == (target.width, target.height, target.dx, target.dy):
        return values
    cols = np.floor((np.arange(target.width) + 0.5) * target.dx / source.dx).astype(np.int64)
    rows = np.floor((np.arange(target.height) + 0.5) * target.dy / source.dy).astype(np.int64)
    out = np.zeros(target.shape, dtype=values.dtype)
    ok_c, ok_r = (cols >= 0) & (cols < source.width), (rows >= 0) & (rows < source.height)
    out[np.ix_(ok_r, ok_c)] = values[np.ix_(rows[ok_r], cols[ok_c])]
    return out


def write_png(path: str | Path, mask: np.ndarray) -> Path:
    """A binary mask as an 8-bit PNG (0 / 255), written atomically."""
    import numpy as np
    from PIL import Image

    image = Image.fromarray(np.where(np.asarray(mask, dtype=bool), 255, 0).astype(np.uint8))
    return atomic_write_with(path, lambda tmp: image.save(tmp, format="PNG"))


def check_within(regions: GeoJsonRegions, frame: MaskFrame, what: str) -> None:
    """An error when the regions lie (mostly) outside `frame`: the coordinates are in another frame
    (x and y swapped, another downsample)."""
    geom = regions.geometry
    if geom.is_empty:
        return
    minx, miny, maxx, maxy = geom.bounds
    w0, h0 = frame.width * frame.dx, frame.height * frame.dy
    slack = 0.02 * max(w0, h0)
    if minx < -slack or miny < -slack or maxx > w0 + slack or maxy > h0 + slack:
        raise PathkitError(
            f"GeoJSON {regions.path}: its polygons span x {minx:.0f}..{maxx:.0f}, y {miny:.0f}..{maxy:.0f}, outside "
            f"{what} ({w0:.0f} x {h0:.0f} in the same units); are the coordinates level-0 pixels of this slide "
            "(or give a downsample)?")


def positive_number(record: Mapping[str, Any], key: str, prefix: str) -> float | None:
    """`record[key]` as a positive finite number (None when absent or empty); an error starting
    with `prefix` (what the record is) otherwise."""
    value = record.get(key)
    if value in (None, ""):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PathkitError(f"{prefix}{key}={value!r} is not a number") from None
    if number <= 0 or not math.isfinite(number):
        raise PathkitError(f"{prefix}{key}={value!r} must be positive")
    return number


def class_list(value: Any) -> list[str] | None:
    """The GeoJSON classifications to keep, as a ground-truth record or option gives them (a list,
    or a comma-separated string); None (keep every area feature) when not given or empty."""
    if value in (None, ""):
        return None
    return [str(v) for v in value] if isinstance(value, list | tuple) else [c.strip() for c in str(value).split(",")]


def reference_mask(reference: Mapping[str, Any], frame: MaskFrame, slide_size: tuple[int, int],
                   slide_mpp: float | None, *, classes: Iterable[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """A ground-truth record of the segmentation task (`{"mask": path, "slide": ..., optional
    "mask_downsample", "mask_mpp", "foreground_value"}`) on `frame` of a slide of level-0
    `slide_size`: GeoJSON rasterised by pixel centres, a mask image placed on the slide
    (`frame_on_slide`) and read onto the frame. Returns the bool mask and the repairs made to the
    GeoJSON (empty for images). The segmentation metric and the run report both read references
    through this function (classes by `class_list`), so they agree; the report knows only the
    record's `mask_classes`, not a `mask_classes` given to the metric as an option. The notes
    are `GeoJsonRegions.notes` (repairs, features left out); none for images."""
    path = Path(reference["mask"])
    slide_name = f"slide {reference.get('slide')}"
    if path.suffix.lower() in GEOJSON_SUFFIXES:
        regions = read_geojson(path, classes=classes)
        check_within(regions, MaskFrame(slide_size[0], slide_size[1], 1.0, 1.0, slide_mpp), slide_name)
        return rasterise(regions.geometry, frame), regions.notes()
    raster = read_raster(path)
    what = f"mask {path}: "
    placed = frame_on_slide(raster, slide_size, slide_mpp,
                            downsample=positive_number(reference, "mask_downsample", what),
                            mask_mpp=positive_number(reference, "mask_mpp", what), slide_name=slide_name)
    value = reference.get("foreground_value")
    foreground = raster.values == int(value) if value is not None else raster.values > 0
    return resample(foreground, placed, frame).astype(bool), []


__all__ = [
    "RASTER_SUFFIXES", "GEOJSON_SUFFIXES", "MASK_SUFFIXES", "RasterMask", "read_raster", "frame_on_slide", "resample",
    "write_png", "check_within", "positive_number", "class_list", "reference_mask",
]
