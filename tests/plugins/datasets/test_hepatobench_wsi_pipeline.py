"""hepatobench-wsi end to end through `pathkit run`: the head fitted on the patches, the slides
segmented window by window, every output written (masks, pyramidal TIFFs at the slide's geometry,
GeoJSON, overlays, composition tables), scored, and rescored from the files by `pathkit score`."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from pathkit_datasets._liver_synthetic import CLASSES
from pathkit_datasets.hepatobench_wsi import HepatoBenchWSI, make_liver_demo


def run(cli, root, workdir, *extra):
    args = ["run", "--dataset", "hepatobench-wsi", "--encoder", "tiny-vit", "--generator", "knn", "--workdir", workdir,
            *(["--dataset-root", root] if root else []), *extra]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    run_dir = next((workdir / "runs" / "hepatobench-wsi" / "tiny-vit" / "knn").iterdir())
    return result.output, run_dir, json.loads((run_dir / "metrics.json").read_text())


def check_outputs(run_dir, slide_ids, size):
    import openslide

    out = run_dir / "segmentation"
    for sid in slide_ids:
        for kind, ext in (("maps", ".npz"), ("masks", ".tif"), ("geojson", ".geojson"), ("overlays", ".png")):
            assert (out / kind / f"{sid}{ext}").is_file(), (kind, sid)
        for kind in ("tumour_masks", "class_maps"):
            with openslide.OpenSlide(str(out / kind / f"{sid}.tiff")) as slide:
                assert slide.properties["openslide.vendor"] == "generic-tiff"
                assert slide.dimensions == size and float(slide.properties["openslide.mpp-x"]) == 0.5
        features = json.loads((out / "geojson" / f"{sid}.geojson").read_text())["features"]
        assert all(f["properties"]["classification"]["name"] == "Tumor" for f in features)
    table = pl.read_parquet(out / "quantification.parquet")
    assert set(table["region"]) == {"tumour", "non_tumour_tissue", "tissue"} and set(table["class"]) == set(CLASSES)
    assert (out / "quantification.csv").is_file()
    return table


def test_a_small_cohort_runs_the_whole_chain(cli, tmp_path):
    root = make_liver_demo(tmp_path / "data", test_seeds=(101,), train_seeds=(1, 2, 3, 4, 5, 6, 7, 8),
                           size=(1536, 1152), patches_per_class=3, patch_um=32.0)
    output, run_dir, metrics = run(cli, root, tmp_path / "work", "--dataset-option", "window_um=64")
    scores = metrics["metrics"]["segmentation"]
    for key in ("Dice", "IoU", "precision", "recall", "F1", "Dice_pooled", "n_empty_reference", "composition_MAE"):
        assert key in scores, key
    assert metrics["baselines"]["all-background"]["segmentation"]["Dice"] == 0.0
    assert metrics["details"]["segmentation"]["region"] == "tissue"
    check_outputs(run_dir, ["LIVER-101"], (1536, 1152))
    prediction = json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[0])["prediction"]
    assert prediction["grid"]["cell_px0"] == 64.0 and prediction["grid"]["span"] == 2  # 50 % overlap
    report = (run_dir / "report.html").read_text()
    assert "Tissue composition" in report and "could not be drawn" not in report
    for figure in ("slide_dice_iou", "masks_LIVER-101", "tissue_composition"):
        assert (run_dir / "figures" / f"{figure}.png").stat().st_size > 0, figure
    # the written masks scored from the files alone, against the PNG ground truth (its finer grid)
    rescored = cli("score", "-m", "segmentation", "-p", run_dir / "segmentation" / "masks", "-r", root / "masks",
                   "--json")
    assert rescored.exit_code == 0, rescored.output
    assert 0.0 <= json.loads(rescored.stdout)["segmentation"]["Dice"] <= 1.0
    # a rerun reuses every stage
    again, _, _ = run(cli, root, tmp_path / "work", "--dataset-option", "window_um=64")
    assert "finished; reusing its results" in again


def test_a_generator_that_is_no_patch_head_is_refused(cli, tmp_path):
    result = cli("run", "--dataset", "hepatobench-wsi", "--dataset-root", tmp_path, "--encoder", "tiny-vit",
                 "--generator", "wsi-caption", "--workdir", tmp_path / "w")
    assert result.exit_code != 0 and "nor patch-classification" in result.output


@pytest.mark.slow
def test_the_demo_finds_the_known_tumour_and_tissue_areas(cli, tmp_path):
    """The synthetic demo (three 6144 x 4608 slides at 0.5 um/px, tiny-vit + kNN): Dice against the
    known tumour polygons above 0.85, each class's share of the tissue within 0.06 of the truth."""
    workdir = tmp_path / "work"
    _, run_dir, metrics = run(cli, None, workdir)
    scores = metrics["metrics"]["segmentation"]
    assert scores["Dice"] > 0.85 and scores["Dice_pooled"] > 0.85 and scores["recall"] > 0.9
    root = workdir / "datasets" / "hepatobench-wsi"
    ids = [c.case_id for c in HepatoBenchWSI(root, workdir=workdir).cases("test")]
    table = check_outputs(run_dir, ids, (6144, 4608))
    for sid in ids:
        truth = json.loads((root / "truth" / f"{sid}.json").read_text())["areas_mm2"]
        total = sum(truth.values())
        rows = table.filter((pl.col("slide_id") == sid) & (pl.col("region") == "tissue"))
        assert rows["region_mm2"][0] == pytest.approx(total, rel=0.03)
        for name in CLASSES:
            share = rows.filter(pl.col("class") == name)["area_mm2"][0] / total
            assert abs(share - truth[name] / total) < 0.06, (sid, name)
    # the written GeoJSON against the known polygons, from the files alone, on a 16 px grid
    geo = cli("score", "-m", "segmentation", "-p", run_dir / "segmentation" / "geojson", "-r", root / "annotations",
              "--option", "downsample=16", "--json")
    assert geo.exit_code == 0, geo.output
    assert json.loads(geo.stdout)["segmentation"]["Dice"] > 0.85
    assert np.isfinite(scores["composition_MAE"])


def test_hepatobench_and_hepatobench_wsi_share_a_workspace(cli, tmp_path):
    """Both draw a split of a patch set named hepatobench: each cohort keeps its own split file,
    so running one never breaks the other (before, the second refused the first's split file)."""
    workdir = tmp_path / "work"
    liver = make_liver_demo(tmp_path / "liver", test_seeds=(101,), train_seeds=(1, 2, 3, 4, 5, 6, 7, 8),
                            size=(1536, 1152), patches_per_class=2, patch_um=24.0)
    first = cli("run", "--dataset", "hepatobench", "--workdir", workdir)
    assert first.exit_code == 0, first.output
    run(cli, liver, workdir)
    again = cli("run", "--dataset", "hepatobench", "--workdir", workdir)
    assert again.exit_code == 0, again.output
    assert "this cell is finished" in again.output
    assert len(list((workdir / "splits" / "hepatobench").iterdir())) == 2
