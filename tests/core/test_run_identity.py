"""Run identity: a result is reused only while the code, the weights and the data behind it are
unchanged; configurations name registered components and never import code."""

from __future__ import annotations

import json
import shutil
import sys

import polars as pl
import pytest

from pathkit_core.contracts import TASK_SLIDE_CLASSIFICATION, Case, Dataset, Generator, Metric, MetricResult
from tests.core._toy import ComponentPlugin

N_SLIDES = 8


class Slides(Dataset):
    """Eight small synthetic slides (4/2/2), two classes by stain colour."""

    name = "id-slides"
    task = TASK_SLIDE_CLASSIFICATION
    default_metrics = ("id-accuracy",)

    def class_names(self):
        return ("pale", "dark")

    def splits(self):
        ids = [f"s{i}" for i in range(N_SLIDES)]
        return {"train": ids[:4], "val": ids[4:6], "test": ids[6:]}

    def cases(self, split):
        for cid in self.splits()[split]:
            yield Case(cid, cid, target=self.class_names()[int(cid[1:]) % 2],
                       slides=(self.root / f"{cid}.tiff",))


class Head(Generator):
    name = "id-head"
    tasks = (TASK_SLIDE_CLASSIFICATION,)
    default_train = {"max_epochs": 2, "lr": 0.01, "early_stop_patience": None, "progress": False}
    built = 0

    def build(self, spec):
        import torch

        Head.built += 1

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.head = torch.nn.Linear(spec.feature_dim, 2)

            def collate(self, items):
                return {"x": torch.stack([i["features"].mean(0) for i in items]),
                        "y": torch.tensor([-100 if i["target"] is None else i["target"] for i in items])}

            def training_step(self, batch):
                return torch.nn.functional.cross_entropy(self.head(batch["x"]), batch["y"])

            def predict(self, batch):
                return [{"probabilities": p.tolist()} for p in torch.softmax(self.head(batch["x"]), -1)]

            def export_state(self):
                return {}

        return Model()


class Accuracy(Metric):
    name = "id-accuracy"
    tasks = (TASK_SLIDE_CLASSIFICATION,)
    calls = 0

    def compute(self, predictions, references, *, ids=None, context=None):
        Accuracy.calls += 1
        hits = [float(p["label"] == r) for p, r in zip(predictions, references, strict=True)]
        return MetricResult({"accuracy": sum(hits) / len(hits)}, pl.DataFrame({"id": ids, "hit": hits}))


def _weighted_encoder():
    from pathkit_encoders.tiny_vit import TinyViTEncoder

    from pathkit_core.contracts import PretrainedWeights

    class Weighted(TinyViTEncoder):
        """tiny-vit with a published-style checkpoint record: weights come from a file."""

        name = "weighted-tiny"
        weights = PretrainedWeights(hf_hub_id="example/weighted-tiny", filename="model.safetensors",
                                    input_size=64)

    return Weighted


