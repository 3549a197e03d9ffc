"""segmentation: Dice, IoU, precision, recall and F1 of binary masks, per slide and pooled, with an
explicit rule for empty ground truth; and, with a run's class maps, the tissue composition inside
the true tumour region beside the predicted one (the quantification's own error).

Options (`--option KEY=VALUE`, or a dataset's metric options):
- `empty`: what a slide with an empty reference scores. "seed" (default; the HepatoBench seed's
  recipe): a zero denominator gives 0, so an empty union scores 0; "ignore" (MONAI's default,
  `ignore_empty=True`): such a slide is NaN and left out of the per-slide means and of the pooled
  counts; "one" (MONAI `ignore_empty=False`): empty reference and empty prediction score 1, an
  empty reference with a non-empty prediction 0.
- `region`: "tissue" (default in a run: both masks cut to the tissue mask) or "slide" (the whole
  slide or mask frame; what `pathkit score` on files does, having no tissue mask).
- `eval_mpp`: the evaluation resolution in micrometres per pixel (default: the prediction's cell
  grid in a run, the reference raster's pixels for files).
- `downsample`: for files, the raster masks' pixel size in GeoJSON coordinate units (default 1:
  GeoJSON in the raster's pixel frame).
- `mask_classes`: GeoJSON classifications that form the foreground (default: every area feature);
  `foreground_value`: the raster value of the foreground (default: any non-zero value).

Predictions and references may also be 2-D arrays of one shape (nested lists: the Hugging Face
`evaluate` interface). docs/segmentation.md, "Scoring".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_sdk.intervals import SAMPLE_KEY, sample_facts
from pathkit_tasks import TASK_SEGMENTATION

EMPTY_RULES = ("seed", "ignore", "one")
REGIONS = ("tissue", "slide")
SCORES = ("Dice", "IoU", "precision", "recall", "F1")


def overlap_scores(tp: int, fp: int, fn: int, rule: str = "seed") -> dict[str, float]:
    """Dice, IoU, precision, recall and F1 from pixel counts under an empty-reference `rule`."""
    empty_ref, empty_pred = tp + fn == 0, tp + fp == 0
    if rule == "ignore" and empty_ref:
        return dict.fromkeys(SCORES, math.nan)
    if rule == "one" and empty_ref and empty_pred:
        return dict.fromkeys(SCORES, 1.0)

    def ratio(num: float, den: float) -> float:
        return num / den if den > 0 else 0.0

    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    return {"Dice": ratio(2 * tp, 2 * tp + fp + fn), "IoU": ratio(tp, tp + fp + fn), "precision": precision,
            "recall": recall, "F1": ratio(2 * precision * recall, precision + recall)}


def _counts(pred: Any, ref: Any, region: Any) -> tuple[int, int, int, int]:
    import numpy as np

    if region is not None:
        pred, ref = pred & region, ref & region
    tp = int(np.count_nonzero(pred & ref))
    return tp, int(np.count_nonzero(pred & ~ref)), int(np.count_nonzero(~pred & ref)), int(np.count_nonzero(ref))


def _composition(labels: Any, region: Any, names: Sequence[str]) -> dict[str, float]:
    import numpy as np

    inside = labels[region]
    counts = np.bincount(inside.astype(np.int64), minlength=len(names) + 1)[1:len(names) + 1]
    total = counts.sum()
    return {name: float(counts[i] / total) if total else 0.0 for i, name in enumerate(names)}


class SegmentationMetric(Metric):
    """Overlap of predicted and reference masks on one grid (module docstring)."""

    name: ClassVar[str] = "segmentation"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("empty", "|".join(EMPTY_RULES), "seed", "what a slide with an empty reference scores"),
        DatasetOption("region", "|".join(REGIONS), None, "tissue (default in a run) or slide (default for files)"),
        DatasetOption("eval_mpp", "float", None, "evaluation resolution in micrometres per pixel"),
        DatasetOption("downsample", "float", None, "raster pixel size in GeoJSON coordinate units (files)"),
        DatasetOption("mask_classes", "any", None, "GeoJSON classifications forming the foreground"),
        DatasetOption("foreground_value", "int", None, "raster value of the foreground (default: any non-zero)"),
    )
    description: ClassVar[str] = "Dice, IoU, precision, recall, F1 of masks per slide and pooled; empty-mask rules"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SEGMENTATION,)
    headline_scores: ClassVar[tuple[str, ...]] = ("Dice", "IoU", "precision", "recall", "F1", "Dice_pooled",
                                                  "IoU_pooled")
    lower_is_better: ClassVar[tuple[str, ...]] = ("composition_MAE", "tumour_area_relative_error")
    score_ranges: ClassVar[dict[str, tuple[float, float]]] = {k: (0.0, 1.0) for k in (
        *SCORES, *(f"{s}_pooled" for s in SCORES))}

    def compute(self, predictions: Sequence[Any], references: Sequence[Any], *, ids: Sequence[str] | None = None,
                context: Mapping[str, Any] | None = None) -> MetricResult:
        import polars as pl

        from pathkit_metrics._mask_inputs import array_pair, file_pair, run_pair

        context = dict(context or {})
        # checked here too (idempotent), for calls that do not come through the metric runner
        options = self.checked_options(dict(context.get("options") or {}))
        rule = str(options.get("empty") or "seed")
        if len(predictions) != len(references):
            raise PathkitError(f"segmentation: {len(predictions)} predictions for {len(references)} references")
        ids = list(ids) if ids is not None else [str(i) for i in range(len(references))]
        root = Path(context["predictions_root"]) if context.get("predictions_root") else None
        in_run = any(isinstance(p, Mapping) for p in predictions)
        region = str(options.get("region") or ("tissue" if in_run else "slide"))
        if region == "tissue" and not in_run:
            raise PathkitError("segmentation: region=tissue needs a run's tissue masks; mask files are scored over "
                               "their whole frame (region=slide)")
        rows, totals, composition_rows = [], [0, 0, 0], []
        resolutions: set[Any] = set()
        for cid, pred, ref in zip(ids, predictions, references, strict=True):
            try:
                if isinstance(pred, Mapping):
                    if not isinstance(ref, Mapping):
                        raise PathkitError(f"a run prediction needs a ground-truth record, got {str(ref)[:60]!r}")
                    pair = run_pair(pred, ref, options, root, region)
                elif not isinstance(pred, str | Path):
                    pair = array_pair(pred, ref, options)
                else:
                    pair = file_pair(pred, ref["mask"] if isinstance(ref, Mapping) else ref, options)
            except PathkitError as exc:
                raise PathkitError(f"segmentation: case {cid}: {exc}") from None
            tp, fp, fn, n_ref = _counts(pair.prediction, pair.reference, pair.region)
            scores = overlap_scores(tp, fp, fn, rule)
            empty_ref, empty_pred = n_ref == 0, tp + fp == 0
            if not (rule == "ignore" and empty_ref):
                totals[0] += tp
                totals[1] += fp
                totals[2] += fn
            resolutions.add(round(pair.frame.mpp, 6) if pair.frame.mpp else f"downsample {pair.frame.dx:g}")
            px_mm2 = pair.frame.pixel_area_mm2
            row = {"id": cid, **scores, "tp": tp, "fp": fp, "fn": fn, "empty_reference": empty_ref,
                   "empty_prediction": empty_pred, "eval_width": pair.frame.width, "eval_height": pair.frame.height,
                   "eval_mpp": pair.frame.mpp, "region": region if pair.region is not None else "slide",
                   "predicted_mm2": (tp + fp) * px_mm2 if px_mm2 else None,
                   "reference_mm2": (tp + fn) * px_mm2 if px_mm2 else None, "notes": "; ".join(pair.notes)}
            if pair.labels is not None and pair.class_names:
                from pathkit_tasks.segmentation.quantify import tumour_region

                scope = pair.region if pair.region is not None else True
                in_pred = _composition(pair.labels, tumour_region(pair.prediction) & scope, pair.class_names)
                in_true = _composition(pair.labels, tumour_region(pair.reference) & scope, pair.class_names)
                for name in pair.class_names:
                    row[f"{name}_in_predicted"] = in_pred[name]
                    row[f"{name}_in_true"] = in_true[name]
                if not empty_ref:
                    errors = [abs(in_pred[n] - in_true[n]) for n in pair.class_names]
                    row["composition_MAE"] = sum(errors) / len(errors)
                    composition_rows.append([cid, *(f"{in_pred[n]:.3f} / {in_true[n]:.3f}" for n in pair.class_names)])
            rows.append(row)
        frame = pl.DataFrame(rows, infer_schema_length=None)
        summary = self._summary(frame, totals, rule)
        details: dict[str, Any] = {"empty_rule": rule, "region": region,
                                   "resolution_um_per_px": sorted(resolutions, key=str),
                                   SAMPLE_KEY: sample_facts(len(rows))}
        if composition_rows:
            names = [c.removesuffix("_in_true") for c in frame.columns if c.endswith("_in_true")]
            title = "Tissue composition: fraction of each class inside the predicted / the true tumour region"
            details["tables"] = [{"title": title, "columns": ["slide", *names], "rows": composition_rows}]
        return MetricResult(summary, frame, details)

    @staticmethod
    def _summary(frame: Any, totals: list[int], rule: str) -> dict[str, float]:
        import numpy as np

        out: dict[str, float] = {}
        for key in SCORES:
            values = np.array([v for v in frame[key].to_list() if v is not None and not math.isnan(v)])
            out[key] = float(values.mean()) if len(values) else math.nan
        pooled = overlap_scores(*totals, rule="seed" if rule == "ignore" else rule)
        if rule == "ignore" and sum(totals) == 0:
            pooled = dict.fromkeys(SCORES, math.nan)
        out.update({f"{k}_pooled": v for k, v in pooled.items()})
        out["n_cases"] = float(frame.height)
        out["n_empty_reference"] = float(frame["empty_reference"].sum())
        out["n_empty_both"] = float((frame["empty_reference"] & frame["empty_prediction"]).sum())
        out["n_scored"] = float(sum(1 for v in frame["Dice"].to_list() if v is not None and not math.isnan(v)))
        if "composition_MAE" in frame.columns:
            values = [v for v in frame["composition_MAE"].to_list() if v is not None]
            out["composition_MAE"] = float(np.mean(values)) if values else math.nan
        pred_area, ref_area = frame["predicted_mm2"].to_list(), frame["reference_mm2"].to_list()
        errors = [abs(p - r) / r for p, r in zip(pred_area, ref_area, strict=True) if p is not None and r]
        if errors:
            out["tumour_area_relative_error"] = float(np.mean(errors))
        return out


@hookimpl
def register_metrics(register):
    register(SegmentationMetric)
