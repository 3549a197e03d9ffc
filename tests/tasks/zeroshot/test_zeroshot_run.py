"""`pathkit run` of the `zero-shot` task end to end on precomputed slide features: the aligned tiny
text tower, MI-Zero top-k over each slide's tiles, the `classification` metric and the baselines;
features outside CONCH v1's image-text space refused with the file. Slow (end to end)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from pathkit_core.contracts import Case, Dataset, Encoder, TileSpec
from pathkit_tasks import TASK_ZERO_SHOT
from tests.core._toy import ComponentPlugin
from tests.tasks.zeroshot._aligned import CLASSES, DIM, aligned_tower

N_PER_SPLIT = {"train": 6, "val": 3, "test": 12}


class ToyZeroShot(Dataset):
    """Slides of 20 tiles: 4 tiles of the slide's class mean, 16 of a background leaning to class 1."""

    name = "toy-zeroshot"
    task = TASK_ZERO_SHOT
    default_metrics = ("classification",)

    def class_names(self):
        return CLASSES

    def splits(self):
        return {split: [f"{split}-{i:02d}" for i in range(n)] for split, n in N_PER_SPLIT.items()}

    def cases(self, split):
        for cid in self.splits()[split]:
            label = CLASSES[int(cid[-2:]) % len(CLASSES)]
            yield Case(case_id=cid, patient_id=cid, target=label, features=(self.root / f"{cid}.safetensors",))


class ToyConch(Encoder):
    name = "toy-conch"
    embed_dim = DIM
    tile_spec = TileSpec(224, 0.5)
    joint_space = "conch-v1"


def _write_cohort(root, space: str, encoder: str = "toy-conch") -> None:
    from pathkit_core.features.store import write_features

    gen = torch.Generator().manual_seed(1)
    means = torch.nn.functional.normalize(torch.randn(len(CLASSES), DIM, generator=gen), dim=1)
    q, _ = torch.linalg.qr(torch.cat([means.T, torch.randn(DIM, 1, generator=gen)], dim=1))
    background = 0.5 * means[1] + 0.5 * q[:, len(CLASSES)]
    for split, n in N_PER_SPLIT.items():
        for i in range(n):
            c = i % len(CLASSES)
            tiles = torch.cat([background + 0.15 * torch.randn(16, DIM, generator=gen),
                               means[c] + 0.15 * torch.randn(4, DIM, generator=gen)])
            write_features(root / f"{split}-{i:02d}.safetensors", tiles, torch.zeros(20, 2, dtype=torch.int32),
                           {"slide_id": f"{split}-{i:02d}", "encoder": encoder, "joint_space": space})
    aligned_tower(root / "conch", means)


def _run(tmp_path, root):
    from pathkit_generators.zeroshot import ConchZeroShot
    from pathkit_metrics.classification import ClassificationMetric

    from pathkit_core.workspace import sha256_file

    tokenizer = root / "conch" / "conch_byte_level_bpe_uncased.json"
    config = tmp_path / "run.toml"
    config.write_text(f'[hparams]\nweights = "{root / "conch" / "model.safetensors"}"\ntokenizer = "{tokenizer}"\n'
                      f'tokenizer_sha256 = "{sha256_file(tokenizer)}"\ntop_k = 4\n')
    return ComponentPlugin(ToyZeroShot, ToyConch, ConchZeroShot, ClassificationMetric), \
        ("run", "-d", "toy-zeroshot", "-e", "toy-conch", "-g", "conch-zero-shot", "--dataset-root", root,
         "--workdir", tmp_path / "ws", "--cpu", "--config", config)


@pytest.mark.slow
def test_zero_shot_runs_end_to_end_and_beats_the_majority_class(fresh_registry, cli, tmp_path):
    import polars as pl

    from pathkit_bench.stats import paired_bootstrap

    root = tmp_path / "cohort"
    _write_cohort(root, "conch-v1")
    plugin, args = _run(tmp_path, root)
    fresh_registry({"toy": plugin})
    result = cli(*args)
    assert result.exit_code == 0, result.stdout + result.stderr
    run_dir = next((tmp_path / "ws" / "runs" / "toy-zeroshot" / "toy-conch" / "conch-zero-shot").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    model = metrics["metrics"]["classification"]
    assert model["accuracy"] >= 0.9 and model["balanced_accuracy"] >= 0.9 and model["AUROC"] > 0.9, model
    assert set(metrics["baselines"]) == {"majority-class", "class-prior"}
    table = pl.read_parquet(run_dir / "per_case.parquet")
    labels = table["target"].to_numpy()
    correct = (table["label"].to_numpy() == labels) if "label" in table.columns else table["correct"].to_numpy()
    boot = paired_bootstrap(np.asarray(correct, float), (labels == 0).astype(float), n_resamples=2000, seed=0)
    assert boot.p_value < 0.01, boot
    report = (run_dir / "report.html").read_text()
    assert all(f'id="section-{key}"' in report for key in ("roc-pr", "confusion", "per-class", "cases"))


@pytest.mark.slow
def test_features_of_an_image_only_encoder_are_refused_with_the_file(fresh_registry, cli, tmp_path):
    root = tmp_path / "cohort"
    _write_cohort(root, "", encoder="uni")  # UNI's features record no image-text space
    plugin, args = _run(tmp_path, root)
    fresh_registry({"toy": plugin})
    result = cli(*args)
    message = (result.stdout + result.stderr).replace("\n", " ")
    assert result.exit_code != 0
    assert "train-00.safetensors: features in no image-text space" in message and "'conch-v1'" in message
    assert "Traceback" not in message
