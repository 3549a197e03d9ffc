"""`pathkit run` orchestration with small test-only plugins: stages, run folder, provenance, resume."""

from __future__ import annotations

import json

import pytest

from pathkit_core.contracts import Case, Dataset, Generator
from pathkit_tasks import TASK_SLIDE_CLASSIFICATION
from tests.core._toy import ComponentPlugin, Precomputed, ToyAccuracy, mean_feature_model, write_toy_features

N_TILES, DIM = 12, Precomputed.embed_dim


class ToyCohort(Dataset):
    """Precomputed features; the label is the sign of feature 0 of every tile."""

    name = "toy-cohort"
    task = TASK_SLIDE_CLASSIFICATION
    default_metrics = ("toy-accuracy",)
    selection_metric = "toy-accuracy:accuracy"

    def _ids(self):
        return [f"case{i:02d}" for i in range(30)]

    def class_names(self):
        return ("even", "odd")

    def splits(self):
        ids = self._ids()
        return {"train": ids[:18], "val": ids[18:24], "test": ids[24:]}

    def cases(self, split):
        for cid in self.splits()[split]:
            label = ("even", "odd")[int(cid[-2:]) % 2]
            yield Case(case_id=cid, patient_id=cid, target=label,
                       features=(self.root / f"{cid}.safetensors",))

    def validate(self):
        from pathkit_core.contracts import PathkitError

        if self.root is None or not self.root.is_dir():
            raise PathkitError(f"toy-cohort: {self.root} is not a folder")

    def split_facts(self):
        return {"source": "drawn", "description": "drawn by pathkit (no split given): seeded (0)",
                "counts": {"train": 18, "val": 6, "test": 6}}


class MeanPool(Generator):
    name = "mean-pool"
    tasks = (TASK_SLIDE_CLASSIFICATION,)
    default_hparams = {"hidden": 4}
    default_train = {"max_epochs": 6, "lr": 0.05, "weight_decay": 0.0, "early_stop_patience": None,
                     "progress": False}
    built = 0

    def build(self, spec):
        import torch

        MeanPool.built += 1
        hidden = spec.hparams["hidden"]
        return mean_feature_model(torch.nn.Sequential(torch.nn.Linear(spec.feature_dim, hidden), torch.nn.ReLU(),
                                                      torch.nn.Linear(hidden, 2)), probabilities=False)


def toy_plugin():
    return ComponentPlugin(ToyCohort, Precomputed, MeanPool, ToyAccuracy)


@pytest.fixture
def toy_root(tmp_path):
    return write_toy_features(tmp_path / "toy", 30, N_TILES, DIM, "case")


def test_run_orchestration_and_resume(fresh_registry, cli, toy_root, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    workdir = tmp_path / "ws"
    args = ("run", "--dataset", "toy-cohort", "--encoder", "precomputed", "--generator", "mean-pool",
            "--dataset-root", toy_root, "--workdir", workdir, "--cpu")
    MeanPool.built = 0
    result = cli(*args)
    assert result.exit_code == 0, result.stdout + result.stderr
    run_dirs = list((workdir / "runs" / "toy-cohort" / "precomputed" / "mean-pool").iterdir())
    assert len(run_dirs) == 1
    run_dir = run_dirs[0]
    for name in ("metrics.json", "per_case.parquet", "provenance.json", "predictions.jsonl", "report.html",
                 "stages.json", "checkpoints/best.safetensors", "checkpoints/last.safetensors"):
        assert (run_dir / name).exists(), name
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["metrics"]["toy-accuracy"]["accuracy"] == 1.0
    # how the split was made reaches the log, metrics.json and the report
    # ... as realised: the cases are their own patients, so the unit is the slide
    assert ("split: drawn by pathkit (no split given): seeded (0); realised train/val/test 18/6/6 slides "
            "(60/20/20%); no slide in two parts") in " ".join(result.stdout.split())
    assert metrics["split"]["units"] == {"train": 18, "val": 6, "test": 6} and metrics["split"]["unit"] == "slide"
    assert metrics["split"]["source"] == "drawn"
    report = (run_dir / "report.html").read_text()
    assert "drawn by pathkit" in report and "It was drawn by pathkit because none was given" in report
    assert "baseline: majority-class" in report
    assert metrics["baselines"]["majority-class"]["toy-accuracy"]["accuracy"] == 0.5
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert prov["config"]["generator"] == "mean-pool" and prov["seeds"] == {"seed": 0}
    assert prov["inputs"]["split_hash"]
    preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in preds] == [f"case{i:02d}" for i in range(24, 30)]
    builds_first = MeanPool.built

    again = cli(*args)
    assert again.exit_code == 0
    assert MeanPool.built == builds_first, "a finished run must not train again"
    assert "this cell is finished" in again.stdout
    # a killed run (no score marker yet) resumes after training: predictions and scores only
    stages = json.loads((run_dir / "stages.json").read_text())
    del stages["score"], stages["predict"]
    (run_dir / "stages.json").write_text(json.dumps(stages))
    third = cli(*args)
    assert third.exit_code == 0 and MeanPool.built == builds_first + 1  # rebuilt once, for prediction
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert "fit" in prov["resumed_stages"]


def test_missing_features_are_listed_or_skipped(fresh_registry, cli, toy_root, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    (toy_root / "case25.safetensors").unlink()
    args = ["run", "-d", "toy-cohort", "-e", "precomputed", "-g", "mean-pool", "--dataset-root", toy_root,
            "--workdir", tmp_path / "ws", "--cpu"]
    failed = cli(*args)
    assert failed.exit_code == 2 and "case25" in failed.stderr and "--skip-missing" in failed.stderr
    ok = cli(*args, "--skip-missing")
    assert ok.exit_code == 0, ok.stderr
    metrics_file = next((tmp_path / "ws" / "runs").rglob("metrics.json"))
    assert "case25" in json.loads(metrics_file.read_text())["skipped_cases"]


def test_generator_task_mismatch_is_explained(fresh_registry, cli, tmp_path):
    class ReportOnly(Generator):
        name = "report-only"
        tasks = ("report",)

    fresh_registry({"toy": toy_plugin(), "p": ComponentPlugin(ReportOnly)})
    result = cli("run", "-d", "toy-cohort", "-e", "precomputed", "-g", "report-only", "--workdir", tmp_path)
    assert result.exit_code == 2 and "not the 'slide-classification' task" in result.stderr


def test_config_file_and_bad_config(fresh_registry, cli, toy_root, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'dataset = "toy-cohort"\nencoder = "precomputed"\ngenerator = "mean-pool"\n'
                   f'dataset_root = "{toy_root}"\nworkdir = "{tmp_path / "ws"}"\ncpu = true\n'
                   f'[train]\nmax_epochs = 2\n')
    result = cli("run", "--config", cfg)
    assert result.exit_code == 0, result.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("dataset = \n")
    out = cli("run", "--config", bad)
    assert out.exit_code == 2 and "bad.toml" in out.stderr and "invalid TOML" in out.stderr
    typo = tmp_path / "typo.toml"
    typo.write_text('dataset = "toy-cohort"\nencoder = "precomputed"\ngenerator = "mean-pool"\nmax_epoch = 3\n')
    out = cli("run", "--config", typo)
    assert out.exit_code == 2 and "max_epoch" in out.stderr
