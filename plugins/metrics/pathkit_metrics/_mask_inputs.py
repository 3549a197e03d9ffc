"""The masks a segmentation score compares, put on one evaluation grid.

A prediction is a run's record (its stitched map file, cell grid and slide geometry) or a mask
file (`pathkit score` on folders); a reference is the run's ground-truth record (a mask image or
GeoJSON plus how it lies on the slide) or a mask file. Without a slide, GeoJSON coordinates are
read in the pixel frame of the raster they are compared with, unless option `downsample` gives the
raster's pixel size in GeoJSON units. docs/segmentation.md, "Scoring".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.wsi.masks import MaskFrame
from pathkit_sdk.masks import GEOJSON_SUFFIXES, RasterMask, class_list

if TYPE_CHECKING:
    import numpy as np


@dataclass
class MaskPair:
    """Prediction and reference on `frame` (bool arrays), the region scored (None: the whole
    frame), the predicted class labels when known (for composition) and notes for the table."""

    prediction: np.ndarray
    reference: np.ndarray
    frame: MaskFrame
    region: np.ndarray | None = None
    labels: np.ndarray | None = None
    class_names: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _is_geojson(path: Path) -> bool:
    return path.suffix.lower() in GEOJSON_SUFFIXES


def _foreground(raster: RasterMask, value: Any) -> np.ndarray:
    return raster.values == int(value) if value is not None else raster.values > 0


def _number(options: Mapping[str, Any], key: str) -> float | None:
    from pathkit_sdk.masks import positive_number

    return positive_number(options, key, "segmentation: option ")


def _region_on(frame: MaskFrame, geometry_or_raster: Any, source: MaskFrame | None) -> np.ndarray:
    from pathkit_core.wsi.masks import rasterise
    from pathkit_sdk.masks import resample

    if source is None:
        return rasterise(geometry_or_raster, frame)
    return resample(geometry_or_raster, source, frame).astype(bool)


def _read_mask_file(path: Path, classes: list[str] | None) -> Any:
    from pathkit_core.wsi.masks import read_geojson
    from pathkit_sdk.masks import read_raster

    if _is_geojson(path):
        return read_geojson(path, classes=classes)
    return read_raster(path)


# --------------------------------------------------------------------------- a run's records


def run_pair(prediction: Mapping[str, Any], reference: Mapping[str, Any], options: Mapping[str, Any],
             root: Path | None, region: str) -> MaskPair:
    """A run's prediction record against its ground-truth record, on the evaluation grid: the
    stitched cell grid, or `eval_mpp` micrometres per pixel."""
    import numpy as np

    from pathkit_sdk.masks import reference_mask, resample

    classes = class_list(reference.get("mask_classes") or options.get("mask_classes"))
    if prediction.get("map"):
        path = Path(prediction["map"])
        path = path if path.is_absolute() or root is None else root / path
        with np.load(path) as data:
            pred_cells, tissue = data["mask"].astype(bool), data["tissue"].astype(bool)
            labels = data["labels"]
        grid, slide = prediction["grid"], prediction["slide"]
        size0, slide_mpp = (int(slide["width0"]), int(slide["height0"])), float(slide["mpp"])
        cells = MaskFrame(int(grid["width"]), int(grid["height"]), float(grid["cell_px0"]), float(grid["cell_px0"]),
                          slide_mpp * float(grid["cell_px0"]))
    else:  # an empty prediction (a baseline): geometry from the slide itself
        from pathkit_core.wsi.slide import open_slide

        with open_slide(reference["slide"], mpp=reference.get("slide_mpp")) as s:
            size0, slide_mpp = s.dimensions, s.mpp
        cells = MaskFrame.over(size0[0], size0[1], 32.0, slide_mpp)
        pred_cells = tissue = labels = None
    eval_mpp = _number(options, "eval_mpp")
    frame = MaskFrame.over(size0[0], size0[1], eval_mpp / slide_mpp, slide_mpp) if eval_mpp else cells
    truth, notes = reference_mask(reference, frame, size0, slide_mpp, classes=classes)
    if pred_cells is None:
        return MaskPair(np.zeros(frame.shape, dtype=bool), truth, frame, None, None, [], notes + ["empty prediction"])
    pred = resample(pred_cells, cells, frame)
    scored = resample(tissue, cells, frame) if region == "tissue" else None
    return MaskPair(pred, truth, frame, scored, resample(labels, cells, frame),
                    list(prediction.get("class_names") or []), notes)


# --------------------------------------------------------------------------- mask files


def file_pair(prediction: str | Path, reference: str | Path, options: Mapping[str, Any]) -> MaskPair:
    """Two mask files (raster or GeoJSON) on one grid: the reference raster's pixels (or
    `eval_mpp` when its mpp is known); GeoJSON in the raster's pixel frame unless `downsample`."""
    from pathkit_sdk.masks import check_within, frame_on_slide, read_raster

    pred_path, ref_path = Path(prediction), Path(reference)
    classes = class_list(options.get("mask_classes"))
    downsample = _number(options, "downsample") or 1.0
    value = options.get("foreground_value")
    notes = []
    rasters = [p for p in (ref_path, pred_path) if not _is_geojson(p)]
    if not rasters:
        if _number(options, "downsample") is None:
            raise PathkitError(f"segmentation: {pred_path.name} and {ref_path.name} are both GeoJSON; give "
                               "--option downsample=D (GeoJSON units per evaluation pixel) to rasterise them")
        shapes = [_read_mask_file(p, classes) for p in (pred_path, ref_path)]
        notes += [n for s in shapes for n in s.notes()]
        maxx = max((s.geometry.bounds[2] for s in shapes if not s.geometry.is_empty), default=downsample)
        maxy = max((s.geometry.bounds[3] for s in shapes if not s.geometry.is_empty), default=downsample)
        frame = MaskFrame.over(maxx, maxy, downsample)
        pred, truth = (_region_on(frame, s.geometry, None) for s in shapes)
        return MaskPair(pred, truth, frame, notes=notes)
    base_path = rasters[0]
    base = read_raster(base_path)
    frame = MaskFrame(base.size[0], base.size[1], downsample, downsample, base.mpp)
    eval_mpp = _number(options, "eval_mpp")
    if eval_mpp and base.mpp:
        frame = MaskFrame.over(base.size[0] * downsample, base.size[1] * downsample, downsample * eval_mpp / base.mpp,
                               None)
        frame = MaskFrame(frame.width, frame.height, frame.dx, frame.dy, eval_mpp)
    elif eval_mpp:
        raise PathkitError(f"segmentation: eval_mpp needs a mask with resolution tags; {base_path} has none")
    base_frame = MaskFrame(base.size[0], base.size[1], downsample, downsample, base.mpp)
    base_mask = _region_on(frame, _foreground(base, value), base_frame)

    def other(path: Path) -> Any:
        if _is_geojson(path):
            shape = _read_mask_file(path, classes)
            notes.extend(shape.notes())
            check_within(shape, base_frame, f"mask {base_path.name}")
            return _region_on(frame, shape.geometry, None)
        raster = read_raster(path)
        mpp_ratio = raster.mpp / base.mpp if raster.mpp and base.mpp else None
        raster_frame = frame_on_slide(raster, (round(base.size[0] * downsample), round(base.size[1] * downsample)),
                                      base.mpp, downsample=None if mpp_ratio is None else mpp_ratio * downsample,
                                      slide_name=f"mask {base_path.name}")
        return _region_on(frame, _foreground(raster, value), raster_frame)

    if base_path == ref_path:
        truth, pred = base_mask, other(pred_path)
    else:
        pred, truth = base_mask, other(ref_path)
    return MaskPair(pred, truth, frame, notes=notes)


def array_pair(prediction: Any, reference: Any, options: Mapping[str, Any]) -> MaskPair:
    """Two masks given as arrays (nested lists: the Hugging Face `evaluate` interface) of one shape;
    non-zero (or `foreground_value`) is foreground."""
    import numpy as np

    pred, ref = np.asarray(prediction), np.asarray(reference)
    if pred.shape != ref.shape or pred.ndim != 2:
        raise PathkitError(f"mask arrays must be 2-D and of one shape; got {pred.shape} and {ref.shape}")
    value = options.get("foreground_value")
    fg = (lambda a: a == value) if value is not None else (lambda a: a != 0)
    return MaskPair(fg(pred), fg(ref), MaskFrame(pred.shape[1], pred.shape[0]))
