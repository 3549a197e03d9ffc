"""Run identity: a result is reused only while the code, the weights and the data behind it are
unchanged; configurations name registered components and never import code."""

from __future__ import annotations

import json
import shutil
import sys

import polars as pl
import pytest

from pathkit_core.contracts import Case, Dataset, Generator, Metric, MetricResult
from pathkit_tasks import TASK_SLIDE_CLASSIFICATION
from tests.core._toy import ComponentPlugin, mean_feature_model

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
        return mean_feature_model(torch.nn.Linear(spec.feature_dim, 2), probabilities=True)


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
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

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


def _fake_distribution(site, name, *, record=None, editable_folder=None):
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if record is not None:
        (info / "RECORD").write_text(record)
    if editable_folder is not None:
        (info / "direct_url.json").write_text(json.dumps({"url": f"file://{editable_folder}",
                                                          "dir_info": {"editable": True}}))
    return info


def test_the_example_plugin_installed_as_a_user_would_is_keyed_by_its_record():
    from pathkit_core.run.identity import distribution_identity

    found = distribution_identity("pathkit-example-plugin")
    assert found["version"] and len(found["record"]) == 32 and "commit" not in found


def test_a_regular_install_is_identified_by_its_record(tmp_path, monkeypatch):
    """A reinstalled distribution whose files changed, at the same version, is other code."""
    from pathkit_core.run.identity import distribution_identity

    site = tmp_path / "site"
    info = _fake_distribution(site, "pathkit-fake-plugin", record="fake/__init__.py,sha256=AAA,10\n")
    monkeypatch.syspath_prepend(str(site))
    distribution_identity.cache_clear()
    before = distribution_identity("pathkit-fake-plugin")
    assert before["version"] == "1.0" and before["record"]
    (info / "RECORD").write_text("fake/__init__.py,sha256=BBB,10\n")  # lr default changed, reinstalled
    distribution_identity.cache_clear()
    after = distribution_identity("pathkit-fake-plugin")
    assert after["version"] == before["version"] and after["record"] != before["record"]
    distribution_identity.cache_clear()


