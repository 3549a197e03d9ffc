"""A researcher's own cohort through `pathkit run`, as the user guide shows it: a folder of slides (the
real CMU-1-Small-Region and synthetic ones) with a CSV of slide, patient, label, split, mpp
(slides-csv), and numbered slides with a reports JSON (slides-reports). Small slides, few epochs."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest

from pathkit_core.wsi.tiling import read_tiling_status

PINK, PURPLE = (226, 150, 200), (160, 110, 205)


def synthetic(path: Path, colour: tuple[int, int, int], seed: int, *, mpp: float | None = 1.0) -> Path:
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    return write_synthetic_slide(path, width=512, height=512, mpp=mpp, seed=seed, compression="deflate",
                                 tissue=[Blob(0.5, 0.5, 0.42, 0.4, colour=colour, texture="noise")])


def flat(output: str) -> str:
    """CLI output with its line wrapping undone."""
    return " ".join(output.split())


def write_rows(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def slide_cohort(tmp_path, realdata) -> Path:
    """<root>/cohort.csv over <root>/slides/: CMU-1-Small-Region (its own 0.499 mpp, no mpp cell)
    and eleven synthetic slides (mpp column 1.0; one slide per patient except P01, who has two)."""
    root = tmp_path / "my-cohort"
    (root / "slides").mkdir(parents=True)
    shutil.copy(realdata / "slides" / "CMU-1-Small-Region.svs", root / "slides" / "CMU-1-Small-Region.svs")
    rows = [{"slide_path": "slides/CMU-1-Small-Region.svs", "patient_id": "P00", "label": "MSI", "split": "train",
             "mpp": ""}]
    plan = [("P01", "MSS", "train"), ("P01", "MSS", "train"), ("P02", "MSI", "train"), ("P03", "MSS", "train"),
            ("P04", "MSI", "val"), ("P05", "MSS", "val"), ("P06", "MSI", "test"), ("P07", "MSS", "test"),
            ("P08", "MSI", "test"), ("P09", "MSS", "train"), ("P10", "MSI", "train")]
    for k, (patient, label, part) in enumerate(plan):
        name = f"slides/{patient}-{k}.tiff"
        synthetic(root / name, PINK if label == "MSI" else PURPLE, seed=k, mpp=None if k == 3 else 1.0)
        rows.append({"slide_path": name, "patient_id": patient, "label": label, "split": part, "mpp": "1.0"})
    write_rows(root / "cohort.csv", rows)
    return root


def test_slides_csv_runs_with_the_users_split_and_reports_auroc_with_its_interval(cli, slide_cohort, tmp_path):
    work = tmp_path / "work"
    result = cli("run", "--dataset", "slides-csv", "--dataset-root", slide_cohort, "--encoder", "tiny-vit",
                 "--generator", "gma-mil", "--max-epochs", "2", "--workdir", work, "--cpu")
    assert result.exit_code == 0, result.output
    # realised: P01 has two slides, so 6/2/3 patients hold 7/2/3 cases
    assert ("split: given: the split column of cohort.csv; realised train/val/test 6/2/3 patients (55/18/27%), "
            "7/2/3 cases (58/17/25%); no patient in two parts") in flat(result.output)
    assert "AUROC" in result.output and "baseline:" in result.output and "majority" in result.output
    run_dir = next((work / "runs" / "slides-csv" / "tiny-vit" / "gma-mil").iterdir())
    rows = list(csv.DictReader((slide_cohort / "cohort.csv").open()))
    test_rows = [Path(r["slide_path"]).stem for r in rows if r["split"] == "test"]
    predicted = [json.loads(line)["id"] for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert predicted == test_rows  # exactly the CSV's test rows, in table order
    metrics = json.loads((run_dir / "metrics.json").read_text())
    scores = metrics["metrics"]["classification"]
    assert {"AUROC", "AUROC_ci_low", "AUROC_ci_high"} <= set(scores)
    low, high = scores["AUROC_ci_low"], scores["AUROC_ci_high"]
    # 3 test cases: a bootstrap that can vary gives an interval around the score; one that cannot
    # (every resample ranks alike) is "not estimable", never [x, x]; either way the set is flagged small
    if math.isnan(low):
        assert math.isnan(high) and "not estimable (n=3)" in (run_dir / "report.html").read_text()
    else:
        assert low <= scores["AUROC"] <= high and low < high
    assert metrics["details"]["classification"]["sample"]["small"]
    assert "small test set: 3 test case(s) (fewer than 20)" in flat(result.output)
    assert metrics["split"]["source"] == "given" and metrics["split"]["class_names"] == ["MSI", "MSS"]
    assert "Split" in (run_dir / "report.html").read_text()
    # the mpp column reached tiling (the slide without a resolution tag was tiled at its column value)
    manifest = read_tiling_status(work / "tiles" / "128px_1mpp")
    assert manifest["P03-3"]["status"] == "ok" and manifest["CMU-1-Small-Region"]["status"] == "ok"


def test_a_slide_without_resolution_names_the_option_of_the_command(cli, tmp_path):
    """Without its mpp cell, the slide with no resolution stops the run before any tiling, and the
    error names the row, the table's mpp column and the option that fit `pathkit run --dataset
    slides-csv` (and only the tiling options for `pathkit tile`)."""
    root = tmp_path / "c"
    (root / "s").mkdir(parents=True)
    rows = []
    for k in range(6):
        synthetic(root / "s" / f"x{k}.tiff", PINK if k % 2 else PURPLE, seed=k, mpp=None if k == 0 else 1.0)
        rows.append({"slide_path": f"s/x{k}.tiff", "label": str(k % 2), "split": ("train", "val", "test")[k // 2]})
    write_rows(root / "cohort.csv", rows)
    result = cli("run", "--dataset", "slides-csv", "--dataset-root", root, "--encoder", "tiny-vit", "--generator",
                 "gma-mil", "--max-epochs", "1", "--workdir", tmp_path / "w", "--cpu")
    assert result.exit_code == 2
    output = flat(result.output)
    assert (f"{root / 'cohort.csv'}: 1 slide(s) have no usable resolution (mpp): line 2 (x0.tiff): no resolution "
            "(mpp) in the slide's metadata. Give it in an `mpp` column in the table (one value per row), or for "
            "every slide with --dataset-option mpp=MICRONS") in output
    assert "--mpp-csv" not in output and "tiling" not in output
    assert not (tmp_path / "w" / "tiles").exists()  # raised before any slide was tiled
    # with an mpp column, the error names that column
    write_rows(root / "cohort.csv", [{**r, "mpp": "" if k == 0 else "1.0"} for k, r in enumerate(rows)])
    result = cli("run", "--dataset", "slides-csv", "--dataset-root", root, "--encoder", "tiny-vit", "--generator",
                 "gma-mil", "--max-epochs", "1", "--workdir", tmp_path / "w", "--cpu")
    assert result.exit_code == 2 and "Give it in the table's `mpp` column for those rows" in flat(result.output)
    assert cli("tile", root / "s" / "x0.tiff", "--out", tmp_path / "t").exit_code != 0
    reason = read_tiling_status(tmp_path / "t")["x0"]["reason"]
    assert reason.endswith("supply it with --slide-mpp MPP (one slide) or --mpp-csv FILE (columns slide,mpp)")


def test_slides_reports_keeps_the_users_split_of_numbered_slides_and_scores_a_trained_generator(cli, tmp_path):
    root = tmp_path / "reports-cohort"
    root.mkdir()
    reports = ("Stomach, biopsy;\n  Tubular adenoma with low grade dysplasia",
               "Stomach, biopsy;\n  Adenocarcinoma, poorly differentiated")
    ids = [f"case_{k:03d}" for k in range(1, 11)]
    split = dict(zip(ids, ["train"] * 6 + ["val"] * 2 + ["test"] * 2, strict=True))
    layout: dict[str, list] = {"train": [], "val": [], "test": []}
    for k, case_id in enumerate(ids):
        synthetic(root / f"{case_id}.tiff", (PINK, PURPLE)[k % 2], seed=k)
        layout[split[case_id]].append({"id": f"{case_id}.tiff", "report": reports[k % 2]})
    (root / "reports.json").write_text(json.dumps(layout, indent=1))
    config = tmp_path / "tiny.toml"
    # a one-layer WSI-Caption decoding greedily up to 24 tokens; CRQS scores in a second, where
    # nlg's METEOR starts a Java process per scoring (the per-epoch selection is nlg's BLEU-4)
    config.write_text("[run]\nmax_tiles = 16\n[run.hparams]\nd_model = 32\nd_ff = 64\nnum_heads = 2\n"
                      "num_layers = 1\nmax_tokens = 24\nbeam_size = 1\n[run.train]\nmax_epochs = 1\n"
                      "batch_size = 2\neval_batch_size = 4\n")
    work = tmp_path / "work"
    result = cli("run", "--dataset", "slides-reports", "--dataset-root", root, "--encoder", "tiny-vit",
                 "--generator", "wsi-caption", "--config", config, "--workdir", work, "--cpu", "--metric", "crqs")
    assert result.exit_code == 0, result.output
    assert "split: given: the train/val/test keys of reports.json; realised train/val/test 6/2/2 " in flat(
        result.output)
    run_dir = next((work / "runs" / "slides-reports" / "tiny-vit" / "wsi-caption").iterdir())
    predicted = [json.loads(line)["id"] for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert predicted == ["case_009", "case_010"]  # the user's test part, not a drawn one
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert "CRQS" in metrics["metrics"]["crqs"] and metrics["n_test_cases"] == 2
    assert "most-frequent-report" in metrics["baselines"]
    assert metrics["split"]["counts"] == {"train": 6, "val": 2, "test": 2}
    assert metrics["split"]["patients"] == {"train": 6, "val": 2, "test": 2}  # ten patients, not one
    assert (run_dir / "checkpoints" / "best.safetensors").exists()
