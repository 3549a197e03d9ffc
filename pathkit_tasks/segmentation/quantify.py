"""Tissue composition in regions of a slide: area (mm2) and fraction of each class, from a class map.

A cell counts wholly for its argmax class (what the class map shows a pathologist); regions are
boolean cell masks: the tumour region (the tumour mask with the holes it encloses filled, so the
necrosis, fibrosis and inflammation inside a nodule count as the nodule's, as a pathologist's
outline would), the non-tumour tissue and all tissue. Fractions are shares of the region's
classified area; tissue that no window covered is counted in the region's area only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

REGIONS = ("tumour", "non_tumour_tissue", "tissue")


def composition(labels: np.ndarray, region: np.ndarray, class_names: Sequence[str], cell_area_mm2: float,
                ) -> dict[str, Any]:
    """{"area_mm2", "classified_mm2", "classes": {name: {"area_mm2", "fraction"}}} of `region`.

    `labels` are the class map's values (0 none, 1 + class index)."""
    import numpy as np

    inside = labels[np.asarray(region, dtype=bool)]
    counts = np.bincount(inside.astype(np.int64), minlength=len(class_names) + 1)
    classified = int(counts[1:].sum())
    classes = {name: {"area_mm2": float(counts[i + 1] * cell_area_mm2),
                      "fraction": float(counts[i + 1] / classified) if classified else 0.0}
               for i, name in enumerate(class_names)}
    return {"area_mm2": float(inside.size * cell_area_mm2), "classified_mm2": float(classified * cell_area_mm2),
            "classes": classes}


def tumour_region(mask: np.ndarray) -> np.ndarray:
    """The region a tumour mask outlines: the mask with every hole it encloses filled."""
    import numpy as np
    from scipy import ndimage as ndi

    return ndi.binary_fill_holes(np.asarray(mask, dtype=bool))


def slide_composition(labels: np.ndarray, tumour: np.ndarray, tissue: np.ndarray, class_names: Sequence[str],
                      cell_area_mm2: float) -> dict[str, dict[str, Any]]:
    """Composition within the tumour region (`tumour_region` of the mask), the non-tumour tissue
    and all tissue."""
    tumour = tumour_region(tumour) & tissue
    regions = {"tumour": tumour, "non_tumour_tissue": tissue & ~tumour, "tissue": tissue}
    return {name: composition(labels, mask, class_names, cell_area_mm2) for name, mask in regions.items()}


def composition_rows(slide_id: str, found: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Long-format rows (slide_id, region, class, area_mm2, fraction, region_mm2) of one slide."""
    rows = []
    for region, facts in found.items():
        for name, value in facts["classes"].items():
            rows.append({"slide_id": slide_id, "region": region, "class": name, "area_mm2": value["area_mm2"],
                         "fraction": value["fraction"], "region_mm2": facts["area_mm2"],
                         "classified_mm2": facts["classified_mm2"]})
    return rows


def composition_table(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    import polars as pl

    schema = {"slide_id": pl.Utf8, "region": pl.Utf8, "class": pl.Utf8, "area_mm2": pl.Float64,
              "fraction": pl.Float64, "region_mm2": pl.Float64, "classified_mm2": pl.Float64}
    return pl.DataFrame(list(rows), schema=schema)