def identity_plugin():
    return ComponentPlugin(Slides, _weighted_encoder(), Head, Accuracy)


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    from pathkit_core.wsi.synthetic import Blob, write_synthetic_slide

    root = tmp_path_factory.mktemp("id-slides")
    for i in range(N_SLIDES):
        colour = (120, 60, 140) if i % 2 else (230, 170, 210)
        write_synthetic_slide(root / f"s{i}.tiff", width=512, height=512, mpp=1.0, seed=i,
                              tissue=[Blob(0.5, 0.5, 0.45, 0.45, colour=colour)])
    return root


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Two tiny-vit checkpoints of the exact architecture with different random weights."""
    import torch
    from safetensors.torch import save_file

    folder = tmp_path_factory.mktemp("weights")
    enc = _weighted_encoder()()
    out = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = enc.build_backbone("cpu")
        path = folder / f"seed{seed}.safetensors"
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
        out.append(path)
    return out


def _run(cli, slides, workdir, *extra):
    result = cli("run", "-d", "id-slides", "-e", "weighted-tiny", "-g", "id-head", "--dataset-root", slides,
                 "--workdir", workdir, "--cpu", *extra)
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


def test_changed_weights_behind_the_same_path_retrain_and_rescore(fresh_registry, cli, slides, checkpoints,
                                                                  tmp_path, monkeypatch):
    fresh_registry({"id": identity_plugin()})
    weights = tmp_path / "weights" / "model.safetensors"
    weights.parent.mkdir()
    shutil.copy(checkpoints[0], weights)
    work = tmp_path / "ws"
    Head.built = Accuracy.calls = 0
    _run(cli, slides, work, "--weights", weights)
    built, scored = Head.built, Accuracy.calls
    assert built >= 2  # trained, then rebuilt from the best checkpoint to predict

    again = _run(cli, slides, work, "--weights", weights)
    assert "this cell is finished" in again.stdout and (Head.built, Accuracy.calls) == (built, scored)

    # the same weights found through $PATHKIT_WEIGHTS_DIR are the same run: reused
    env_dir = tmp_path / "weights-dir"
    (env_dir / "weighted-tiny").mkdir(parents=True)
    shutil.copy(checkpoints[0], env_dir / "weighted-tiny" / "model.safetensors")
    monkeypatch.setenv("PATHKIT_WEIGHTS_DIR", str(env_dir))
    via_env = _run(cli, slides, work)
    assert "this cell is finished" in via_env.stdout and Head.built == built

    # other weights behind the same path: features, training and scores are all redone
    shutil.copy(checkpoints[1], weights)
    changed = _run(cli, slides, work, "--weights", weights)
    assert "this cell is finished" not in changed.stdout
    assert Head.built > built and Accuracy.calls > scored
    run_dir = next((work / "runs" / "id-slides" / "weighted-tiny" / "id-head").iterdir())
    from pathkit_core.features.store import read_feature_meta
    from pathkit_core.features.weights import file_sha256

    assert read_feature_meta(work / "features" / "weighted-tiny" / "s0.safetensors")["weights_sha256"] == \
        file_sha256(checkpoints[1])

    # and behind $PATHKIT_WEIGHTS_DIR
    built = Head.built
    shutil.copy(checkpoints[1], env_dir / "weighted-tiny" / "model.safetensors")
    _run(cli, slides, work)  # env weights = seed 1 = what the last run used: reused
    assert Head.built == built
    shutil.copy(checkpoints[0], env_dir / "weighted-tiny" / "model.safetensors")
    _run(cli, slides, work)
    assert Head.built > built
    assert len(list(run_dir.parent.iterdir())) == 1  # one cell, whatever the weights' source


def test_a_plugin_version_change_retrains(fresh_registry, cli, slides, checkpoints, tmp_path):
    registry = fresh_registry({"id": identity_plugin()})
    work = tmp_path / "ws"
    Head.built = 0
    _run(cli, slides, work, "--weights", checkpoints[0])
    built = Head.built
    _run(cli, slides, work, "--weights", checkpoints[0])
    assert Head.built == built
    registry.records["id"].version = "0.2.0"  # what a reinstalled, bumped distribution shows
    bumped = _run(cli, slides, work, "--weights", checkpoints[0])
    assert "this cell is finished" not in bumped.stdout and Head.built > built


def test_code_identity_covers_editable_installs():
    from pathkit_core.run.identity import distribution_identity

    core = distribution_identity("pathkit")
    assert core["version"]
    # pathkit is installed editable from its git checkout here: the commit is part of the key
    assert len(core.get("commit", "")) == 40
    assert distribution_identity("no-such-distribution-xyz") == {"version": None}


def test_a_config_naming_a_module_is_refused_without_importing_it(cli, installed_registry, tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    (tmp_path / "pwnmod.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
                                        "def run(*a, **k):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "evil.toml"
    config.write_text('dataset = "demo-reports"\nencoder = "tiny-vit"\ngenerator = "scout"\n'
                      '[hparams]\nslide_provider = "pwnmod:run"\n')
    result = cli("run", "--config", config, "--workdir", tmp_path / "ws")
    unknown = cli("run", "-d", "demo-reports", "-e", "pwnmod:Encoder", "-g", "scout", "--workdir", tmp_path / "ws")
    assert result.exit_code == 2
    assert "slide_provider 'pwnmod:run' is not a registered provider; choose one of mean, attention" in \
        result.stderr.replace("\n", "")
    assert unknown.exit_code == 2 and "unknown encoder 'pwnmod:Encoder'" in unknown.stderr
    assert "pwnmod" not in sys.modules and not marker.exists()
    # refused before any work: nothing was tiled or built
    assert not (tmp_path / "ws" / "datasets").exists()


def test_a_corrupt_stage_file_is_reported_and_training_resumes_from_checkpoints(fresh_registry, cli, slides,
                                                                                checkpoints, tmp_path):
    fresh_registry({"id": identity_plugin()})
    work = tmp_path / "ws"
    _run(cli, slides, work, "--weights", checkpoints[0])
    run_dir = next((work / "runs" / "id-slides" / "weighted-tiny" / "id-head").iterdir())
    history = json.loads((run_dir / "checkpoints" / "history.json").read_text())
    (run_dir / "stages.json").write_text("{ not json")
    Head.built = 0
    rerun = _run(cli, slides, work, "--weights", checkpoints[0])
    assert "stages.json is unreadable" in rerun.stdout.replace("\n", "")
    # the finished training is not extended by an extra epoch
    assert json.loads((run_dir / "checkpoints" / "history.json").read_text()) == history
