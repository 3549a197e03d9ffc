"""A cohort table's `slide_reader` and `tissue_geojson` columns: the reader a slide is opened with
and the user-edited mask it is tiled from, per slide, both in the tiling identity; an edited mask in
the column re-tiles that slide only (docs/wsi.md, "Per-slide tiling inputs")."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pathkit_core.contracts import Case, PathkitError
from pathkit_core.wsi.manifest import read_manifest_meta
from pathkit_core.wsi.tiling import TilingParams, tile_slides

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")

PARAMS = TilingParams(target_mpp=1.0, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=512)


@pytest.fixture(scope="module")
def slides(tmp_path_factory) -> dict[str, Path]:
    """Two small slides (1536 x 1024 px at 0.5 um/px) with a blob of tissue each."""
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    root = tmp_path_factory.mktemp("cohort_slides")
    return {name: write_synthetic_slide(root / f"{name}.tiff", width=1536, height=1024, mpp=0.5, seed=seed,
                                        tissue=[Blob(0.5, 0.5, 0.35, 0.35, texture="noise")])
            for seed, name in enumerate(("tissue", "pen"))}


def _square(path: Path, side: int) -> Path:
    ring = [[0, 0], [side, 0], [side, side], [0, side], [0, 0]]
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring]}, "properties": {}}]}))
    return path


def _cases(root: Path, rows: list[dict]) -> list[Case]:
    """The cases of a cohort table, as the cohort datasets (`slides-csv`) make them."""
    from pathkit_sdk.cohort import cohort_rows, group_rows, read_table

    root.mkdir(parents=True, exist_ok=True)
    table = root / "cohort.csv"
    with open(table, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    found = cohort_rows(read_table(table), file_key="slide_path", value_key="label")
    return [Case(g.case_id, g.patient_id, g.value, slides=g.files, meta=g.meta())
            for g in group_rows(found, "slide", table)]


def _tile(cases: list[Case], out: Path) -> dict[str, str]:
    from pathkit_core.run.features import slide_tiling_inputs

    slides = [s for c in cases for s in c.slides]
    results = tile_slides(slides, out, PARAMS, progress=False, overwrite=True, **slide_tiling_inputs(cases))
    return {r.slide_id: r.status for r in results}


def test_the_columns_force_the_reader_and_the_mask_and_an_edit_re_tiles_that_slide_only(slides, tmp_path):
    from pathkit_core.run.identity import case_identity

    root = tmp_path / "cohort"
    masks = root / "masks"
    masks.mkdir(parents=True)
    _square(masks / "pen.geojson", 400)
    rows = [{"slide_path": str(slides["tissue"]), "label": "a", "slide_reader": "ome-tiff",
             "tissue_geojson": ""},
            {"slide_path": str(slides["pen"]), "label": "b", "slide_reader": "",
             "tissue_geojson": "masks/pen.geojson"}]  # relative to the table's folder
    cases = _cases(root, rows)
    assert cases[0].meta["slide_reader"] == ("ome-tiff",) and "tissue_geojson" not in cases[0].meta
    assert cases[1].meta["tissue_geojson"] == (str(masks / "pen.geojson"),)
    out = tmp_path / "tiles"
    assert _tile(cases, out) == {"tissue": "ok", "pen": "ok"}
    tissue, pen = read_manifest_meta(out / "tissue.parquet"), read_manifest_meta(out / "pen.parquet")
    assert tissue["slide_reader"] == "ome-tiff"  # OpenSlide would have opened it by default
    assert tissue["params_hash"] == TilingParams(**{**PARAMS.as_dict(), "slide_reader": "ome-tiff"}).params_hash()
    assert pen["slide_reader"] == "openslide" and pen["params_hash"] == PARAMS.params_hash()
    assert pen["segmentation"]["segmenter"] == "geojson"
    assert tissue["segmentation"]["segmenter"] == PARAMS.segmenter
    small = pen["n_tiles"]
    assert _tile(cases, out) == {"tissue": "skipped", "pen": "skipped"}

    before = case_identity(cases[1])
    _square(masks / "pen.geojson", 900)  # the pathologist draws the mask larger
    assert case_identity(cases[1]) != before  # the run identity follows the mask's content
    assert _tile(cases, out) == {"tissue": "skipped", "pen": "ok"}
    assert read_manifest_meta(out / "pen.parquet")["n_tiles"] > small

    rows[0]["slide_reader"] = ""  # back to automatic choice: that slide only is tiled again
    assert _tile(_cases(root, rows), out) == {"tissue": "ok", "pen": "skipped"}
    assert read_manifest_meta(out / "tissue.parquet")["slide_reader"] == "openslide"


def test_a_bad_cell_is_one_line_naming_the_table_row(tmp_path):
    slide = tmp_path / "s.svs"
    slide.write_bytes(b"")
    with pytest.raises(PathkitError, match=r"cohort.csv: line 2: slide_reader: .*'ome-tif'.*ome-tiff"):
        _cases(tmp_path / "a", [{"slide_path": str(slide), "label": "x", "slide_reader": "ome-tif"}])
    with pytest.raises(PathkitError, match=r"cohort.csv: line 2: tissue_geojson .*gone.geojson is not a file"):
        _cases(tmp_path / "b", [{"slide_path": str(slide), "label": "x", "tissue_geojson": "gone.geojson"}])


def test_slides_csv_carries_the_columns_into_each_cases_meta(tmp_path):
    from pathkit_datasets.slides_csv import SlidesCSV

    root = tmp_path / "cohort"
    (root / "slides").mkdir(parents=True)
    _square(root / "edited.geojson", 100)
    rows = []
    for k in range(12):
        (root / "slides" / f"S{k}.svs").write_bytes(b"")
        rows.append({"slide_path": f"slides/S{k}.svs", "label": "ab"[k % 2],
                     "split": "test" if k < 2 else "val" if k < 4 else "train",
                     "slide_reader": "ome-tiff" if k == 0 else "",
                     "tissue_geojson": "edited.geojson" if k == 1 else ""})
    _cases(root, rows)  # writes cohort.csv
    ds = SlidesCSV(root, workdir=str(tmp_path / "work"))
    ds.validate()
    first, second = list(ds.cases("test"))
    assert first.meta["slide_reader"] == ("ome-tiff",) and "tissue_geojson" not in first.meta
    assert second.meta["tissue_geojson"] == (str(root / "edited.geojson"),) and "slide_reader" not in second.meta
    assert "slide_reader" not in next(ds.cases("train")).meta  # an empty cell: automatic choice
