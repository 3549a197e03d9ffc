"""gma-mil / abmil: GOLDMARK architecture, padding masks, tile caps, protocol defaults, errors, learning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from pathkit_generators.gma_mil import GOLDMARK_TRAIN, CLAMStyleABMIL, GatedAttentionMIL

from pathkit_core.contracts import GeneratorSpec, PathkitError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def build(cls=GatedAttentionMIL, dim=16, targets=(0, 1, 1), **hparams):
    torch.manual_seed(0)
    return cls().build(GeneratorSpec(task="slide-classification", feature_dim=dim, hparams=hparams,
                                     train_targets=list(targets)))


def linear_shapes(module):
    return [(m.in_features, m.out_features) for m in module.modules() if isinstance(m, torch.nn.Linear)]


def test_gma_head_is_goldmarks_public_architecture():
    model = build(dim=1536)
    net = model.net
    # Linear(D,512)-ReLU-Dropout(.25)-Linear(512,512)-ReLU-Dropout(.25); gated attention 512->384 (tanh, sigmoid,
    # each with dropout .25) -> Linear(384,1); classifier Linear(512,2)
    assert linear_shapes(net.embed) == [(1536, 512), (512, 512)]
    assert [type(m).__name__ for m in net.embed] == ["Linear", "ReLU", "Dropout", "Linear", "ReLU", "Dropout"]
    assert linear_shapes(net.attention) == [(512, 384), (512, 384), (384, 1)]
    assert isinstance(net.attention.attention_a[1], torch.nn.Tanh)
    assert isinstance(net.attention.attention_b[1], torch.nn.Sigmoid)
    assert linear_shapes(net.classifier) == [(512, 2)]
    dropouts = [m.p for m in net.modules() if isinstance(m, torch.nn.Dropout)]
    assert dropouts == [0.25] * 4
    # Xavier-normal weights (std sqrt(2 / (fan_in + fan_out))) and zero biases
    first = net.embed[0]
    assert float(first.weight.detach().std()) == pytest.approx(math.sqrt(2 / (1536 + 512)), rel=0.05)
    assert all(float(m.bias.detach().abs().max()) == 0.0 for m in net.modules() if isinstance(m, torch.nn.Linear))


def test_abmil_presets_follow_clam():
    small = build(CLAMStyleABMIL, dim=1024)
    assert linear_shapes(small.net.embed) == [(1024, 512)]
    assert linear_shapes(small.net.attention) == [(512, 256), (512, 256), (256, 1)]
    big = build(CLAMStyleABMIL, dim=1024, size="big")
    assert linear_shapes(big.net.attention) == [(512, 384), (512, 384), (384, 1)]
    same = build(GatedAttentionMIL, dim=1024, variant="abmil")
    assert linear_shapes(same.net) == linear_shapes(small.net)
    assert small.export_state()["variant"] == "abmil" and small.export_state()["size"] == "small"


def test_protocol_defaults_are_goldmarks():
    cfg = GatedAttentionMIL.default_train
    assert cfg == GOLDMARK_TRAIN
    assert (cfg["max_epochs"], cfg["lr"], cfg["weight_decay"], cfg["batch_size"], cfg["grad_clip"]) == (
        120, 1e-4, 1e-4, 1, 5.0)
    assert cfg["plateau_on"] == "selection" and cfg["early_stop_patience"] is None
    assert cfg["validation_epochs"] == (2, 5, 10, 20, 50, 80, 120)  # public EXTRA_VAL_EPOCHS
    assert GatedAttentionMIL.default_max_tiles is None and GatedAttentionMIL.default_hparams["max_tiles"] is None
    from pathkit_core.training.trainer import TrainConfig

    TrainConfig.from_mapping(cfg)  # every key is a trainer option


def test_padding_gets_no_attention_and_does_not_change_predictions():
    model = build(dim=8).eval()
    g = torch.Generator().manual_seed(1)
    short = {"case_id": "a", "features": torch.randn(3, 8, generator=g), "target": 1}
    long = {"case_id": "b", "features": torch.randn(7, 8, generator=g), "target": 0}
    with torch.no_grad():
        alone = model.predict(model.collate([short]))[0]["probabilities"]
        batch = model.collate([short, long])
        assert batch["mask"].tolist()[0] == [True] * 3 + [False] * 4
        together = model.predict(batch)[0]["probabilities"]
        logits, weights, scores = model.net(batch["features"], batch["mask"])
    assert together == pytest.approx(alone, abs=1e-6)
    assert weights[0, 3:].abs().max() == 0.0 and float(weights[0].sum()) == pytest.approx(1.0)
    assert torch.isnan(scores[0, 3:]).all()
    # the unmasked softmax (the public code's behaviour) would put weight on the zero padding
    leaked = torch.softmax(model.net.attention(model.net.embed(batch["features"])), dim=-1)
    assert float(leaked[0, 3:].detach().sum()) > 0.01


def test_tile_cap_samples_in_training_and_is_fixed_in_evaluation():
    model = build(dim=4, max_tiles=5)
    item = {"case_id": "slide-1", "features": torch.arange(40.0).reshape(10, 4), "target": 1,
            "tile_index": torch.arange(100, 110)}
    model.train()
    draws = {tuple(model.collate([item])["tile_index"][0].tolist()) for _ in range(8)}
    assert len(draws) > 1 and all(len(d) == 5 for d in draws)
    model.eval()
    fixed = model.collate([item])
    assert fixed["tile_index"][0].tolist() == model.collate([item])["tile_index"][0].tolist()
    rows = fixed["tile_index"][0] - 100
    assert torch.equal(fixed["features"][0], item["features"][rows])  # features follow their tile index
    first = build(dim=4, max_tiles=5, tile_sampling="first").eval()
    assert first.collate([item])["tile_index"][0].tolist() == [100, 101, 102, 103, 104]
    uncapped = build(dim=4).train()
    assert uncapped.collate([item])["features"].shape == (1, 10, 4)


def test_tile_attention_reports_every_tile_with_its_index():
    model = build(dim=4).eval()
    item = {"case_id": "s", "features": torch.randn(6, 4), "target": 0, "tile_index": torch.tensor([5, 1, 2, 9, 3, 4]),
            "tile_file": torch.tensor([0, 0, 0, 1, 1, 1])}
    with torch.no_grad():
        out = model.tile_attention(model.collate([item]))[0]
    assert out["tile_index"].tolist() == [5, 1, 2, 9, 3, 4] and out["tile_file"].tolist() == [0, 0, 0, 1, 1, 1]
    assert out["attention"].sum() == pytest.approx(1.0) and len(out["attention_score"]) == 6
    assert out["probabilities"] == pytest.approx(model.predict(model.collate([item]))[0]["probabilities"])


def test_bad_configuration_and_inputs_are_clear_errors():
    with pytest.raises(PathkitError, match="two classes"):
        build(targets=(1, 1, 1))
    with pytest.raises(PathkitError, match="not a class index"):
        build(targets=("MSI", "MSS"))
    with pytest.raises(PathkitError, match="unknown variant"):
        build(variant="transmil")
    with pytest.raises(PathkitError, match="unknown size"):
        build(size="huge")
    with pytest.raises(PathkitError, match="no hyperparameter"):
        build(hidden=64)
    with pytest.raises(PathkitError, match="max_tiles"):
        build(max_tiles=0)
    model = build(dim=8)
    with pytest.raises(PathkitError, match="4-dimensional features; the model was built for 8"):
        model.collate([{"case_id": "x", "features": torch.zeros(3, 4), "target": 0}])
    with pytest.raises(PathkitError, match="outside classes"):
        model.collate([{"case_id": "x", "features": torch.zeros(3, 8), "target": 3}])
    with pytest.raises(PathkitError, match="bag of shape"):
        model.collate([{"case_id": "x", "features": torch.zeros(0, 8), "target": 0}])
    three = build(targets=(0, 1, 2))
    assert three.n_classes == 3 and linear_shapes(three.net.classifier) == [(512, 3)]


def test_learns_a_planted_signal_with_the_core_trainer(tmp_path):
    from pathkit_core.evaluation.runner import score
    from pathkit_core.training.trainer import TrainConfig, fit, load_checkpoint

    def selection(preds, refs):  # validation AUROC, as the goldmark dataset selects
        result = score(["classification"], preds, refs, context={"options": {"n_resamples": 0}})
        return result.summary["classification"]["AUROC"]

    rng = np.random.default_rng(0)
    direction = rng.normal(size=8)
    direction /= np.linalg.norm(direction)

    def bags(n, offset):
        out = []
        for i in range(n):
            x = rng.normal(size=(40, 8))
            if i % 2:
                x[rng.choice(40, 3, replace=False)] += 6 * direction
            out.append({"case_id": f"c{offset + i}", "features": torch.tensor(x, dtype=torch.float32),
                        "target": i % 2})
        return out

    train, val = bags(24, 0), bags(12, 100)
    model = build(dim=8)
    cfg = TrainConfig.from_mapping({**GatedAttentionMIL.default_train, "max_epochs": 6, "lr": 1e-3, "cpu": True,
                                    "progress": False})
    result = fit(model, train, val, cfg, tmp_path, selection=selection)
    assert result.best_score >= 0.95 and len(result.history) == 6
    # the best checkpoint reproduces the validation AUROC it was selected for
    from pathkit_metrics.classification import auroc

    restored = build(dim=8)
    load_checkpoint(tmp_path / "best.safetensors", restored)
    restored.eval()
    with torch.no_grad():
        scores = [restored.predict(restored.collate([b]))[0]["probabilities"][1] for b in val]
    assert auroc(scores, [b["target"] for b in val]) == pytest.approx(result.best_score)
