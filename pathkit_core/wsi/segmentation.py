"""Tissue segmentation on a slide thumbnail: thumbnail reading and pluggable segmenters by name
(docs/wsi.md, section 2)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError, TissueSegmenter
from pathkit_core.wsi.masks import MaskFrame
from pathkit_core.wsi.tissue_geojson import mask_from_geojson

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import numpy as np

    from pathkit_core.wsi.params import TilingParams
    from pathkit_core.wsi.slide import Slide

# Largest region read in one call while building a thumbnail: bounds memory whatever the slide size.
_THUMB_READ_BLOCK = 4096
# A pyramid level up to this factor coarser than the resolution segmentation asks for is read as
# it is (no resampling) when it is nearer to that resolution, in scale, than the next finer level:
# a 2x pyramid then never reads a level with more than twice the wanted pixels per side.
LEVEL_SNAP = 2.0**0.5
# The segmentation thumbnail doubles as the QC image: below this longest side (a small slide, whose
# segmentation resolution gives few pixels) it is read finer and averaged down for the mask.
QC_MIN_PX = 1024
# A segmenter with its own input resolution reads the slide there up to this longest side
# (`segmenter_options.max_px` changes it): 8192 px is 8 mm at HEST's 1 um/px, 200 MB of RGB.
SEGMENTER_MAX_PX = 8192


@dataclass
class Thumbnail:
    """An RGB overview of the whole slide. `downsample_x/y` are level-0 pixels per thumbnail pixel."""

    rgb: np.ndarray
    downsample_x: float
    downsample_y: float
    level: int  # the pyramid level it was read from
    mpp: float  # micrometres per thumbnail pixel (isotropic mean)

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.rgb.shape[0]), int(self.rgb.shape[1])


@dataclass
class TissueMask:
    """A boolean tissue mask over the whole slide at `mpp` micrometres per mask pixel; `pen` marks the
    pixels removed as pen ink, `info` the numbers behind the mask (thresholds, areas) for the manifest."""

    tissue: np.ndarray
    mpp: float
    pen: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def area_mm2(self) -> float:
        return float(self.tissue.sum()) * self.mpp * self.mpp / 1e6


def thumbnail_geometry(dimensions: tuple[int, int], max_px: int) -> tuple[int, int]:
    """Thumbnail (width, height): longest side `max_px`, never larger than level 0."""
    scale = max(1.0, max(dimensions) / float(max_px))
    return max(1, round(dimensions[0] / scale)), max(1, round(dimensions[1] / scale))


def best_level_for(downsamples: Sequence[float], wanted: float, tolerance: float = 1e-6) -> int:
    """The coarsest level whose downsample does not exceed `wanted` by more than `tolerance` (level 0
    when none qualifies); of levels with one downsample, the first."""
    best = 0
    for i, d in enumerate(downsamples):
        if d <= wanted * (1.0 + tolerance) and d > downsamples[best]:
            best = i
    return best


def segmentation_downsample(dimensions: tuple[int, int], slide_mpp: float, params: TilingParams) -> float:
    """Level-0 pixels per mask pixel: `seg_mpp`, or coarser where the longest side would exceed
    `thumbnail_px`; never finer than level 0."""
    cap = max(1.0, max(dimensions) / float(params.thumbnail_px))
    return max(cap, params.seg_mpp / slide_mpp if params.seg_mpp > 0 else 1.0)


def snap_level(level_downsamples: list[float], wanted: float) -> int | None:
    """The level to read as it is for a `wanted` downsample: the nearest coarser-or-equal level
    when it is at most LEVEL_SNAP coarser and nearer (in scale) than the nearest finer level;
    None when a finer level must be read and averaged down."""
    coarser = [(d, i) for i, d in enumerate(level_downsamples) if d >= wanted * (1.0 - 1e-6)]
    if not coarser:
        return None
    d, i = min(coarser)
    finer = [f for f in level_downsamples if f < wanted * (1.0 - 1e-6)]
    if d / wanted > LEVEL_SNAP or (finer and d / wanted > wanted / max(finer)):
        return None
    return i


def segmentation_thumbnail(slide: Slide, params: TilingParams) -> Thumbnail:
    """The thumbnail segmentation needs, read as cheaply as the pyramid allows: at the mask's resolution
    (`segmentation_downsample`), as it is from a level near it (`snap_level`), or, for a slide so small
    that this gives under QC_MIN_PX px, at QC_MIN_PX for its QC image (averaged down for the mask)."""
    width, height = slide.dimensions
    wanted = segmentation_downsample((width, height), slide.mpp, params)
    qc_floor = max(1.0, max(width, height) / float(min(QC_MIN_PX, params.thumbnail_px)))
    if qc_floor < wanted:
        return read_thumbnail(slide, downsample=qc_floor)
    level = snap_level(slide.level_downsamples, wanted)
    if level is not None:
        return read_thumbnail(slide, size=slide.level_dimensions[level], level=level)
    return read_thumbnail(slide, downsample=wanted)


def read_thumbnail(slide: Slide, max_px: int = 2048, *, downsample: float | None = None,
                   size: tuple[int, int] | None = None, level: int | None = None) -> Thumbnail:
    """An RGB thumbnail read block by block from the coarsest sufficient level, so memory does not
    grow with the slide: longest side `max_px`, or `downsample` level-0 pixels per pixel, or `size`
    (with `level`, a level of that size, read without resampling); never larger than level 0."""
    import numpy as np

    width, height = slide.dimensions
    if size is not None:
        tw, th = int(size[0]), int(size[1])
    elif downsample is not None:
        scale = max(1.0, downsample)
        tw, th = max(1, round(width / scale)), max(1, round(height / scale))
    else:
        tw, th = thumbnail_geometry((width, height), max_px)
    ds_x, ds_y = width / tw, height / th
    if level is None:
        level = best_level_for(slide.level_downsamples, min(ds_x, ds_y))  # never upsample
    lw, lh = slide.level_dimensions[level]
    # Level pixels per thumbnail pixel, from the level's true size (downsamples are rounded).
    rx, ry = lw / tw, lh / th
    lds_x, lds_y = width / lw, height / lh
    block_x, block_y = max(16, int(_THUMB_READ_BLOCK / rx)), max(16, int(_THUMB_READ_BLOCK / ry))
    out = np.empty((th, tw, 3), dtype=np.uint8)
    for ty0 in range(0, th, block_y):
        ty1 = min(th, ty0 + block_y)
        ly0, ly1 = round(ty0 * ry), min(lh, max(round(ty0 * ry) + 1, round(ty1 * ry)))
        for tx0 in range(0, tw, block_x):
            tx1 = min(tw, tx0 + block_x)
            lx0, lx1 = round(tx0 * rx), min(lw, max(round(tx0 * rx) + 1, round(tx1 * rx)))
            region = slide.read_region((round(lx0 * lds_x), round(ly0 * lds_y)), level, (lx1 - lx0, ly1 - ly0))
            out[ty0:ty1, tx0:tx1] = resize_rgb(region, (tx1 - tx0, ty1 - ty0))
    return Thumbnail(out, ds_x, ds_y, level, slide.mpp * (ds_x + ds_y) / 2.0)


def resize_rgb(rgb: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Area-average an RGB uint8 image to (width, height)."""
    import numpy as np
    from PIL import Image

    if (rgb.shape[1], rgb.shape[0]) == tuple(size):
        return rgb
    return np.asarray(Image.fromarray(rgb).resize(size, Image.Resampling.BOX))


