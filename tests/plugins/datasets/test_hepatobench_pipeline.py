"""HepatoBench end to end: a folder laid out like the release through `pathkit run` with each head;
the empty file reported as excluded, the leaky split flagged, the K-class scores in metrics.json,
every head far above the majority-class baseline, kNN/prototypes without a fit stage."""

from __future__ import annotations

import json
import shutil

import pytest
from pathkit_datasets.hepatobench import CLASS_FOLDERS, CLASSES, HepatoBenchDataset


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """Seven zips of PNGs with the one empty file, no slide table: the public release's layout."""
    demo = HepatoBenchDataset().make_demo(tmp_path_factory.mktemp("hb") / "demo")
    root = tmp_path_factory.mktemp("hb") / "release"
    root.mkdir(exist_ok=True)
    for folder in CLASS_FOLDERS:
        shutil.copy(demo / f"{folder}.zip", root)
    return root


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("hbwork")  # one image-feature store for every head


def run(cli, release, workdir, generator, config=None):
    args = ["run", "--dataset", "hepatobench", "--dataset-root", release, "--encoder", "tiny-vit",
            "--generator", generator, "--workdir", workdir]
    if config:
        path = workdir / f"{generator}.toml"
        path.write_text(config)
        args += ["--config", path]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    run_dir = next((workdir / "runs" / "hepatobench" / "tiny-vit" / generator).iterdir())
    return result.output, run_dir, json.loads((run_dir / "metrics.json").read_text())


def check_scores(metrics):
    scores = metrics["metrics"]["classification"]
    for key in ("macro_F1", "accuracy", "balanced_accuracy", "macro_precision", "macro_recall", "AUROC",
                *(f"F1_{c}" for c in CLASSES)):
        assert key in scores, key
    majority = metrics["baselines"]["majority-class"]["classification"]
    assert majority["macro_F1"] < 0.1
    assert scores["macro_F1"] > majority["macro_F1"] + 0.5  # far above the baseline on the demo
    assert metrics["excluded_cases"] == {"02_FIB_3355": "02_FIB.zip/02_FIB_3355.png: empty file (0 bytes)"}
    assert metrics["n_excluded_cases"] == 1
    assert metrics["dataset"]["protocol"].startswith("image-level")
    assert any("IMAGE-LEVEL and LEAKY" in w for w in metrics["dataset"]["warnings"])
    details = metrics["details"]["classification"]
    assert details["classes"] == list(CLASSES) and len(details["confusion_matrix"]) == 7
    return scores


def test_knn_needs_no_fit_stage(cli, release, workdir):
    output, run_dir, metrics = run(cli, release, workdir, "knn")
    check_scores(metrics)
    assert "needs no training" in output and "IMAGE-LEVEL and LEAKY" in output
    # the image-level split is described as what it is, never as patient-disjoint
    split = metrics["split"]
    assert split["unit"] == "image" and "patient-disjoint" not in split["statement"]
    assert "images of one slide or patient may sit in two parts" in split["statement"]
    assert "disjoint" not in metrics["dataset"]["protocol"]
    assert not (run_dir / "checkpoints").exists()
    report = (run_dir / "report.html").read_text()
    assert "IMAGE-LEVEL and LEAKY" in report and "Confusion matrix" in report and "02_FIB_3355" in report
    provenance = json.loads((run_dir / "provenance.json").read_text())
    assert len(provenance["inputs"]["dataset"]["inputs"]["02_FIB.zip"]["sha256"]) == 64


def test_linear_probe_trains_by_steps(cli, release, workdir):
    # eva's protocol with fewer steps and a larger learning rate, so the default suite stays fast
    config = "[train]\nmax_steps = 200\nval_every_steps = 50\nlr = 0.01\n"
    output, run_dir, metrics = run(cli, release, workdir, "linear-probe", config)
    check_scores(metrics)
    history = json.loads((run_dir / "checkpoints" / "history.json").read_text())
    assert history[0]["step"] == 50 and "best step" in output


@pytest.mark.parametrize("generator", ["prototype", "logistic-regression"])
def test_other_heads(cli, release, workdir, generator):
    _, run_dir, metrics = run(cli, release, workdir, generator)
    check_scores(metrics)
    assert not (run_dir / "checkpoints").exists()


def test_demo_run_needs_no_arguments_but_the_dataset(cli, tmp_path):
    result = cli("run", "--dataset", "hepatobench", "--workdir", tmp_path)
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "runs" / "hepatobench" / "tiny-vit" / "knn").iterdir())
    metrics = json.loads(run_dir.joinpath("metrics.json").read_text())
    assert metrics["dataset"]["protocol"].startswith("slide-level")  # the demo ships its slide table
    assert metrics["metrics"]["classification"]["macro_F1"] > 0.6
    # the split as realised: 70/15/15 asked, 4 patients per class give 2/1/1 -> 50/25/25 of patients
    realised = ("requested train/val/test 70/15/15; realised train/val/test 14/7/7 patients (50/25/25%), "
                "177/90/88 cases (50/25/25%); no patient in two parts")
    assert realised in metrics["split"]["statement"] and metrics["split"]["unit"] == "patient"
    assert realised in " ".join(result.output.split())  # the terminal's split line (wrapped by the console)
    report = (run_dir / "report.html").read_text()
    assert realised in report
    # a synthetic demo extracted by a randomly initialised encoder says both, everywhere
    provenance = metrics["provenance"]
    assert provenance["synthetic_data"] and provenance["encoder_weights"] == "random"
    assert provenance["weights"] == ["random-init:seed=0"]
    assert "SYNTHETIC DATA" in result.output and "RANDOM ENCODER WEIGHTS" in result.output
    assert report.count('class="banner provenance"') == 2


@pytest.mark.slow
def test_linear_probe_with_the_full_eva_protocol(cli, release, workdir):
    _, _, metrics = run(cli, release, workdir, "linear-probe", "seed = 1\n")
    assert check_scores(metrics)["macro_F1"] > 0.9
