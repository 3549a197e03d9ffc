"""`pathkit run` on a small pathoargus table of feature files: selection under the budget, the evidence
record of each prediction, the budget summary, missing features, and llm-reader end to end offline."""

from __future__ import annotations

import json

import pytest
import torch

from tests.plugins.generators.test_vqa_readers import save_tiny_lm

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LESIONS = ("adenocarcinoma", "lymphoma", "melanoma", "sarcoma")
DIM = 8


def _root(tmp_path, *, missing: str | None = None):
    """12 patients (8/2/2), one CSI question each over two slides; the lesion shows in 3 rows of the
    second slide, planted there as its direction in feature space."""
    from pathkit_core.features.store import write_features

    root = tmp_path / "pa"
    (root / "features").mkdir(parents=True)
    gen = torch.Generator().manual_seed(0)
    rows = []
    for i in range(12):
        lesion = i % 4
        names = []
        for s in ("a", "b"):
            n = 30 if s == "a" else 10
            feats = torch.randn(n, DIM, generator=gen) * 0.3
            coords = torch.stack([torch.arange(n) % 6 * 128, torch.arange(n) // 6 * 128], 1)
            if s == "b":
                feats[:3, lesion] += 3.0
            name = f"features/P{i:02d}_{s}.safetensors"
            if name != missing:
                write_features(root / name, feats, coords, {"slide_id": f"P{i:02d}_{s}", "tile_px_level0": "128"})
            names.append(name)
        choices = list(LESIONS)
        rows.append({"id": f"q{i:02d}", "patient_id": f"P{i:02d}", "split": "train" if i < 8 else "val" if i < 10
                     else "test", "question": "Which lesion is present?", "choices": choices, "answer": lesion,
                     "capability": "CSI", "candidate_sets": [names],
                     "evidence": {"regions": [{"slide": 1, "box": [0, 0, 384, 128]}]}})
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "protocol.json").write_text(json.dumps({"budget": 6, "candidates": 20}))
    return root


def _run(cli, root, tmp_path, generator, *extra):
    return cli("run", "-d", "pathoargus", "-e", "tiny-vit", "-g", generator, "--dataset-root", root,
               "--workdir", tmp_path / "ws", "--cpu", *extra)


def _run_dir(tmp_path, generator):
    """The cell's last scored run folder (a run refused for missing features, and the same run with
    --skip-missing, which leaves cases out, have folders of their own)."""
    scored = [p for p in (tmp_path / "ws" / "runs" / "pathoargus" / "tiny-vit" / generator).iterdir()
              if (p / "metrics.json").exists()]
    return max(scored, key=lambda p: (p / "metrics.json").stat().st_mtime_ns)


def test_selection_under_the_budget_end_to_end(cli, installed_registry, tmp_path):
    root = _root(tmp_path)
    result = _run(cli, root, tmp_path, "majority-position")
    assert result.exit_code == 0, result.stdout + result.stderr
    run_dir = _run_dir(tmp_path, "majority-position")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    budget = metrics["budget"]
    assert budget["selector"] == "pathoargus" and budget["budget_K"] == 6 and budget["candidates_M"] == 20
    assert budget["available_total"] == 2 * 40 and budget["selected_total"] == 12
    assert budget["retention"] == pytest.approx(12 / 80)
    predictions = [json.loads(line)["prediction"] for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    for pred in predictions:
        evidence = pred["evidence"]
        assert evidence["n_selected"] == 6 and evidence["n_scored"] <= 20
        # the routing reserves both slides (coverage 3 over two slides), relevance fills the set's other 3
        assert sum(evidence["per_slide"]) == 6 and min(evidence["per_slide"]) >= 1
        assert len(evidence["tile_index"]) == 6 and set(evidence["accessible_by"]) == {"uniform", "flat-topk",
                                                                                      "pathoargus"}
    vqa = metrics["metrics"]["vqa"]
    assert vqa["evidence_accessibility"] == vqa["evidence_accessibility@pathoargus"]
    assert "evidence_accessibility@uniform:CSI" in vqa
    assert budget["relevance"] == "learned-projection"  # the relevance actually used is recorded
    report = (run_dir / "report.html").read_text()
    assert 'id="section-budget"' in report and "retention (selected / available)" in report
    assert 'id="section-capabilities"' in report and 'id="section-accessibility"' in report
    # another selector is another run folder, and its relevance is reused from the workspace cache
    result = _run(cli, root, tmp_path, "majority-position", "-o", "selector=flat-topk")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert len(list((tmp_path / "ws" / "runs" / "pathoargus" / "tiny-vit" / "majority-position").iterdir())) == 2
    assert len(list((tmp_path / "ws" / "selectors").glob("learned-relevance-*.safetensors"))) == 1


def test_a_budget_sweep_answers_every_test_question_at_each_k(cli, installed_registry, tmp_path):
    root = _root(tmp_path)
    result = _run(cli, root, tmp_path, "majority-position", "-o", "budget=2,6,4")
    assert result.exit_code == 0, result.stdout + result.stderr
    run_dir = _run_dir(tmp_path, "majority-position")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["budget"]["budget_K"] == 6  # the largest K is the run's own
    predictions = [json.loads(line)["prediction"] for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert predictions and all(set(p["sweep"]) == {"2", "4", "6"} and p["sweep"]["6"] == p["answer"]
                               for p in predictions)
    vqa = metrics["metrics"]["vqa"]
    for k in (2, 4, 6):  # the majority position reads no feature: the same accuracy at every K
        assert vqa[f"Overall@K={k}"] == pytest.approx(vqa["Overall"]) and f"CSI@K={k}" in vqa
    report = (run_dir / "report.html").read_text()
    assert 'id="section-k-sweep"' in report and "Accuracy against the reader budget K" in report
    bad = _run(cli, root, tmp_path, "majority-position", "-o", "budget=2,x")
    assert bad.exit_code != 0 and "a K sweep lists positive whole numbers" in bad.stdout + bad.stderr


def test_missing_features_are_listed_and_stop_the_run_unless_skipped(cli, installed_registry, tmp_path):
    root = _root(tmp_path, missing="features/P10_b.safetensors")
    result = _run(cli, root, tmp_path, "majority-position", "-o", "selector=uniform")
    assert result.exit_code != 0
    assert "q10 (feature file(s) not found" in result.stdout + result.stderr
    result = _run(cli, root, tmp_path, "majority-position", "-o", "selector=uniform", "--skip-missing")
    assert result.exit_code == 0, result.stdout + result.stderr
    metrics = json.loads((_run_dir(tmp_path, "majority-position") / "metrics.json").read_text())
    assert "q10" in metrics["skipped_cases"] and metrics["n_test_cases"] == 1


def test_llm_reader_end_to_end_offline(cli, installed_registry, tmp_path, monkeypatch):
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("llm-reader touched the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    model = save_tiny_lm(tmp_path / "tiny-lm")
    root = _root(tmp_path)
    for mode in ("loglik", "generate"):
        result = cli("run", "-d", "pathoargus", "-e", "tiny-vit", "-g", "llm-reader", "--dataset-root", root,
                     "--workdir", tmp_path / "ws", "--cpu", "-o", "selector=uniform", "-c",
                     _config(tmp_path, model, mode))
        assert result.exit_code == 0, result.stdout + result.stderr
    runs = sorted((tmp_path / "ws" / "runs" / "pathoargus" / "tiny-vit" / "llm-reader").iterdir())
    modes = {}
    for run_dir in runs:
        metrics = json.loads((run_dir / "metrics.json").read_text())
        first = json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[0])["prediction"]
        modes[first["mode"]] = metrics["metrics"]["vqa"]
    assert modes["loglik"]["parse_failure_rate"] == 0.0 and modes["loglik"]["unanswered_rate"] == 0.0
    # generation from random weights: whatever does not parse is counted wrong and reported
    assert modes["generate"]["parse_failure_rate"] == modes["generate"]["unanswered_rate"]


def _config(tmp_path, model, mode):
    path = tmp_path / f"llm-{mode}.toml"
    path.write_text(f'[hparams]\nmodel = "{model}"\nmode = "{mode}"\nmax_new_tokens = 3\n')
    return path
