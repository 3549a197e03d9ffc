"""The training-time estimate of `pathkit run` against the time taken, on a small slides-reports cohort.

Builds a cohort of synthetic slides (512 x 512 px at 1 um/px, two tissue colours) with a
`reports.json` that gives each slide one of four reports (6/2/2 train/val/test), then trains a
small `wsi-caption` (one layer, d_model 64, learning rate 2e-3 as the demo's, selection by
validation BLEU-4) on it with `pathkit run`, its output piped as into a log. Two runs, one after
the other on the same tile features:

- `early-stop`: up to `--epochs` epochs with early stopping (patience `--patience` validations),
  which ends training when BLEU-4 on the validation reports stops improving;
- `fixed`: `--fixed-epochs` epochs with a patience longer than the run (it cannot stop early).

For each it prints the estimate line the run printed after its second epoch (the first is a
warm-up), the time the remaining epochs took (from the run's `history.json`, the seconds each
epoch took) and how they compare: for the fixed run the estimate against the time taken; for
the early-stopped run the upper bound it gave and what its measured pace predicts for the epochs
that did run.

    .venv/bin/python benchmarks/bench_estimate.py [--epochs 100] [--patience 6] [--fixed-epochs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPORTS = (
    "Stomach, endoscopic biopsy;\n  Tubular adenoma with low grade dysplasia",
    "Stomach, endoscopic biopsy;\n  Adenocarcinoma, poorly differentiated",
    "Colon, biopsy;\n  Tubular adenoma with low grade dysplasia",
    "Breast, core biopsy;\n  Invasive carcinoma of no special type, grade II",
)
COLOURS = ((226, 150, 200), (160, 110, 205), (200, 120, 180), (140, 90, 190))
CONFIG = ("[run]\nmax_tiles = 16\n[run.hparams]\nd_model = 64\nd_ff = 128\nnum_heads = 2\nnum_layers = 1\n"
          "max_tokens = 24\nbeam_size = 1\n[run.train]\nmax_epochs = {epochs}\nearly_stop_patience = {patience}\n"
          "lr = 2e-3\nplateau_patience = 3\nbatch_size = 2\neval_batch_size = 4\n")


def build_cohort(root: Path, n: int = 10) -> Path:
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    root.mkdir(parents=True, exist_ok=True)
    parts = ["train"] * 6 + ["val"] * 2 + ["test"] * 2
    layout: dict[str, list[dict[str, str]]] = {"train": [], "val": [], "test": []}
    for k in range(n):
        name = f"case_{k + 1:03d}.tiff"
        write_synthetic_slide(root / name, width=512, height=512, mpp=1.0, seed=k, compression="deflate",
                              tissue=[Blob(0.5, 0.5, 0.42, 0.4, colour=COLOURS[k % 4], texture="noise")])
        layout[parts[k % len(parts)]].append({"id": name, "report": REPORTS[k % 4]})
    (root / "reports.json").write_text(json.dumps(layout, indent=1))
    return root


def run(cohort: Path, work: Path, config: Path) -> tuple[list[str], float]:
    """`pathkit run` with its standard output a pipe; (output lines, wall seconds)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pathkit_core.cli", "run", "--dataset", "slides-reports",
                           "--dataset-root", str(cohort), "--encoder", "tiny-vit", "--generator", "wsi-caption",
                           "--config", str(config), "--workdir", str(work), "--cpu", "--metric", "crqs"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pathkit run failed ({done.returncode}):\n{done.stdout[-4000:]}")
    return done.stdout.splitlines(), wall


def measure(name: str, cohort: Path, work: Path, epochs: int, patience: int) -> dict[str, object]:
    config = work.parent / f"{name}.toml"
    config.write_text(CONFIG.format(epochs=epochs, patience=patience))
    lines, wall = run(cohort, work, config)
    estimate = next((line for line in lines if line.startswith(f"epoch 2/{epochs}:")), "")
    stopped = next((line for line in lines if line.startswith("early stopping after")), "")
    run_dir = next((work / "runs" / "slides-reports" / "tiny-vit" / "wsi-caption").iterdir())
    history = json.loads((run_dir / "checkpoints" / "history.json").read_text())
    seconds = [float(h["seconds"]) for h in history]
    # the estimate's pace: epoch 2's training + validation (every epoch validates here)
    pace = seconds[1]
    taken = sum(seconds[2:])
    return {"run": name, "epochs_run": len(history), "max_epochs": epochs, "patience": patience,
            "estimate_line": estimate, "early_stop_line": stopped,
            "full_estimate_s": pace * (epochs - 2), "estimate_for_epochs_run_s": pace * (len(history) - 2),
            "taken_s": taken, "wall_s": wall, "epoch_seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100, help="max epochs of the early-stopping run")
    parser.add_argument("--patience", type=int, default=6)
    parser.add_argument("--fixed-epochs", type=int, default=30, help="epochs of the run without early stopping")
    parser.add_argument("--keep", type=Path, help="build the cohort and workspace here (kept)")
    args = parser.parse_args(argv)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        cohort = build_cohort(base / "cohort")
        early = measure("early-stop", cohort, base / "work-early", args.epochs, args.patience)
        load.append(os.getloadavg()[0])
        fixed = measure("fixed", cohort, base / "work-fixed", args.fixed_epochs, args.fixed_epochs + 1)
        load.append(os.getloadavg()[0])
    print(f"{os.cpu_count()} cores; 1-minute load average at the start, between the runs and at the end: "
          + ", ".join(f"{x:.1f}" for x in load))
    for r in (early, fixed):
        print(f"\n{r['run']}: {r['epochs_run']} of {r['max_epochs']} epochs run (patience {r['patience']}), "
              f"whole run {r['wall_s']:.1f} s")
        print(f"  printed after epoch 2: {r['estimate_line']}")
        if r["early_stop_line"]:
            print(f"  printed at the end:    {r['early_stop_line']}")
        taken, full, ran = r["taken_s"], r["full_estimate_s"], r["estimate_for_epochs_run_s"]
        print(f"  epochs 3-{r['epochs_run']} took {taken:.1f} s; the estimate for all {r['max_epochs'] - 2} epochs "
              f"left was {full:.1f} s ({full / taken:.2f}x the time taken)")
        print(f"  the measured pace x the {r['epochs_run'] - 2} epochs that ran: {ran:.1f} s "
              f"({ran / taken:.2f}x the time taken)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
