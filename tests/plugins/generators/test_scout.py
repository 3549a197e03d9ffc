"""SCOUT: FiLM, the per-head gate and its entropy penalty, slide/concept providers (offline defaults,
files, third-party plugins), cached decoding, learnability on the synthetic report task, 10,000 tiles."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from _report_cases import FEATURE_DIM, REG_REPORTS, assert_learns, assert_rebuilds, make_cases, overfit_one_batch
from pathkit_generators._scout_net import FiLM, HeadGate, gate_entropy
from pathkit_generators._scout_providers import ConceptScores, MeanSlide, make_provider
from pathkit_generators._text.tokenizer import PAD_ID
from pathkit_generators.scout import Scout
from test_bigen import peak_training_memory_mb

from pathkit_core.contracts import GeneratorSpec, PathkitError, TaskModel

SMALL = {"d_model": 32, "d_ff": 64, "num_heads": 2, "num_layers": 1, "drop_prob_lm": 0.1, "dropout": 0.1,
         "adapter_dropout": 0.1, "film_hidden": 64, "num_concepts": 8, "max_tokens": 48}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def build(targets, *, state=None, **overrides):
    torch.manual_seed(0)
    spec = GeneratorSpec(task="report", feature_dim=FEATURE_DIM, hparams={**SMALL, **overrides},
                         train_targets=list(targets), dataset="reg2025", state=state or {})
    return Scout().build(spec)


# --------------------------------------------------------------------------- building blocks


def test_film_modulates_tokens_with_gamma_and_beta_of_the_condition():
    torch.manual_seed(0)
    film = FiLM(d_model=4, cond_dim=3, hidden=8, dropout=0.0, alpha=0.4).eval()
    tokens, condition = torch.randn(5, 4), torch.randn(3)
    gamma, beta = film.gamma_beta(condition).chunk(2)
    expected = F.layer_norm(tokens * (1 + 0.4 * gamma) + beta, (4,), film.norm.weight, film.norm.bias)
    torch.testing.assert_close(film(tokens, condition), expected)
    with torch.no_grad():
        film.gamma_beta[-1].weight.zero_()
        film.gamma_beta[-1].bias.zero_()
    torch.testing.assert_close(film(tokens, condition), F.layer_norm(tokens, (4,)) * film.norm.weight + film.norm.bias)


def test_head_gate_is_a_tempered_softmax_per_head_over_the_three_memories():
    torch.manual_seed(0)
    gate = HeadGate(d_model=8, num_heads=2, dropout=0.0).eval()
    query = torch.randn(1, 3, 8)
    attended = [torch.randn(1, 3, 8) for _ in range(3)]
    fused, gates = gate(query, attended)
    assert gates.shape == (1, 3, 2, 3)
    torch.testing.assert_close(gates.sum(-1), torch.ones(1, 3, 2))
    logits = gate.logits(torch.cat([query, *attended], -1)).view(1, 3, 2, 3)
    torch.testing.assert_close(gates, torch.softmax(logits, -1))
    values = [proj(a).view(1, 3, 2, 4) for proj, a in zip(gate.values, attended, strict=True)]
    manual = sum(gates[..., s: s + 1] * values[s] for s in range(3)).reshape(1, 3, 8)
    torch.testing.assert_close(fused, gate.out_proj(manual))
    with torch.no_grad():
        gate.log_temperature.fill_(math.log(1e4))  # a hot gate is uniform
    torch.testing.assert_close(gate(query, attended)[1], torch.full((1, 3, 2, 3), 1 / 3), atol=1e-3, rtol=0)


def test_gate_entropy_averages_over_real_positions_only():
    uniform, certain = torch.full((3,), 1 / 3), torch.tensor([1.0, 0.0, 0.0])
    gates = torch.stack([uniform, certain])[None, None, :, None, :].expand(2, 1, 2, 2, 3)  # (layers, B, L, h, 3)
    both = torch.tensor([[True, True]])
    assert float(gate_entropy(gates, both)) == pytest.approx(math.log(3) / 2, rel=1e-5)
    assert float(gate_entropy(gates, torch.tensor([[True, False]]))) == pytest.approx(math.log(3), rel=1e-5)


def test_the_loss_is_nll_plus_the_weighted_gate_entropy():
    model = build(REG_REPORTS).eval()
    batch = model.collate(make_cases(3, seed=2))
    with torch.no_grad():
        total = model.training_step(batch)
        entropy = gate_entropy(model.decoder.gates(), batch["tokens"][:, 1:] != PAD_ID)
        nll = super(type(model), model).training_step(batch)
    assert 0 < float(entropy) <= math.log(3) + 1e-6
    torch.testing.assert_close(total, nll + 0.07 * entropy)
    assert Scout.default_hparams["gate_entropy_weight"] == 0.07


def test_memories_are_three_streams_on_the_square_tile_grid():
    model = build(REG_REPORTS).eval()
    for n in (1, 3, 8, 24):
        memory = model.encode_slide(torch.randn(n, FEATURE_DIM), None)
        assert memory.shape == (math.ceil(math.sqrt(n + 1)) ** 2, 3, SMALL["d_model"])
    weights = torch.softmax(model.encoder.depth_weights, dim=-1)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))


def test_cached_decoding_steps_match_teacher_forcing():
    model = build(REG_REPORTS).eval()
    batch = model.collate(make_cases(2, seed=3, tiles=(3, 20)))
    tokens = batch["tokens"][:, :-1]
    with torch.no_grad():
        memory, mask = model.encode(batch)
        forced = torch.log_softmax(model.decoder(tokens, memory, mask), dim=-1)
        cache = model.decoder.start(memory, mask)
        stepped = torch.stack([model.decoder.step(tokens[:, t], cache) for t in range(tokens.size(1))], dim=1)
    torch.testing.assert_close(stepped, forced, atol=1e-4, rtol=1e-4)


# --------------------------------------------------------------------------- providers


def test_offline_providers_are_the_mean_tile_and_pooled_concept_scores():
    features = torch.randn(7, FEATURE_DIM)
    torch.testing.assert_close(MeanSlide(FEATURE_DIM)(features), features.mean(0))
    concepts = make_provider("concept", "prototypes", FEATURE_DIM, {"num_concepts": 5})
    assert isinstance(concepts, ConceptScores) and concepts.out_dim == 10
    cosine = F.normalize(features, dim=-1) @ F.normalize(concepts.directions, dim=-1).T
    torch.testing.assert_close(concepts(features), torch.cat([cosine.mean(0), cosine.max(0).values]))
    attention = make_provider("slide", "attention", FEATURE_DIM, {})
    pooled = attention(features)
    assert pooled.shape == (FEATURE_DIM,)
    assert bool((pooled <= features.max(0).values + 1e-6).all() and (pooled >= features.min(0).values - 1e-6).all())


def test_concept_directions_from_a_file_and_clear_errors(tmp_path):
    from safetensors.torch import save_file

    directions = torch.randn(4, FEATURE_DIM)
    save_file({"concepts": directions}, str(tmp_path / "concepts.safetensors"))
    provider = make_provider("concept", "file", FEATURE_DIM, {"concept_file": str(tmp_path / "concepts.safetensors")})
    torch.testing.assert_close(provider.directions, directions)
    assert not any(p is provider.directions for p in provider.parameters())  # fixed, not learned
    save_file({"concepts": torch.randn(4, 3)}, str(tmp_path / "wrong.safetensors"))
    for hp, match in (({}, "needs concept_file"), ({"concept_file": str(tmp_path / "wrong.safetensors")}, r"\(C, 16\)"),
                      ({"concept_file": str(tmp_path / "missing.safetensors")}, "cannot read")):
        with pytest.raises(PathkitError, match=match):
            make_provider("concept", "file", FEATURE_DIM, hp)
    with pytest.raises(PathkitError, match="unknown slide provider 'titan'"):
        make_provider("slide", "titan", FEATURE_DIM, {})
    # a module path is never imported: only registered provider names are accepted
    import sys

    for name in ("json:loads", "pathkit_never_imported_probe:factory"):
        with pytest.raises(PathkitError, match="choose one of mean, attention"):
            make_provider("slide", name, FEATURE_DIM, {})
    assert "pathkit_never_imported_probe" not in sys.modules

    model = build(REG_REPORTS, concept_provider="file", concept_file=str(tmp_path / "concepts.safetensors")).eval()
    state = model.export_state()
    assert state["providers"]["concept"] == {"shape": [4, FEATURE_DIM]}
    (tmp_path / "concepts.safetensors").unlink()  # a checkpoint rebuild does not need the file
    rebuilt = build(["x"], state=state, concept_provider="file")
    rebuilt.load_state_dict(model.state_dict())
    torch.testing.assert_close(rebuilt.concept_provider.directions, directions)



# --------------------------------------------------------------------------- learning and rebuilding


def test_overfits_one_batch():
    model, batch, _, targets = overfit_one_batch(
        lambda t: build(t, dropout=0.0, drop_prob_lm=0.0, adapter_dropout=0.0, film_dropout=0.0), steps=60)
    assert isinstance(model, TaskModel)
    assert model.predict(batch) == targets


@pytest.mark.slow  # 13 s on 2 cores: `make test-suite` runs it (test_overfits_one_batch stays)
def test_learns_the_report_from_features_and_beats_most_frequent_report(tmp_path):
    # the gate entropy penalty makes the gates decisive early, which delays learning the class a
    # little on this tiny task: 16 epochs, not 12
    assert_learns(build, tmp_path / "ckpt", epochs=16, margin=0.3, loss_ratio=4)


def test_rebuild_from_exported_state_predicts_identically():
    assert_rebuilds(build)


def test_batched_diverse_beam_prediction_equals_one_case_at_a_time():
    cases = make_cases(4, seed=5, tiles=(1, 40))
    model = build([c["target"] for c in cases], max_tokens=12).eval()
    assert (model.decoding.beam_size, model.decoding.group_size) == (6, 3)
    together = model.predict(model.collate(cases))
    assert together == [model.predict(model.collate([c]))[0] for c in cases]


def test_defaults_are_one_pathbench_revision():
    # scout_config.yaml of PathBench main a110a98, as its code reads it (docs/report-generation.md)
    hp = Scout.default_hparams
    assert (hp["d_model"], hp["d_ff"], hp["num_heads"], hp["num_layers"]) == (768, 768, 4, 3)
    assert (hp["dropout"], hp["adapter_dropout"], hp["drop_prob_lm"]) == (0.2, 0.2, 0.4)
    assert (hp["beam_size"], hp["group_size"], hp["temperature"], hp["temperature_from_step"]) == (6, 3, 0.7, 1)
    assert hp["gate_entropy_weight"] == 0.07 and (hp["film_hidden"], hp["film_dropout"], hp["film_alpha"]) == (
        1024, 0.2, 0.4)
    assert Scout.default_max_tiles is None  # its SCOUT loader reads every tile


def test_registered_as_a_plugin():
    from pathkit_core.plugins import get_component

    assert get_component("generator", "scout") is Scout


def test_a_ten_thousand_tile_slide_trains_without_the_quadratic_attention_matrix():
    # 10,201 tokens (the prompt and 10,000 tiles on a square grid): one materialised 2-head score
    # matrix would take ~830 MB, its softmax gradient as much again. Attention dropout is off
    # because torch's fused CPU kernel has none (with it, CPU falls back to the materialised path;
    # CUDA's fused kernels do support dropout).
    grown = peak_training_memory_mb("pathkit_generators.scout", "Scout", {**SMALL, "dropout": 0.0})
    assert grown < 500, grown
