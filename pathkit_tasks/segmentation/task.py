"""Task `segmentation`: a slide in, a per-slide mask out, stitched from sliding-window class probabilities.

Training cases are labelled patches (images or feature files, target a class name) that fit any
`patch-classification` head, which therefore also solves this task (`generator_tasks`). Test cases
are slides whose target names their ground truth (`{"mask": path to a mask image or GeoJSON,
"foreground": class name}`). The slides are tiled at the encoder's tile spec with 50 % overlap by
default and windows over the slide edges; the head gives class probabilities per window; windows
stream into a per-slide probability map (pathkit_tasks.segmentation.stitch), and the foreground mask is the
foreground class's argmax (or its probability above a threshold) inside the tissue.

A head trained on patches sees one field of view; windows of another size show it the tissue at
another scale. A dataset says what its training patches cover (`Case.meta["training_field_um"]`,
hepatobench-wsi: HepatoBench's 150 px at 0.5 um/px = 75 um, which is also its default window);
windows differing from it by more than `FIELD_TOLERANCE` are reported in one warning, and both
sizes are recorded in metrics.json (`windows`).

Outputs per slide, under `<run>/segmentation/` (`segmentation_<checkpoint>/` for other
checkpoints): `maps/<id>.npz` (probabilities, coverage, tissue, labels, mask on the cell grid),
`masks/<id>.tif` (the mask on the cell grid, with resolution tags: what `pathkit score` reads),
`tumour_masks/<id>.tiff` and `class_maps/<id>.tiff` (pyramidal TIFFs at the slide's own geometry,
for OpenSlide and QuPath), `geojson/<id>.geojson` (the foreground region as QuPath annotations in
level-0 pixels), `overlays/<id>.png` (the class map over the thumbnail) and
`quantification.parquet` / `.csv` (area and fraction of each class in the tumour, the non-tumour
tissue and all tissue). docs/segmentation.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import (
    INPUT_FEATURES,
    INPUT_IMAGES,
    INPUT_SLIDES,
    Case,
    Dataset,
    ItemsWithBagSpecs,
    PathkitError,
    ProbabilityHead,
    RunFacts,
    Task,
)
from pathkit_core.workspace import confined
from pathkit_sdk.masks import MASK_SUFFIXES
from pathkit_tasks import TASK_PATCH_CLASSIFICATION, TASK_SEGMENTATION

log = logging.getLogger(__name__)

# Tiling of segmentation slides unless the dataset or run says otherwise: 50 % overlap (the issue;
# MONAI's default is 25 %), windows over the slide edges, and windows kept wherever a tenth of
# them is tissue (the mask is cut to the tissue afterwards, so tissue borders get windows).
DEFAULT_TILING: dict[str, Any] = {"overlap": 0.5, "pad_edges": True, "min_tissue_fraction": 0.1}
# How windows become a mask, per slide (`Case.meta["stitch"]` overrides each).
# `region_name`: the class the foreground region carries in the GeoJSON (a viewer's class name,
# e.g. QuPath's "Tumor"); None: the foreground class name.
STITCH_DEFAULTS: dict[str, Any] = {"blend": "average", "subdivide": 1, "threshold": None,
                                   "cell_tissue_fraction": 0.5, "tissue_weighting": True, "overlay": True,
                                   "region_name": None}
# Windows read from the feature file and predicted at once (memory: this many feature rows).
CHUNK_ROWS = 4096
# Windows whose side differs from the training patches' by more than this share are reported.
FIELD_TOLERANCE = 0.10
# Longest side of the thumbnail the overlay is drawn on (a picture for the eye; the map has far
# fewer cells than this has pixels): the coarsest pyramid level at least OVERLAY_MIN_PX long, read
# as stored (no resampling: a quarter of the decoding of a level twice as large), at most OVERLAY_PX.
OVERLAY_PX = 1024
OVERLAY_MIN_PX = 768


def output_folder(predictions_path: Path) -> Path:
    """`predictions.jsonl` -> `segmentation/`; `predictions_last.jsonl` -> `segmentation_last/`."""
    suffix = predictions_path.stem.removeprefix("predictions")
    return predictions_path.with_name(f"segmentation{suffix}")


def stitch_settings(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The case's stitching settings over the defaults; unknown names are an error."""
    given = dict(meta.get("stitch") or {})
    unknown = sorted(set(given) - set(STITCH_DEFAULTS))
    if unknown:
        raise PathkitError(f"unknown stitching setting(s) {', '.join(unknown)}; known: {', '.join(STITCH_DEFAULTS)}")
    return {**STITCH_DEFAULTS, **{k: v for k, v in given.items() if v is not None or k == "threshold"}}