def test_an_editable_install_counts_uncommitted_and_untracked_files(tmp_path, monkeypatch):
    import subprocess

    from pathkit_core.run.identity import distribution_identity

    repo = tmp_path / "plugin"
    (repo / "fake").mkdir(parents=True)
    (repo / "fake" / "__init__.py").write_text("LR = 1e-3\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    site = tmp_path / "site"
    _fake_distribution(site, "pathkit-fake-editable", editable_folder=repo)
    monkeypatch.syspath_prepend(str(site))

    def identity():
        distribution_identity.cache_clear()
        return distribution_identity("pathkit-fake-editable")

    clean = identity()
    assert len(clean["commit"]) == 40 and "changes" not in clean
    (repo / "fake" / "__init__.py").write_text("LR = 1e-2\n")
    edited = identity()
    assert edited["changes"]
    (repo / "fake" / "__init__.py").write_text("LR = 1e-3\n")
    (repo / "fake" / "heads.py").write_text("DEPTH = 2\n")  # a new, untracked module
    untracked = identity()
    assert untracked["changes"] and untracked["changes"] != edited["changes"]
    (repo / "fake" / "heads.py").write_text("DEPTH = 3\n")
    assert identity()["changes"] != untracked["changes"]
    distribution_identity.cache_clear()


def test_source_identity_follows_the_sources_of_a_package(tmp_path, monkeypatch):
    from pathkit_core.run.identity import source_identity

    package = tmp_path / "pkg_src_identity"
    package.mkdir()
    (package / "__init__.py").write_text("A = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = source_identity("pkg_src_identity")
    source_identity.cache_clear()
    assert source_identity("pkg_src_identity") == first
    (package / "more.py").write_text("B = 2\n")
    source_identity.cache_clear()
    assert source_identity("pkg_src_identity") != first
    source_identity.cache_clear()


def test_a_checkpoint_is_resumed_only_under_its_own_key(tmp_path, capsys):
    import torch

    from pathkit_core.training.trainer import TrainConfig, checkpoint_stage_key, fit

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(2, 2)

        def collate(self, items):
            return {"x": torch.stack([i["features"] for i in items]), "y": torch.tensor([i["target"] for i in items])}

        def training_step(self, batch):
            return torch.nn.functional.cross_entropy(self.head(batch["x"]), batch["y"])

        def predict(self, batch):
            return self.head(batch["x"]).argmax(-1).tolist()

        def export_state(self):
            return {}

    items = [{"case_id": f"c{i}", "features": torch.tensor([float(i % 2), 1.0]), "target": i % 2} for i in range(6)]
    out = tmp_path / "ckpt"
    cfg = TrainConfig(max_epochs=2, early_stop_patience=None, progress=False, cpu=True)
    fit(Model(), items, items, cfg, out, stage_key="key-a")
    assert checkpoint_stage_key(out / "last.safetensors") == "key-a"
    assert checkpoint_stage_key(out / "best.safetensors") == "key-a"
    longer = TrainConfig(max_epochs=3, early_stop_patience=None, progress=False, cpu=True)
    resumed = fit(Model(), items, items, longer, out, stage_key="key-a")
    assert [h["epoch"] for h in resumed.history] == [1, 2, 3]
    said = capsys.readouterr().out
    assert "resuming from" in said and "after epoch 2" in said and "not resuming" not in said
    fresh = fit(Model(), items, items, longer, out, stage_key="key-b")
    said = capsys.readouterr().out
    assert "not resuming" in said and "key-a" in said and "key-b" in said and said.count("\n") == 1
    assert "resuming from" not in said and len(fresh.history) == 3  # started over: three new epochs
    assert checkpoint_stage_key(out / "last.safetensors") == "key-b"


def test_the_task_settings_a_dataset_fixes_key_its_data(tmp_path):
    """A dataset's `task_defaults` (a VQA release's K and M, read from its protocol file) change
    what is trained and scored: they are part of the data key, so a changed file gives another run
    folder (every run stage redone; tiles and features, keyed by slide content, are kept), and the
    same content gives the same key."""
    from pathkit_core.run.identity import dataset_identity

    class WithProtocol(Dataset):
        name = "with-protocol"
        task = TASK_SLIDE_CLASSIFICATION

        @property
        def task_defaults(self):
            return json.loads((self.root / "protocol.json").read_text())

    class Without(WithProtocol):
        @property
        def task_defaults(self):
            return {}

    cases = {"test": [Case("c1", "p1", target="a")]}
    (tmp_path / "protocol.json").write_text(json.dumps({"budget": 16, "candidates": 48}))
    first = dataset_identity(WithProtocol(tmp_path), cases)
    assert dataset_identity(WithProtocol(tmp_path), cases) == first
    (tmp_path / "protocol.json").write_text(json.dumps({"budget": 32, "candidates": 48}))
    assert dataset_identity(WithProtocol(tmp_path), cases) != first
    # the same data with no task settings is another key
    assert dataset_identity(Without(tmp_path), cases) != first


def test_the_tiling_code_follows_the_segmenter_in_use(tmp_path, monkeypatch, fresh_registry):
    """Tile manifests are keyed by the core's slide code and the tissue segmenter's own package: an
    edit to the segmenter in use re-tiles, an edit to another segmenter does not."""
    import importlib
    import textwrap

    from pathkit_core.run.features import tiling_code
    from pathkit_core.run.identity import source_identity

    package = tmp_path / "pkg_fake_segmenter"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent('''
        from pathkit_core import hookimpl
        from pathkit_core.contracts import TissueSegmenter

        class Fake(TissueSegmenter):
            name = "fake-seg"
            description = "a test segmenter"

        @hookimpl
        def register_segmenters(register):
            register(Fake)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    fresh_registry({"fake": importlib.import_module("pkg_fake_segmenter")})
    source_identity.cache_clear()
    otsu, fake = tiling_code("otsu"), tiling_code("fake-seg")
    assert otsu == source_identity("pathkit_core.wsi", "pathkit_readers", "pathkit_tissue")
    assert otsu != source_identity("pathkit_core.wsi", "pathkit_readers")
    assert fake != otsu
    (package / "more.py").write_text("B = 2\n")
    source_identity.cache_clear()
    assert tiling_code("fake-seg") != fake and tiling_code("otsu") == otsu
    source_identity.cache_clear()
