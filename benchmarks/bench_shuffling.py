"""Shuffling: the effect of training on the cases in one fixed order (PathBench) or reshuffled every epoch (pathkit).

PathBench's report data modules never shuffle (`shuffle=False`, and Lightning's distributed
sampler keeps that order); pathkit's trainer reshuffles the training cases every epoch by default
(`TrainConfig.shuffle`, seeded by seed + epoch), as GOLDMARK's data loader does. This script runs
the embedded demo cell (demo-reports, tiny-vit, wsi-caption; `pathkit run` with no arguments) with
`shuffle = true` and `shuffle = false`, alternating, for six seeds in one shared workspace (the
slides, tiles and features are made once), and prints per seed the best epoch, test BLEU-4,
CRQS and the fraction of distinct test reports, then the mean difference (shuffled - fixed order).

    .venv/bin/python benchmarks/bench_shuffling.py [--seeds 0 1 2 3 4 5] [--workdir /tmp/pathkit-shuffle]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The embedded demo's cell (pathkit_core's DEMO_RUN), written out so that one training option can change.
DEMO_TOML = """[run]
dataset = "demo-reports"
encoder = "tiny-vit"
generator = "wsi-caption"
metrics = ["nlg", "crqs"]
max_tiles = 64
seed = {seed}

[run.hparams]
d_model = 128
d_ff = 256
num_heads = 4
num_layers = 1
drop_prob_lm = 0.1

[run.train]
max_epochs = 25
lr = 2e-3
batch_size = 4
eval_batch_size = 16
early_stop_patience = 6
plateau_patience = 3
shuffle = {shuffle}
"""


def _run(pathkit: Path, workdir: Path, seed: int, shuffle: bool) -> dict[str, float]:
    config = workdir / f"shuffle-{str(shuffle).lower()}-seed{seed}.toml"
    config.write_text(DEMO_TOML.format(seed=seed, shuffle=str(shuffle).lower()))
    started = time.perf_counter()
    proc = subprocess.run([str(pathkit), "run", "--config", str(config), "--workdir", str(workdir), "--cpu"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"pathkit run failed for seed {seed}, shuffle {shuffle}:\n"
                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    for provenance in sorted(workdir.glob("runs/**/provenance.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        spec = json.loads(provenance.read_text())["config"]
        if spec["seed"] == seed and spec["train"].get("shuffle", True) is shuffle:
            metrics = json.loads((provenance.parent / "metrics.json").read_text())
            fit = json.loads((provenance.parent / "checkpoints" / "last.json").read_text())["trainer_state"]
            return {"best_epoch": float(fit["best_epoch"]), "epochs": float(fit["epoch"]),
                    "BLEU-4": metrics["metrics"]["nlg"]["BLEU-4"], "CRQS": metrics["metrics"]["crqs"]["CRQS"],
                    "distinct": float(metrics.get("distinct_prediction_fraction", float("nan"))),
                    "seconds": time.perf_counter() - started}
    sys.exit(f"no run folder found for seed {seed}, shuffle {shuffle} in {workdir}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    pathkit = Path(sys.executable).with_name("pathkit")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="pathkit-shuffle-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        for shuffle in ((True, False) if seed % 2 == 0 else (False, True)):  # alternate which runs first
            rows.append((seed, shuffle, _run(pathkit, workdir, seed, shuffle)))
    keys = ("best_epoch", "epochs", "BLEU-4", "CRQS", "distinct", "seconds")
    print("seed | shuffle | " + " | ".join(keys))
    print(" | ".join("---" for _ in range(len(keys) + 2)))
    for seed, shuffle, result in sorted(rows, key=lambda r: (r[0], not r[1])):
        print(f"{seed} | {str(shuffle).lower()} | " + " | ".join(f"{result[k]:.3f}" for k in keys))
    for key in keys[:-1]:
        on = [r[key] for _, s, r in rows if s]
        off = [r[key] for _, s, r in rows if not s]
        print(f"mean {key}: shuffled {sum(on) / len(on):.3f}, fixed order {sum(off) / len(off):.3f}, "
              f"difference {sum(on) / len(on) - sum(off) / len(off):+.3f}")
    print(f"workspace: {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
