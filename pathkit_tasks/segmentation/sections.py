"""Report sections of the `segmentation` task: per-slide Dice/IoU, predicted against reference masks
over the slide thumbnail, and the tissue composition of each slide.

Predicted masks are the files the task wrote (the prediction's "mask", a PNG or TIFF relative to
the run folder); reference masks are the test cases' targets (`test_cases.jsonl`), mask images or
GeoJSON, put on the prediction's cell grid as the segmentation metric reads them; the thumbnail
is the slide's QC thumbnail from the tile store, found through its feature file's metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathkit_core.report.figures import PALETTE, new_figure
from pathkit_core.report.page import Section, table
from pathkit_sdk.charts import bar_chart

SLIDE_SCORES = ("Dice", "IoU", "precision", "recall")
N_MASK_SLIDES = 4


def _read_mask(path: Path) -> Any:
    """A mask file as a boolean array (PNG / TIFF / NPY; nonzero = foreground), or None."""
    import numpy as np

    if not path.is_file():
        return None
    try:
        if path.suffix.lower() == ".npy":
            data = np.load(path)
        elif path.suffix.lower() in (".tif", ".tiff"):
            import tifffile

            data = tifffile.imread(path, key=0)
        else:
            from PIL import Image

            data = np.asarray(Image.open(path).convert("L"))
    except Exception:  # noqa: BLE001 - an unreadable mask is shown as missing, not fatal to the report
        return None
    data = np.asarray(data)
    if data.ndim == 3:
        data = data[..., 0] if data.shape[-1] <= 4 else data.argmax(-1)
    return data > 0


def _reference_on_grid(reference: Any, prediction: Any) -> Any:
    """The reference mask on the prediction's cell grid (GeoJSON rasterised, images placed on the
    slide; the metric's own reading), or as its file reads when the prediction has no grid."""
    if not isinstance(reference, dict) or not reference.get("mask"):
        return None
    grid = prediction.get("grid") if isinstance(prediction, dict) else None
    slide = prediction.get("slide") if isinstance(prediction, dict) else None
    if not grid or not slide:
        return _read_mask(Path(reference["mask"]))
    from pathkit_core.contracts import PathkitError
    from pathkit_core.wsi.masks import MaskFrame
    from pathkit_sdk.masks import class_list, reference_mask

    cell = float(grid["cell_px0"])
    mpp = float(slide["mpp"]) if slide.get("mpp") else None
    frame = MaskFrame(int(grid["width"]), int(grid["height"]), cell, cell, None if mpp is None else mpp * cell)
    try:
        mask, _ = reference_mask(reference, frame, (int(slide["width0"]), int(slide["height0"])), mpp,
                                 classes=class_list(reference.get("mask_classes")))
    except PathkitError:  # the metric reports the reason; the report shows the mask as missing
        return None
    return mask


def _thumbnail(run: Any, case_id: str) -> Any:
    """The slide's QC thumbnail (RGB array) through the feature file's manifest path, or None."""
    import numpy as np

    qc = run.features_qc
    if qc is None or "file" not in qc.columns:
        return None
    from pathkit_core.contracts import PathkitError
    from pathkit_core.features.store import read_feature_meta

    for path in qc.filter(qc["case_id"] == case_id)["file"].drop_nulls().to_list():
        try:
            manifest = read_feature_meta(path).get("manifest_path")
        except PathkitError:
            continue
        if manifest:
            thumb = Path(manifest).with_suffix(".qc.png")
            if thumb.is_file():
                from PIL import Image

                return np.asarray(Image.open(thumb).convert("RGB"))
    return None


