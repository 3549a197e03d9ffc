"""Task `segmentation`: a slide in, a per-slide mask out, stitched from tile-level class probabilities.

Training cases are labelled patches (images or feature files, target a class name) that fit any
`patch-classification` head; test cases are slides whose target names their ground-truth mask:
`{"mask": path to a mask image or GeoJSON, "foreground": class name}`. The slides are tiled with
the overlap the dataset or run asks for (`tiling_options`), the head gives class probabilities per
tile, and the tiles are stitched onto a grid of stride-sized cells, each cell the mean of the tiles
that cover it (TIAToolbox's sum / count; docs/segmentation.md). Predictions are written as
`<predictions>_masks/<case>.npy` (cells x classes probabilities, float16) and `<case>.png` (the
foreground mask), indexed by the JSON lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import (
    INPUT_FEATURES,
    INPUT_IMAGES,
    INPUT_SLIDES,
    TASK_SEGMENTATION,
    Case,
    Dataset,
    PathkitError,
    RunFacts,
    Task,
)

MASK_SUFFIXES = (".png", ".tif", ".tiff", ".geojson", ".json")


def stitch(coords: Any, probabilities: Any, *, tile_px0: float, stride_px0: float) -> tuple[Any, Any]:
    """Average tile probabilities onto a grid of `stride_px0`-sized cells (level-0 pixels).

    A tile at level-0 (x, y) of side `tile_px0` covers the cells whose square lies inside it;
    each cell is the mean over the tiles covering it. Returns (cells (H, W, K) float32,
    covered (H, W) bool); cells no tile covers (background, slide borders) are zero and False.
    """
    import numpy as np

    coords = np.asarray(coords, dtype=np.float64)
    probs = np.asarray(probabilities, dtype=np.float32)
    span = max(1, round(tile_px0 / stride_px0))
    cell = np.floor(coords / stride_px0 + 1e-6).astype(np.int64)
    width, height = int(cell[:, 0].max()) + span, int(cell[:, 1].max()) + span
    total = np.zeros((height, width, probs.shape[1]), dtype=np.float32)
    count = np.zeros((height, width), dtype=np.float32)
    for dy in range(span):
        for dx in range(span):
            ys, xs = cell[:, 1] + dy, cell[:, 0] + dx
            np.add.at(total, (ys, xs), probs)
            np.add.at(count, (ys, xs), 1.0)
    covered = count > 0
    total[covered] /= count[covered][:, None]
    return total, covered


class SegmentationTask(Task):
    """Whole-slide segmentation by stitched tile classification (HepatoBench tumour masks)."""

    name: ClassVar[str] = TASK_SEGMENTATION
    description: ClassVar[str] = "a mask per slide, stitched from tile-level class probabilities (HepatoBench tumour)"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_IMAGES, INPUT_FEATURES)
    target_format: ClassVar[str] = (
        'patches: a class name from class_names(); slides: {"mask": path to a mask image or GeoJSON, '
        '"foreground": class name}'
    )
    prediction_format: ClassVar[str] = (
        'per slide {"probabilities": (H, W, K) cell x class array, "covered": (H, W) bool, '
        '"cell_px0": cell side in level-0 px, "foreground": class index}; written as mask files'
    )
    baselines: ClassVar[tuple[str, ...]] = ("all-background",)

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
            return {k: str(v) if isinstance(v, Path) else v for k, v in dict(case.target).items()}
        return self.model_target(case, dataset)

    def predict(self, model: Any, items: Sequence[dict[str, Any]], facts: RunFacts, *,
                batch_size: int, cfg: Any) -> dict[str, Any]:
        import numpy as np

        from pathkit_core.training.trainer import predict

        tiles, owners = [], []
        for item in items:
            for i in range(len(item["features"])):
                tiles.append({"case_id": f"{item['case_id']}#{i}", "features": item["features"][i:i + 1],
                              "coords": item["coords"][i:i + 1], "target": None, "meta": {}})
                owners.append(item["case_id"])
        raw = predict(model, tiles, batch_size=max(batch_size, 64), cfg=cfg)
        out: dict[str, Any] = {}
        for item in items:
            cid = item["case_id"]
            rows = [raw[f"{cid}#{i}"] for i in range(len(item["features"]))]
            probs = np.stack([_probabilities(r) for r in rows])
            geometry = (item.get("geometry") or [{}])[0]
            tile_px0 = float(geometry.get("tile_px_level0") or facts.tile_spec.tile_px)
            stride = float(facts.tiling.get("stride_px") or
                           round(facts.tile_spec.tile_px * (1 - float(facts.tiling.get("overlap", 0.0)))))
            stride_px0 = tile_px0 * stride / facts.tile_spec.tile_px
            cells, covered = stitch(item["coords"].numpy(), probs, tile_px0=tile_px0, stride_px0=stride_px0)
            out[cid] = {"probabilities": cells, "covered": covered, "cell_px0": stride_px0}
        return out

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        classes = tuple(dataset.class_names())
        return {**prediction, "foreground": classes.index(case.target["foreground"])}

    def write_predictions(self, path: Path, predictions: Mapping[str, Any], ids: Sequence[str],
                          facts: RunFacts) -> Path:
        import numpy as np
        from PIL import Image

        from pathkit_core.training.trainer import write_predictions
        from pathkit_core.workspace import atomic_write_with

        folder = path.with_name(f"{path.stem}_masks")
        index = {}
        for cid in ids:
            pred = predictions[cid]
            entry = {k: v for k, v in pred.items() if k not in ("probabilities", "covered")}
            if pred.get("probabilities") is not None:
                cells = np.asarray(pred["probabilities"], dtype=np.float16)
                fg = int(pred["foreground"])
                mask = ((cells.argmax(-1) == fg) & np.asarray(pred["covered"])).astype(np.uint8) * 255
                atomic_write_with(folder / f"{cid}.npy", lambda tmp, a=cells: _save_npy(tmp, a))
                atomic_write_with(folder / f"{cid}.png", lambda tmp, m=mask: Image.fromarray(m).save(tmp, format="PNG"))
                entry.update(probabilities=f"{folder.name}/{cid}.npy", mask=f"{folder.name}/{cid}.png",
                             shape=list(mask.shape))
            else:
                entry["mask"] = None  # all background
            index[cid] = entry
        return write_predictions(path, index, ids)

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        return {case.case_id: {"probabilities": None, "mask": None} for case in test_cases}

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        return {"class_names": list(dataset.class_names()), "tile_spec": facts.tile_spec,
                "tiling": dict(facts.tiling), "predictions_root": str(facts.run_dir)}

    def report_sections(self, run: Any) -> list[Any]:
        """Per-slide Dice/IoU, predicted against reference masks over the thumbnail, tissue composition."""
        from pathkit_core.report.segmentation import segmentation_sections

        return segmentation_sections(run)


def _probabilities(prediction: Any) -> Any:
    import numpy as np

    if isinstance(prediction, Mapping) and prediction.get("probabilities") is not None:
        return np.asarray(prediction["probabilities"], dtype=np.float32)
    raise PathkitError(f"segmentation: the tile classifier gave {prediction!r}, not class probabilities")


def _save_npy(path: Path, array: Any) -> None:
    import numpy as np

    with open(path, "wb") as fh:
        np.save(fh, array)