STAGING_PREFIX = ".segmentation-staging-"


def remove_orphan_staging(run_dir: Path) -> list[Path]:
    """Remove the staging folders (`.segmentation-staging-<pid>`) of processes that are gone: a
    run killed while predicting leaves its probability maps there (hundreds of MB), which no
    later run reads. The folder of a live process (another shard's) is left alone."""
    import shutil

    removed = []
    for folder in sorted(Path(run_dir).glob(f"{STAGING_PREFIX}*")):
        pid_text = folder.name[len(STAGING_PREFIX):]
        pid = int(pid_text) if pid_text.isdigit() else -1
        if pid == os.getpid() or (0 < pid < 2**31 and _alive(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True

class SegmentationTask(Task):
    """Whole-slide segmentation by stitched window classification (HepatoBench tumour masks)."""

    name: ClassVar[str] = TASK_SEGMENTATION
    description: ClassVar[str] = "a mask per slide, stitched from sliding-window class probabilities (HepatoBench)"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_IMAGES, INPUT_FEATURES)
    target_format: ClassVar[str] = (
        'patches: a class name from class_names(); slides: {"mask": path to a mask image (PNG/TIFF/NPY) or GeoJSON, '
        '"foreground": class name, optional "mask_downsample", "mask_mpp", "mask_classes"}'
    )
    prediction_format: ClassVar[str] = (
        'per slide {"map": stitched map file, "grid": cell grid, "slide": geometry}; written as mask files '
        "(docs/segmentation.md)"
    )
    baselines: ClassVar[tuple[str, ...]] = ("all-background",)
    evaluate_inputs: ClassVar[tuple[str, ...]] = ("mask",)
    generator_tasks: ClassVar[tuple[str, ...]] = (TASK_PATCH_CLASSIFICATION,)

    # ------------------------------------------------------------------ targets

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        classes = tuple(dataset.class_names())
        if case.input_kind == INPUT_SLIDES:
            target = case.target
            if not isinstance(target, Mapping) or "mask" not in target:
                return f'a slide target must be {{"mask": path, "foreground": class}}, got {target!r}'
            mask = Path(target["mask"])
            if mask.suffix.lower() not in MASK_SUFFIXES or not mask.is_file():
                return f"mask {mask} is not an existing {'/'.join(MASK_SUFFIXES)} file"
            if target.get("foreground") not in classes:
                return f"foreground class {target.get('foreground')!r} is not one of {list(classes)}"
            if len(case.slides) != 1:
                return f"a segmentation case is one slide, not {len(case.slides)}"
            try:
                stitch_settings(case.meta)
            except PathkitError as exc:
                return str(exc)
            return None
        if case.target not in classes:
            return f"patch target {case.target!r} is not one of the class names {list(classes)}"
        return None

    def model_target(self, case: Case, dataset: Dataset) -> Any:
        if case.input_kind == INPUT_SLIDES:
            return None  # slides are predicted, never trained on
        return tuple(dataset.class_names()).index(case.target)

    def reference(self, case: Case, dataset: Dataset) -> Any:
        if case.input_kind == INPUT_SLIDES:
            out = {k: str(v) if isinstance(v, Path) else v for k, v in dict(case.target).items()}
            out["slide"] = str(case.slides[0])
            if case.meta.get("mpp") is not None:
                out["slide_mpp"] = float(case.meta["mpp"])
            return out
        return self.model_target(case, dataset)

    # ------------------------------------------------------------------ inputs

    def tiling(self, dataset: Dataset, run_tiling: Mapping[str, Any]) -> dict[str, Any]:
        return {**DEFAULT_TILING, **super().tiling(dataset, run_tiling)}

    # ------------------------------------------------------------------ prediction

    def predict(self, model: Any, items: Sequence[dict[str, Any]], facts: RunFacts, *,
                batch_size: int, cfg: Any) -> dict[str, Any]:
        """Each test slide's windows streamed through the model into its probability map (staged in
        the run folder until `write_predictions` renders the outputs)."""
        from pathkit_core.progress import ProgressBar
        from pathkit_core.training.trainer import make_accelerator

        if not isinstance(items, ItemsWithBagSpecs):
            raise PathkitError("segmentation: the test cases must be slides (feature bags), not whole images")
        specs = items.specs
        accelerator = make_accelerator(cfg)
        quiet = dataclasses.replace(cfg, progress=False)
        remove_orphan_staging(facts.run_dir)
        staging = facts.run_dir / f"{STAGING_PREFIX}{os.getpid()}"
        out: dict[str, Any] = {}
        with ProgressBar("segment", len(specs), "slides", enabled=cfg.progress) as bar:
            for spec in specs:
                out[spec.case_id] = predict_slide(model, spec.case_id, spec.feature_files, spec.meta, staging,
                                                  accelerator=accelerator, batch_size=max(batch_size, 256), cfg=quiet)
                bar.advance(1)
        windows = window_facts(out)
        if windows.get("mismatch"):
            log.warning("segmentation: windows of %s um differ from the %.4g um field of view of the patches the head "
                        "was trained on (x%.2f): the head sees another scale than in training (dataset option "
                        "window_um, or [tiling] tile_um)", "/".join(f"{w:.4g}" for w in windows["window_um"]),
                        windows["training_field_um"], windows["ratio"])
        return out

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        if not isinstance(prediction, Mapping) or "map" not in prediction:
            return f"expected a stitched map record, got {str(prediction)[:80]!r}"
        return None

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        if case.input_kind != INPUT_SLIDES:  # a validation patch: a patch classifier's prediction
            from pathkit_tasks.classification.task import PatchClassificationTask

            return PatchClassificationTask().output(prediction, case, dataset)
        classes = list(dataset.class_names())
        foreground = case.target["foreground"]
        settings = stitch_settings(case.meta)
        return {**prediction, "foreground": classes.index(foreground), "foreground_class": foreground,
                "class_names": classes, "threshold": settings["threshold"],
                "region_name": settings["region_name"] or foreground}

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        return {case.case_id: {"map": None, "empty": True} for case in test_cases}

    # ------------------------------------------------------------------ outputs

    def write_predictions(self, path: Path, predictions: Mapping[str, Any], ids: Sequence[str],
                          facts: RunFacts) -> Path:
        from pathkit_core.training.trainer import write_predictions
        from pathkit_core.workspace import atomic_write_with, durable_batch, replaced_folder
        from pathkit_tasks.segmentation.quantify import composition_table

        folder = output_folder(path)
        index, rows = {}, []
        # The whole folder is written beside and swapped in (a run killed while writing leaves
        # the old outputs whole, and its temporaries are removed by the next run); inside it,
        # every file lands at the end of the batch, after one fsync each and one per folder.
        with replaced_folder(folder) as into, durable_batch():
            for cid in ids:
                entry, slide_rows = render_slide(cid, predictions[cid], folder, facts.run_dir, into=into)
                index[cid] = entry
                rows.extend(slide_rows)
            if rows:
                table = composition_table(rows)
                atomic_write_with(into / "quantification.parquet", table.write_parquet)
                atomic_write_with(into / "quantification.csv", table.write_csv)
        written = write_predictions(path, index, ids)
        staging = set()
        for cid in ids:  # staged maps are removed once everything they became is written
            staged = predictions[cid].get("staged")
            if staged:
                Path(staged).unlink(missing_ok=True)
                staging.add(Path(staged).parent)
        for folder_left in staging:
            with contextlib.suppress(OSError):
                folder_left.rmdir()
        return written

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        return {"class_names": list(dataset.class_names()), "tile_spec": facts.tile_spec,
                "tiling": dict(facts.tiling), "predictions_root": str(facts.run_dir)}

    def run_summary(self, predictions: Mapping[str, Any], references: Mapping[str, Any]) -> dict[str, Any]:
        """Where the outputs are, the tissue composition of each slide for the report, and the window
        size against the training patches' (`windows`)."""
        windows = window_facts(predictions)
        entries = {cid: p for cid, p in predictions.items() if isinstance(p, Mapping) and p.get("composition")}
        if not entries:
            return {"windows": windows} if windows else {}
        classes = list(next(iter(entries.values()))["class_names"])
        rows = [[cid, f"{p['tissue_mm2']:.3f}", f"{p['foreground_mm2']:.3f}",
                 *(f"{p['composition']['tissue'].get(c, 0.0):.3f}" for c in classes)] for cid, p in entries.items()]
        table = {"title": "Tissue composition per slide (share of the tissue's area)",
                 "columns": ["slide", "tissue mm2", "tumour mask mm2", *classes], "rows": rows}
        outputs = sorted({str(Path(p["quantification"]).parent) for p in entries.values()})
        return {"segmentation_outputs": outputs, "tables": [table], **({"windows": windows} if windows else {})}

    def report_sections(self, run: Any) -> list[Any]:
        """Per-slide Dice/IoU, predicted against reference masks over the thumbnail, tissue composition."""
        from pathkit_tasks.segmentation.sections import segmentation_sections

        return segmentation_sections(run)


def window_facts(predictions: Mapping[str, Any]) -> dict[str, Any]:
    """The window sides of the slides' predictions against the training patches' field of view:
    {"window_um": sorted distinct sides, "training_field_um", "ratio" (the furthest side over the
    field), "mismatch": off by more than FIELD_TOLERANCE}; {} when no prediction records a window."""
    records = [p for p in predictions.values() if isinstance(p, Mapping) and p.get("window_um")]
    if not records:
        return {}
    sides = sorted({round(float(p["window_um"]), 3) for p in records})
    fields = {float(p["training_field_um"]) for p in records if p.get("training_field_um")}
    out: dict[str, Any] = {"window_um": sides, "training_field_um": None}
    if len(fields) == 1:
        field_um = fields.pop()
        ratio = max((w / field_um for w in sides), key=lambda r: abs(r - 1.0))
        out.update(training_field_um=field_um, ratio=round(ratio, 4),
                   mismatch=bool(abs(ratio - 1.0) > FIELD_TOLERANCE), tolerance=FIELD_TOLERANCE)
    return out


# --------------------------------------------------------------------------- one slide


def _probabilities(prediction: Any) -> Any:
    import numpy as np

    if isinstance(prediction, Mapping) and prediction.get("probabilities") is not None:
        return np.asarray(prediction["probabilities"], dtype=np.float32)
    raise PathkitError(f"segmentation: the window classifier gave {str(prediction)[:80]!r}, not class probabilities")


def slide_geometry(feature_file: Path) -> dict[str, Any]:
    """What stitching needs from a slide's feature file and its tile manifest: level-0 size, mpp,
    window and stride sizes, the tiling parameters, the slide path and the reader that opened it."""
    from pathkit_core.features.store import read_feature_meta
    from pathkit_core.wsi.manifest import read_manifest_meta

    meta = read_feature_meta(feature_file)
    manifest_path = meta.get("manifest_path")
    if not manifest_path:
        raise PathkitError(f"{feature_file}: segmentation needs features extracted by pathkit from a tile manifest "
                           "(the window positions and slide size come from it)")
    manifest = read_manifest_meta(manifest_path)
    return {"slide_id": meta.get("slide_id") or manifest.get("slide_id"), "slide_path": manifest["slide_path"],
            "width0": int(manifest["width"]), "height0": int(manifest["height"]), "mpp": float(manifest["mpp"]),
            "mpp_override": manifest.get("mpp_override"), "tile_px": int(manifest["tile_px"]),
            "stride_px": int(manifest["stride_px"]), "window0": float(manifest["size0"]),
            "params": manifest["params"], "manifest": str(manifest_path),
            "tissue_mask": manifest.get("tissue_mask"), "mask_geometry": manifest.get("mask"),
            # the reader that tiled it, to reopen the slide the same way (docs/formats.md)
            "slide_reader": manifest.get("slide_reader") or None}


def _window_items(features: Any, coords: Any, start: int) -> list[dict[str, Any]]:
    import torch

    feats = features.float()
    coords = coords.to(torch.int64)
    return [{"case_id": str(start + i), "features": feats[i:i + 1], "coords": coords[i:i + 1], "target": None,
             "meta": {}, "tile_index": torch.tensor([start + i]), "tile_file": torch.zeros(1, dtype=torch.int64),
             "geometry": []} for i in range(len(feats))]


def predict_slide(model: Any, case_id: str, feature_files: Sequence[Path], meta: Mapping[str, Any], staging: Path,
                  *, accelerator: Any, batch_size: int, cfg: Any) -> dict[str, Any]:
    """Stream one slide's windows through `model`, stitch them and stage the map (npz): the raw
    prediction record, which names the staged file."""
    import numpy as np

    from pathkit_core.features.store import iter_feature_rows
    from pathkit_core.workspace import atomic_write_with
    from pathkit_tasks.segmentation.stitch import ProbabilityMap, StitchGrid, tissue_cells

    # the case id names the staged map: refused before any window is predicted if it leaves `staging`
    staged = confined(staging, f"{case_id}.npz", what=f"segmentation case {case_id!r}")
    if len(feature_files) != 1:
        raise PathkitError(f"segmentation case {case_id}: one slide per case, got {len(feature_files)} feature files")
    settings = stitch_settings(meta)
    geo = slide_geometry(Path(feature_files[0]))
    grid = StitchGrid.for_tiling((geo["width0"], geo["height0"]), tile_px=geo["tile_px"], stride_px=geo["stride_px"],
                                 window0=geo["window0"], slide_mpp=geo["mpp"], subdivide=int(settings["subdivide"]))
    stitched: ProbabilityMap | None = None
    start = 0
    tissue_fraction = _window_tissue(geo) if settings["tissue_weighting"] else None
    for features, coords in iter_feature_rows(feature_files[0], rows=CHUNK_ROWS):
        probs = _window_probabilities(model, features, coords, start, batch_size=batch_size,
                                      accelerator=accelerator, cfg=cfg)
        if stitched is None:
            stitched = ProbabilityMap(grid, probs.shape[1], settings["blend"])
        weight = None if tissue_fraction is None else tissue_fraction[start:start + len(features)]
        stitched.add(coords.numpy(), probs, weight)
        start += len(features)
    if stitched is None:
        raise PathkitError(f"segmentation case {case_id}: its feature file has no windows")
    probabilities, covered = stitched.finish()
    tissue_mask, mds = _tissue(geo)
    tissue = tissue_cells(tissue_mask, mds, grid, float(settings["cell_tissue_fraction"]))
    thumb = _overlay_thumbnail(geo) if settings["overlay"] else None

    def write(tmp: Path) -> None:
        pictures = {} if thumb is None else {
            "thumbnail": thumb.rgb, "thumb_downsample": np.array([thumb.downsample_x, thumb.downsample_y])}
        with open(tmp, "wb") as fh:
            np.savez(fh, probabilities=probabilities.astype(np.float16), covered=covered, tissue=tissue, **pictures)

    atomic_write_with(staged, write)
    return {"staged": str(staged), "map": None, "slide_id": geo["slide_id"], "n_windows": stitched.n_windows,
            "window_um": round(geo["window0"] * geo["mpp"], 3), "training_field_um": meta.get("training_field_um"),
            "grid": grid.as_dict(), "blend": settings["blend"], "n_classes": int(probabilities.shape[-1]),
            "slide": {"path": geo["slide_path"], "width0": geo["width0"], "height0": geo["height0"],
                      "mpp": geo["mpp"]}}


def _window_tissue(geo: Mapping[str, Any]) -> Any:
    """Each window's tissue fraction (its tile-manifest row; feature rows follow the manifest), so
    that windows mostly over glass at the tissue border weigh less in the cells they share."""
    import numpy as np
    import pyarrow.parquet as pq

    column = pq.read_table(geo["manifest"], columns=["tissue_fraction"]).column(0)
    return np.maximum(column.to_numpy().astype(np.float32), 1e-3)


def _window_probabilities(model: Any, features: Any, coords: Any, start: int, *, batch_size: int, accelerator: Any,
                          cfg: Any) -> Any:
    """(N, K) float32 class probabilities of one chunk of windows. A patch head (a module with
    `probabilities(features)`, as every patch-classification generator builds) is called on the
    chunk's feature matrix in batches; any other model goes through the trainer's `predict`, one
    item per window."""
    import numpy as np
    import torch

    if isinstance(model, ProbabilityHead) and isinstance(model, torch.nn.Module):
        head = model.probabilities
        model = model.to(accelerator.device).eval()
        out = []
        with torch.inference_mode():
            for i in range(0, len(features), batch_size):
                batch = features[i:i + batch_size].to(accelerator.device).float()
                out.append(head(batch).float().cpu())
        probs = torch.cat(out).numpy() if out else np.zeros((0, 0), dtype=np.float32)
        if probs.ndim != 2 or probs.shape[0] != len(features):
            raise PathkitError(f"segmentation: the window classifier gave {tuple(probs.shape)} probabilities for "
                               f"{len(features)} windows")
        return probs.astype(np.float32, copy=False)
    from pathkit_core.training.trainer import predict

    raw = predict(model, _window_items(features, coords, start), batch_size=batch_size, accelerator=accelerator,
                  cfg=cfg)
    return np.stack([_probabilities(raw[str(start + i)]) for i in range(len(features))])


def _tissue(geo: Mapping[str, Any]) -> tuple[Any, tuple[float, float]]:
    """The tiling's tissue mask and its level-0 pixels per mask pixel (x, y): read from the tile
    manifest, which keeps it; a manifest written before it did has the slide segmented again
    with the tiling's parameters (the same mask)."""
    from pathkit_core.wsi.masks import unpack_mask

    packed, frame = geo.get("tissue_mask"), geo.get("mask_geometry")
    if packed and frame:
        mask = unpack_mask(packed, f"{geo['manifest']}: tissue_mask")
        if mask.shape != (int(frame["height"]), int(frame["width"])):
            raise PathkitError(f"{geo['manifest']}: tissue mask of {mask.shape} pixels, but its metadata says "
                               f"{frame['height']} x {frame['width']}")
        return mask, (float(frame["downsample_x"]), float(frame["downsample_y"]))
    from pathkit_core.wsi.segmentation import segment_slide
    from pathkit_core.wsi.slide import open_slide
    from pathkit_core.wsi.tiling import TilingParams

    with open_slide(geo["slide_path"], mpp=geo.get("mpp_override"), reader=geo.get("slide_reader")) as slide:
        _thumb, mask, mds_x, mds_y = segment_slide(slide, TilingParams.from_dict(geo["params"]))
    return mask.tissue, (mds_x, mds_y)


def _overlay_thumbnail(geo: Mapping[str, Any]) -> Any:
    """The slide's thumbnail for the overlay: the level `overlay_level` names, read whole as
    stored; else (every level long enough is longer than `OVERLAY_PX`) a thumbnail of `OVERLAY_PX`
    resampled from the coarsest sufficient level."""
    from pathkit_core.wsi.segmentation import Thumbnail, read_thumbnail
    from pathkit_core.wsi.slide import open_slide

    with open_slide(geo["slide_path"], mpp=geo.get("mpp_override"), reader=geo.get("slide_reader")) as slide:
        level = overlay_level(slide.level_dimensions)
        if level is None:
            return read_thumbnail(slide, OVERLAY_PX)
        (width0, height0), (width, height) = slide.dimensions, slide.level_dimensions[level]
        ds_x, ds_y = width0 / width, height0 / height
        return Thumbnail(slide.read_region((0, 0), level, (width, height)), ds_x, ds_y, level,
                         (slide.mpp or 0.0) * (ds_x + ds_y) / 2.0)


def overlay_level(level_dimensions: Sequence[tuple[int, int]]) -> int | None:
    """The pyramid level the overlay is drawn on, read as stored: the coarsest at least
    `OVERLAY_MIN_PX` long (level 0 when none is) if it is at most `OVERLAY_PX` long; None when it
    is longer (the overlay is then resampled to `OVERLAY_PX`)."""
    sides = [max(int(w), int(h)) for w, h in level_dimensions]
    fitting = [i for i, side in enumerate(sides) if side >= OVERLAY_MIN_PX]
    level = min(fitting, key=sides.__getitem__) if fitting else max(range(len(sides)), key=sides.__getitem__)
    return level if sides[level] <= OVERLAY_PX else None


def render_slide(case_id: str, prediction: Mapping[str, Any], folder: Path, run_dir: Path, *,
                 into: Path | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write one slide's outputs from its staged map: (its index entry, its composition rows).
    The entry names files under `folder`; they are written under `into` (default `folder`), the
    folder that will become it."""
    import numpy as np

    from pathkit_core.workspace import atomic_write_with
    from pathkit_core.wsi.masks import MaskFrame, geojson_features, vectorise, write_geojson
    from pathkit_tasks.segmentation.mask_tiff import write_mask_tiff
    from pathkit_tasks.segmentation.overlay import class_colours, draw_overlay, write_overlay
    from pathkit_tasks.segmentation.quantify import composition_rows, slide_composition
    from pathkit_tasks.segmentation.stitch import class_map, foreground_mask

    entry = {k: v for k, v in prediction.items() if k != "staged"}
    staged = prediction.get("staged")
    if not staged:
        return {**entry, "map": None}, []  # a baseline: no map, all background
    with np.load(staged) as data:
        probabilities = data["probabilities"].astype(np.float32)
        covered, tissue = data["covered"], data["tissue"]
        thumbnail = data["thumbnail"] if "thumbnail" in data.files else None  # None: overlay switched off
        thumb_ds = data["thumb_downsample"] if thumbnail is not None else None
    grid, slide = prediction["grid"], prediction["slide"]
    classes = list(prediction["class_names"])
    fg_index = int(prediction["foreground"])
    foreground = foreground_mask(probabilities, covered, tissue, fg_index, prediction.get("threshold"))
    labels = class_map(probabilities, covered, tissue)
    cell_frame = MaskFrame(int(grid["width"]), int(grid["height"]), float(grid["cell_px0"]), float(grid["cell_px0"]),
                           grid.get("mpp"))
    size0 = (int(slide["width0"]), int(slide["height0"]))
    paths = {kind: confined(folder, kind, f"{case_id}{ext}", what=f"segmentation case {case_id!r}") for kind, ext in (
        ("maps", ".npz"), ("masks", ".tif"), ("tumour_masks", ".tiff"), ("class_maps", ".tiff"),
        ("geojson", ".geojson"), ("overlays", ".png")) if kind != "overlays" or thumbnail is not None}
    into = folder if into is None else into
    target = {kind: into / p.relative_to(folder) for kind, p in paths.items()}

    def write_map(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, probabilities=probabilities.astype(np.float16), covered=covered, tissue=tissue,
                                labels=labels, mask=foreground, cell_px0=np.float64(cell_frame.dx),
                                slide_size=np.array(size0), slide_mpp=np.float64(slide["mpp"]))

    atomic_write_with(target["maps"], write_map)
    _write_grid_tiff(target["masks"], foreground, cell_frame)
    fg_name = classes[fg_index]
    description = f"pathkit {fg_name} mask of {case_id}; cell {cell_frame.dx:.4g} level-0 px"
    write_mask_tiff(target["tumour_masks"], np.where(foreground, 255, 0), cell0=cell_frame.dx, slide_size=size0,
                    slide_mpp=slide["mpp"], description=description)
    write_mask_tiff(target["class_maps"], labels, cell0=cell_frame.dx, slide_size=size0, slide_mpp=slide["mpp"],
                    colours=class_colours(len(classes)),
                    description=f"pathkit class map of {case_id}: value 0 none, " +
                    ", ".join(f"{i + 1} {c}" for i, c in enumerate(classes)))
    region = vectorise(foreground, cell_frame)
    write_geojson(target["geojson"], geojson_features(region, prediction.get("region_name") or fg_name,
                                                     properties={"source": "pathkit", "slide_id": case_id}))
    if thumbnail is not None:
        th, tw = thumbnail.shape[:2]
        thumb_frame = MaskFrame(tw, th, float(thumb_ds[0]), float(thumb_ds[1]))
        write_overlay(target["overlays"], draw_overlay(thumbnail, thumb_frame, labels, foreground, cell_frame,
                                                       class_colours(len(classes))))
    cell_area = (cell_frame.mpp * 1e-3) ** 2 if cell_frame.mpp else 0.0
    found = slide_composition(labels, foreground, tissue, classes, cell_area)
    rel = {k: str(p.relative_to(run_dir)) if p.is_relative_to(run_dir) else str(p) for k, p in paths.items()}
    entry.update(map=rel["maps"], mask=rel["masks"], outputs=rel,
                 quantification=str((folder / "quantification.parquet").relative_to(run_dir))
                 if folder.is_relative_to(run_dir) else str(folder / "quantification.parquet"),
                 foreground_mm2=found["tumour"]["area_mm2"], tissue_mm2=found["tissue"]["area_mm2"],
                 composition={r: {c: round(v["fraction"], 6) for c, v in f["classes"].items()}
                              for r, f in found.items()})
    return entry, composition_rows(case_id, found)


def _write_grid_tiff(path: Path, mask: Any, frame: Any) -> None:
    """The mask on its cell grid (0 / 255, one page) with resolution tags, for `pathkit score`."""
    import numpy as np
    import tifffile

    from pathkit_core.workspace import atomic_path

    values = np.where(mask, 255, 0).astype(np.uint8)
    kwargs: dict[str, Any] = {"photometric": "minisblack", "compression": "deflate", "metadata": None}
    if frame.mpp:
        kwargs.update(resolution=(1e4 / frame.mpp, 1e4 / frame.mpp), resolutionunit="CENTIMETER")
    with atomic_path(path) as tmp:
        tifffile.imwrite(tmp, values, **kwargs)
