"""A small two-task suite over one folder of synthetic slides (two slides-csv tables that share every
slide but label and split them differently), run as CI runs it: shard 1/2, shard 2/2, then whole."""

from __future__ import annotations

import csv
from pathlib import Path

PINK, PURPLE = (226, 150, 200), (160, 110, 205)
N_SLIDES = 12

SUITE = """
name = "shared-slides"
encoders = ["tiny-vit", "tiny-vit-wide"]
generators = ["gma-mil"]
seeds = [0, 1]
resamples = 300

[run]
max_tiles = 16
export_attention = false

[run.train]
max_epochs = 2
progress = false

[[tasks]]
name = "colour"
dataset = "slides-csv"
dataset_root = "cohort"
generators = ["gma-mil", "abmil"]
dataset_options = {table = "colour.csv"}

[[tasks]]
name = "parity"
dataset = "slides-csv"
dataset_root = "cohort"
compare = "accuracy"
dataset_options = {table = "parity.csv"}
"""


def write_cohort(path: Path, slides: list[Path], label, split) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, ["slide_path", "patient_id", "label", "split", "mpp"])
        writer.writeheader()
        for k, path in enumerate(slides):
            writer.writerow({"slide_path": str(path), "patient_id": f"P{k:02d}", "label": label(k),
                             "split": split(k), "mpp": "1.0"})


def build_slides(root: Path) -> list[Path]:
    from pathkit_core.wsi.synthetic import Blob, write_synthetic_slide

    out = []
    for k in range(N_SLIDES):
        colour = PINK if k % 2 == 0 else PURPLE
        path = root / "slides" / f"S{k:02d}.tiff"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_synthetic_slide(path, width=512, height=512, mpp=1.0, seed=k, compression="deflate",
                              tissue=[Blob(0.5, 0.5, 0.42, 0.4, colour=colour, texture="noise")])
        out.append(path)
    return out


def write_suite(root: Path) -> Path:
    slides = build_slides(root)
    # colour: the label is the colour; test slides 8-11
    write_cohort(root / "cohort" / "colour.csv", slides, lambda k: "pink" if k % 2 == 0 else "purple",
                 lambda k: "train" if k < 6 else "val" if k < 8 else "test")
    # parity: another labelling of the same slides, tested on slides 0-3
    write_cohort(root / "cohort" / "parity.csv", slides, lambda k: "low" if k % 4 < 2 else "high",
                 lambda k: "test" if k < 4 else "val" if k in (4, 6) else "train")
    path = root / "suite.toml"
    path.write_text(SUITE)
    return path


def run_suite(root: Path) -> dict:
    """Write the slides and suite and run `pathkit bench` three times: shard 1/2, shard 2/2, all."""
    from typer.testing import CliRunner

    from pathkit_core.cli import build_app

    config = write_suite(root)
    work = root / "work"
    outputs = []
    for extra in (["--shard", "1/2"], ["--shard", "2/2"], []):
        result = CliRunner().invoke(build_app(), ["bench", "--config", str(config), "--workdir", str(work), "--cpu",
                                                  *extra], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    return {"root": root, "config": config, "work": work, "folder": work / "suites" / "shared-slides",
            "outputs": outputs}