def get_segmenter(name: str) -> type[TissueSegmenter]:
    """The segmenter class registered as `name`; an unknown name lists the registered ones."""
    from pathkit_core.plugins import get_plugin_manager

    return get_plugin_manager().get("segmenter", name)  # type: ignore[return-value]


def segmentation_params(params: TilingParams) -> TilingParams:
    """`params` with the segmenter's own input resolution (`TissueSegmenter.input_mpp`) as the
    mask's `seg_mpp`, when it declares one, and its image up to `segmenter_options.max_px`
    (default SEGMENTER_MAX_PX) per side instead of `thumbnail_px`."""
    wanted = get_segmenter(params.segmenter).input_mpp
    if not wanted:
        return params
    cap = int(params.segmenter_options.get("max_px", SEGMENTER_MAX_PX))
    return dataclasses.replace(params, seg_mpp=float(wanted), thumbnail_px=max(params.thumbnail_px, cap))


def segment_slide(slide: Slide, params: TilingParams, thumbnail: Thumbnail | None = None, *,
                  geojson: Path | None = None) -> tuple[Thumbnail, TissueMask, float, float]:
    """Thumbnail, tissue mask and the mask's level-0 pixels per mask pixel (x, y). With `geojson` (an
    edited tissue mask, `pathkit_core.wsi.tissue_geojson`) the mask is rasterised from it on the grid
    the segmenter would have used, and the segmenter does not run."""
    params = segmentation_params(params)
    thumb = thumbnail or segmentation_thumbnail(slide, params)
    # the mask's grid: the thumbnail resized to `seg_mpp` (the thumbnail's own when read at it, its
    # size rounded to whole pixels)
    factor = max(1.0, params.seg_mpp / thumb.mpp) if params.seg_mpp > 0 else 1.0
    factor = 1.0 if factor < 1.0 + 1e-3 else factor
    mw, mh = max(1, round(thumb.shape[1] / factor)), max(1, round(thumb.shape[0] / factor))
    mds_x, mds_y = slide.dimensions[0] / mw, slide.dimensions[1] / mh
    mask_mpp = slide.mpp * (mds_x + mds_y) / 2.0
    if geojson is not None:
        tissue, info = mask_from_geojson(geojson, MaskFrame(mw, mh, mds_x, mds_y, mask_mpp))
        return thumb, TissueMask(tissue, mask_mpp, info={"source": "geojson", **info}), mds_x, mds_y
    mask = get_segmenter(params.segmenter)(params).segment(resize_rgb(thumb.rgb, (mw, mh)), mask_mpp)
    if mask.tissue.shape != (mh, mw):
        raise PathkitError(f"segmenter {params.segmenter!r} returned a {mask.tissue.shape} mask for a {(mh, mw)} image")
    return thumb, mask, mds_x, mds_y