def scores_section(run: Any) -> Section | None:
    cols, by_id = run.per_case_rows(SLIDE_SCORES)
    preds = run.predictions
    if not preds:
        return None
    rows = []
    for cid, pred in preds.items():
        entry = pred if isinstance(pred, dict) else {}
        rows.append([cid, *(by_id.get(cid, {}).get(c) for c in cols), entry.get("tissue_mm2"),
                     entry.get("foreground_mm2")])
    headers = ["slide", *cols, "tissue mm²", "predicted foreground mm²"]
    body = ""
    if cols:
        fig = bar_chart([r[0] for r in rows], {c: [r[1 + i] for r in rows] for i, c in enumerate(cols[:2])},
                        ylabel="score of the slide's mask", ylim=(0, 1.05))
        body += run.figures.figure("slide_dice_iou", fig, "Dice and IoU of each test slide's predicted mask "
                                   "against its reference mask", [dict(zip(headers, r, strict=True)) for r in rows])
    body += table(headers, rows, table_id="cases", sortable=True, filterable=True, numeric_filters=cols,
                  classes="cases")
    return Section("Per-slide Dice and IoU", body, key="slides", order=100)


def masks_section(run: Any) -> Section | None:
    import numpy as np

    cols, by_id = run.per_case_rows(SLIDE_SCORES)
    refs = run.references()
    chosen = list(run.predictions)
    if "Dice" in cols:
        chosen.sort(key=lambda c: by_id.get(c, {}).get("Dice") if by_id.get(c, {}).get("Dice") is not None else -1)
        chosen = chosen[: N_MASK_SLIDES // 2] + [c for c in chosen[::-1][: N_MASK_SLIDES // 2] if c not in
                                                chosen[: N_MASK_SLIDES // 2]]
    figures = []
    for cid in chosen[:N_MASK_SLIDES]:
        pred = run.predictions.get(cid) or {}
        predicted = _read_mask(run.path / str(pred["mask"])) if isinstance(pred, dict) and pred.get("mask") else None
        reference = _reference_on_grid(refs.get(cid), pred)
        if predicted is None and reference is None:
            continue
        thumb = _thumbnail(run, cid)
        fig, axes = new_figure(9.0, 3.2, ncols=3)
        shape = thumb.shape[:2] if thumb is not None else next(m.shape for m in (predicted, reference)
                                                                if m is not None)
        base = thumb if thumb is not None else np.ones((*shape, 3))
        extent = _mask_extent(pred, shape)
        grid_shape = next((m.shape for m in (predicted, reference) if m is not None), shape)
        agreement = np.zeros((*grid_shape, 4))
        panels = ((axes[0][0], predicted, "predicted", PALETTE[5]), (axes[0][1], reference, "reference", PALETTE[2]))
        for ax, mask, title, colour in panels:
            ax.imshow(base)
            if mask is not None:
                ax.imshow(_tint(mask, colour), extent=extent, interpolation="nearest")
            else:
                ax.text(0.5, 0.5, "no mask file", transform=ax.transAxes, ha="center")
            ax.set_title(f"{title} mask", fontsize="medium")
        ax = axes[0][2]
        ax.imshow(base)
        if predicted is not None and reference is not None and predicted.shape == reference.shape:
            for part, colour in ((predicted & reference, PALETTE[0]), (predicted & ~reference, PALETTE[5]),
                                 (~predicted & reference, PALETTE[2])):
                agreement[part] = (*_rgb(colour), 0.6)
            ax.imshow(agreement, extent=extent, interpolation="nearest")
            ax.set_title("both (blue), only predicted (orange),\nonly reference (green)", fontsize="small")
        else:
            ax.set_title("masks on different grids", fontsize="small")
        for a in axes[0]:
            a.set_xticks([])
            a.set_yticks([])
        score = by_id.get(cid, {})
        text = ", ".join(f"{c} {score[c]:.3f}" for c in cols if score.get(c) is not None)
        fig.suptitle(f"{cid}" + (f" ({text})" if text else ""), fontsize="medium")
        data = {"slide": [cid], "predicted_foreground_cells": [int(predicted.sum()) if predicted is not None else None],
                "reference_foreground_pixels": [int(reference.sum()) if reference is not None else None]}
        figures.append(run.figures.figure(f"masks_{cid}", fig, f"{cid}: predicted (orange) and reference (green) "
                                          "masks" + (" over the slide's QC thumbnail" if thumb is not None else ""),
                                          data))
        overlay = ((pred.get("outputs") or {}).get("overlays") if isinstance(pred, dict) else None)
        if overlay and (run.path / overlay).is_file():  # the task's own class map over the thumbnail
            figures.append(run.figures.image(f"overlay_{cid}", run.path / overlay,
                                             f"{cid}: predicted class map over the slide", max_side=520))
            names = (pred.get("class_names") or []) if isinstance(pred, dict) else []
            if names:
                figures.append(class_legend(names))
    if not figures:
        return None
    return Section("Predicted and reference masks", "<p>The slides with the lowest and highest Dice.</p>" +
                   "".join(figures), key="masks", order=110)


def class_legend(names: list[str]) -> str:
    """The class map's key: each class name beside the colour the overlay draws it in."""
    from html import escape

    from pathkit_tasks.segmentation.overlay import class_colours

    items = "".join(
        f'<span class="legend-item" style="margin-right:1em;white-space:nowrap"><span style="display:inline-block;'
        f'width:0.9em;height:0.9em;vertical-align:middle;margin-right:0.3em;background:rgb{tuple(colour)}">'
        f"</span>{escape(str(name))}</span>"
        for name, colour in zip(names, class_colours(len(names)), strict=True))
    return f'<p class="legend" aria-label="class map colours">class map: {items}</p>'


def _mask_extent(prediction: Any, shape: tuple[int, int]) -> tuple[float, float, float, float]:
    """Where the prediction's cell grid lies over an image of `shape` showing the whole slide: the
    grid can reach past the slide's right and bottom edges (its last cells are whole cells)."""
    grid = prediction.get("grid") if isinstance(prediction, dict) else None
    slide = prediction.get("slide") if isinstance(prediction, dict) else None
    if not grid or not slide or not slide.get("width0") or not slide.get("height0"):
        return (0, shape[1], shape[0], 0)
    cell = float(grid["cell_px0"])
    width = int(grid["width"]) * cell / float(slide["width0"]) * shape[1]
    height = int(grid["height"]) * cell / float(slide["height0"]) * shape[0]
    return (0, width, height, 0)


def _tint(mask: Any, colour: str) -> Any:
    import numpy as np

    rgba = np.zeros((*mask.shape, 4))
    rgba[mask] = (*_rgb(colour), 0.5)
    return rgba


def _rgb(colour: str) -> tuple[float, float, float]:
    colour = colour.lstrip("#")
    return tuple(int(colour[i:i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def composition_section(run: Any) -> Section | None:
    """Stacked bars of each slide's predicted tissue composition (share of the tissue per class)."""
    entries = {cid: p["composition"] for cid, p in run.predictions.items()
               if isinstance(p, dict) and isinstance(p.get("composition"), dict)}
    if not entries:
        return None
    region = "tissue" if all("tissue" in c for c in entries.values()) else next(iter(next(iter(entries.values()))))
    classes = sorted({k for c in entries.values() for k in (c.get(region) or {})})
    slides = list(entries)
    fig, axes = new_figure(8.4, max(2.4, 0.34 * len(slides) + 1.4))
    ax = axes[0][0]
    left = [0.0] * len(slides)
    rows = []
    for i, name in enumerate(classes):
        vals = [float((entries[s].get(region) or {}).get(name, 0.0)) for s in slides]
        ax.barh(range(len(slides)), vals, left=left, color=PALETTE[i % len(PALETTE)], label=name, height=0.7)
        left = [a + b for a, b in zip(left, vals, strict=True)]
        rows += [{"slide": s, "region": region, "class": name, "fraction": v} for s, v in zip(slides, vals,
                                                                                              strict=True)]
    ax.set_yticks(range(len(slides)), slides)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of the slide's {region} area")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="x", alpha=0.3)
    body = run.figures.figure("tissue_composition", fig, f"Predicted tissue composition of each test slide: the "
                              f"share of its {region} area given to each class", rows)
    return Section("Tissue composition", body, key="composition", order=120)


def segmentation_sections(run: Any) -> list[Section]:
    from pathkit_core.report.html import guarded

    found = (guarded(scores_section, run, "Per-slide Dice and IoU", 100),
             guarded(masks_section, run, "Predicted and reference masks", 110),
             guarded(composition_section, run, "Tissue composition", 120))
    return [s for s in found if s is not None]


__all__ = ["segmentation_sections"]
