"""A small two-task suite over one folder of synthetic slides (two slides-csv tables that share every
slide but label and split them differently), run as CI runs it: shard 1/2, shard 2/2, then whole."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

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
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

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


def classification_run(run_dir: Path, probs, labels, ids=None, *, encoder: str = "", generator: str = "g",
                       seed: int = 0) -> Path:
    """A classification run folder as the pipeline writes it (metrics.json, per_case.parquet,
    test_cases.jsonl), scored by the real classification metric; no training."""
    from pathkit_core.contracts import Case
    from pathkit_core.evaluation.runner import score, write_results
    from pathkit_core.run.score import write_test_cases

    ids = ids or [f"C{i:03d}" for i in range(len(labels))]
    probs = np.asarray(probs, dtype=float)
    probs = probs / probs.sum(1, keepdims=True)  # scores as class probabilities (the metric refuses others)
    preds = {i: {"label": int(np.argmax(p)), "probabilities": [float(x) for x in p]}
             for i, p in zip(ids, probs, strict=True)}
    refs = {i: int(y) for i, y in zip(ids, labels, strict=True)}
    result = score(["classification"], preds, refs, ids=ids, context={"options": {"n_resamples": 0}})
    run_dir.mkdir(parents=True)
    write_test_cases(run_dir / "test_cases.jsonl", [Case(i, i, refs[i]) for i in ids], refs)
    write_results(result, run_dir, extra={"run": {"dataset": "x", "encoder": encoder or run_dir.name,
                                                  "generator": generator, "seed": seed},
                                          "task": "slide-classification"})
    return run_dir


def synthetic_suite(root: Path, n_cases: int = 120, seeds: tuple[int, ...] = (0, 1, 2)) -> Path:
    """A suite folder written without training: 2 tasks x 3 encoders x 2 generators x 3 seeds of
    classification cells whose skill is planted ("strong" far ahead on task "easy"; "tiny" and "small"
    alike; each model's errors on the cases mostly its own, seeds adding a little noise), their
    leaderboard, cells and run reports."""
    from pathkit_bench.suite.config import parse_suite
    from pathkit_bench.suite.runner import CellResult, write_leaderboard
    from pathkit_core.report.html import write_run_report

    config = parse_suite({"name": "planted", "encoders": ["strong", "small", "tiny"], "generators": ["g1", "g2"],
                          "seeds": list(seeds), "resamples": 400,
                          "tasks": [{"name": "easy", "dataset": "x1", "compare": "AUROC"},
                                    {"name": "hard", "dataset": "x2", "compare": "accuracy"}]}, root / "suite.toml")
    skill = {"strong": 3.0, "small": 0.8, "tiny": 0.7}
    results = []
    models = sorted({(c.task.name, c.encoder, c.generator) for c in config.cells()})
    for k, cell in enumerate(config.cells()):
        rng = np.random.default_rng(1000 + k)
        # each model's own errors on the cases, the same for every seed, and a little per-seed noise
        own = np.random.default_rng(500 + models.index((cell.task.name, cell.encoder, cell.generator)))
        task_rng = np.random.default_rng(7 if cell.task.name == "easy" else 8)
        y = (task_rng.random(n_cases) < 0.5).astype(int)
        boost = skill[cell.encoder] * (1.0 if cell.task.name == "easy" else 0.4)
        noise = own.normal(0, 1, n_cases) + rng.normal(0, 0.1, n_cases)
        p = 1 / (1 + np.exp(-(boost * (2 * y - 1) + noise)))
        run_dir = root / "runs" / cell.task.name / cell.encoder / cell.generator / f"seed{cell.seed}"
        classification_run(run_dir, np.stack([1 - p, p], 1), y, encoder=cell.encoder, generator=cell.generator,
                           seed=cell.seed)
        if cell.seed == 0 and cell.task.name == "easy":  # a few run reports to link (each takes a while)
            write_run_report(run_dir)
        from pathkit_core.report.run_folder import RunFolder

        results.append(CellResult(cell, run_dir, RunFolder(run_dir).summary))
    folder = root / "suites" / "planted"
    write_leaderboard(config, results, folder)
    return folder
