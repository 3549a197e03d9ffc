"""The `zero-shot` task: CONCH v1's text tower at its published size, prompt ensembles, MI-Zero top-k
pooling, a tiny text tower built to align class names with synthetic classes (zero-shot beats the
majority class, paired p < 0.01), and the refusals (no weights, a tokenizer of another digest,
features outside CONCH v1's image-text space)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pathkit_core.contracts import GeneratorSpec, PathkitError
from tests.tasks.zeroshot._aligned import CLASSES, DIM, aligned_tower


def test_conch_v1_text_tower_has_the_published_parameter_count():
    """conch_ViT-B-16.json text_cfg: vocab 32007, width 768, 12 heads, 12 layers, context 128,
    embed_cls, projection to the 512-d joint space. By hand: token embedding 32007*768 =
    24,581,376; positions 128*768 = 98,304; class embedding 768; per block 2 LayerNorms 3,072 +
    attention (3*768*768 + 3*768) + (768*768 + 768) = 2,362,368 + MLP (768*3072 + 3072) +
    (3072*768 + 768) = 4,722,432, i.e. 7,087,872, times 12 = 85,054,464; ln_final 1,536;
    text_projection 768*512 = 393,216; total 110,129,664."""
    from pathkit_generators._conch_text import _build_tower

    with torch.device("meta"):
        tower = _build_tower()
    assert sum(p.numel() for p in tower.parameters()) == 110_129_664
    assert tuple(tower.text_projection.shape) == (768, 512)
    assert tuple(tower.positional_embedding.shape) == (128, 768)


def test_pool_top_k_is_the_mean_of_each_class_k_best_tiles():
    from pathkit_generators.zeroshot import pool_top_k

    sims = torch.tensor([[0.1, 0.9], [0.5, 0.2], [0.3, 0.4], [0.8, 0.0]])
    torch.testing.assert_close(pool_top_k(sims, 2), torch.tensor([(0.8 + 0.5) / 2, (0.9 + 0.4) / 2]))
    torch.testing.assert_close(pool_top_k(sims, 99), sims.mean(dim=0))  # k clipped to the tiles
    torch.testing.assert_close(pool_top_k(sims[:1], 10), sims[0])  # a patch: its one tile


def test_prompts_fill_every_template_with_every_name_and_prompt_files_are_checked(tmp_path):
    from pathkit_tasks.zeroshot.prompts import CONCH_TEMPLATES, class_prompts

    default = class_prompts(["tumour", "stroma"])
    assert len(CONCH_TEMPLATES) == 22 and len(default["tumour"]) == 22
    assert "an H&E image of tumour." in default["tumour"]
    file = tmp_path / "prompts.json"
    file.write_text(json.dumps({"0": {"classnames": {"tumour": ["carcinoma", "tumor"], "stroma": "stroma"},
                                      "templates": ["CLASSNAME.", "an H&E image of CLASSNAME."]}}))
    got = class_prompts(["tumour", "stroma"], file)
    assert got == {"tumour": ["carcinoma.", "an H&E image of carcinoma.", "tumor.", "an H&E image of tumor."],
                   "stroma": ["stroma.", "an H&E image of stroma."]}
    with pytest.raises(PathkitError, match=r"prompts.json: no names for the dataset class\(es\) \['necrosis'\]"):
        class_prompts(["tumour", "necrosis"], file)
    with pytest.raises(PathkitError, match="lack the placeholder CLASSNAME"):
        class_prompts(["tumour"], templates=["an image of tumour"])
    file.write_text("{not json")
    with pytest.raises(PathkitError, match="prompts.json: cannot be read as JSON"):
        class_prompts(["tumour"], file)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Class means, background, and the aligned tower's files (one build for the module)."""
    gen = torch.Generator().manual_seed(0)
    means = torch.nn.functional.normalize(torch.randn(len(CLASSES), DIM, generator=gen), dim=1)
    # background tissue: half class 1 ("stroma"), half a direction orthogonal to every class mean
    q, _ = torch.linalg.qr(torch.cat([means.T, torch.randn(DIM, 1, generator=gen)], dim=1))
    background = 0.5 * means[1] + 0.5 * q[:, len(CLASSES)]
    weights, tokenizer = aligned_tower(tmp_path_factory.mktemp("conch"), means)
    return SimpleNamespace(means=means, background=background, weights=weights, tokenizer=tokenizer, gen=gen)


def _hparams(world, **more):
    from pathkit_core.workspace import sha256_file

    return {"weights": str(world.weights), "tokenizer": str(world.tokenizer),
            "tokenizer_sha256": sha256_file(world.tokenizer), **more}


def _model(world, items, **hp):
    from pathkit_generators.zeroshot import ConchZeroShot

    spec = GeneratorSpec(task="zero-shot", feature_dim=DIM, hparams=_hparams(world, **hp), class_names=CLASSES,
                         train_items=items)
    return ConchZeroShot().build(spec)


def _patches(world, n_per_class: int, noise: float) -> tuple[list[dict], np.ndarray]:
    items, labels = [], []
    for c in range(len(CLASSES)):
        for i in range(n_per_class):
            x = world.means[c] + noise * torch.randn(DIM, generator=world.gen)
            items.append({"case_id": f"p{c}-{i}", "features": x.reshape(1, -1), "meta": {"joint_space": "conch-v1"}})
            labels.append(c)
    return items, np.asarray(labels)


def _predict(model, items):
    return model.predict(model.collate(items))


def test_the_aligned_tower_embeds_each_class_name_onto_its_feature_mean(world):
    from pathkit_generators._conch_text import ConchTextEmbedder

    emb = ConchTextEmbedder(world.weights, world.tokenizer).embed(["an H&E image of stroma.", "tumour."])
    torch.testing.assert_close(emb, world.means[[1, 0]], atol=1e-4, rtol=1e-4)


def test_patch_zero_shot_beats_the_majority_class_paired(world):
    from pathkit_bench.stats import paired_bootstrap

    items, labels = _patches(world, 20, noise=0.35)
    model = _model(world, items)
    assert model.export_state()["logit_scale"] == pytest.approx(50.0)  # exp of the checkpoint's logit_scale
    preds = _predict(model, items)
    assert all(abs(sum(p["probabilities"]) - 1) < 1e-6 for p in preds)
    correct = np.asarray([p["label"] for p in preds]) == labels
    majority = labels == 0  # the baseline predicts the first of three equal classes
    assert correct.mean() > 0.8, correct.mean()
    boot = paired_bootstrap(correct.astype(float), majority.astype(float), n_resamples=2000, seed=0)
    assert boot.p_value < 0.01, boot


def test_slide_zero_shot_by_top_k_finds_the_few_class_tiles_that_the_mean_misses(world):
    """Slides of 40 tiles, 4 of them the class's and 36 background leaning towards "stroma": the mean
    of all tiles is swamped by the background, the mean of the top 4 is not (MI-Zero's reason for top-k)."""
    items, labels = [], []
    for c in range(len(CLASSES)):
        for i in range(8):
            tiles = [world.background + 0.15 * torch.randn(DIM, generator=world.gen) for _ in range(36)]
            tiles += [world.means[c] + 0.15 * torch.randn(DIM, generator=world.gen) for _ in range(4)]
            items.append({"case_id": f"s{c}-{i}", "features": torch.stack(tiles), "meta": {"joint_space": "conch-v1"}})
            labels.append(c)
    labels = np.asarray(labels)
    top = np.asarray([p["label"] for p in _predict(_model(world, items, top_k=4), items)]) == labels
    mean = np.asarray([p["label"] for p in _predict(_model(world, items, top_k=10_000), items)]) == labels
    assert top.mean() > 0.9 and top.mean() > mean.mean() + 0.2, (top.mean(), mean.mean())


def test_features_outside_conch_v1_space_are_refused_with_the_file(world, tmp_path):
    from pathkit_core.features.store import write_features

    path = write_features(tmp_path / "S1.safetensors", torch.zeros(3, DIM), torch.zeros(3, 2),
                          {"encoder": "uni", "joint_space": ""})
    items = SimpleNamespace(specs=[SimpleNamespace(feature_files=(path,))])
    with pytest.raises(PathkitError, match=r"S1.safetensors: features in no image-text space .*'conch-v1'"):
        _model(world, items)
    other = [{"case_id": "p1", "features": torch.zeros(1, DIM), "meta": {"joint_space": "plip"}}]
    with pytest.raises(PathkitError, match=r"case p1: features in the 'plip' space"):
        _model(world, other)


def test_absent_weights_and_a_tokenizer_of_another_digest_are_refused(world, tmp_path):
    from pathkit_generators.zeroshot import ConchZeroShot

    items, _ = _patches(world, 1, noise=0.1)
    spec = GeneratorSpec(task="zero-shot", feature_dim=DIM, class_names=CLASSES, train_items=items,
                         hparams={"weights": str(tmp_path / "absent.bin"), "tokenizer": str(world.tokenizer)})
    with pytest.raises(PathkitError, match=r"no CONCH v1 checkpoint .*absent.bin.*nothing is downloaded"):
        ConchZeroShot().build(spec)
    spec.hparams = {"weights": str(world.weights), "tokenizer": str(world.tokenizer)}  # the published digest
    with pytest.raises(PathkitError, match=r"conch_byte_level_bpe_uncased.json .* but the published checkpoint"):
        ConchZeroShot().build(spec)


def test_the_run_identity_follows_the_weights_tokenizer_and_prompt_file(world, tmp_path):
    from pathkit_generators.zeroshot import ConchZeroShot

    head = ConchZeroShot()
    first = head.key_facts(_hparams(world))
    prompts = tmp_path / "p.json"
    prompts.write_text(json.dumps({"classnames": {c: [c] for c in CLASSES}}))
    with_file = head.key_facts(_hparams(world, prompt_file=str(prompts)))
    assert first["text_tower"]["weights"] and first["text_tower"]["tokenizer"]
    assert with_file != first and with_file["text_tower"]["weights"] == first["text_tower"]["weights"]
    prompts.write_text(json.dumps({"classnames": {c: [c, c + "s"] for c in CLASSES}}))
    assert head.key_facts(_hparams(world, prompt_file=str(prompts))) != with_file


def test_the_zero_shot_task_is_scored_by_the_classification_metric():
    from pathkit_core.plugins import get_component

    assert "zero-shot" in get_component("metric", "classification").tasks
    assert get_component("task", "zero-shot").baselines == ("majority-class", "class-prior")
    assert get_component("dataset", "slides-zeroshot").task == "zero-shot"


def test_patch_shards_are_placed_in_their_encoders_space(tmp_path):
    """Image-feature shards record only their encoder: `conch` features lie in `conch-v1`, UNI's in none."""
    from pathkit_generators._joint_space import check_joint_space

    from pathkit_core.features.images import ImageFeatureRow, _write_shard

    def items(encoder):
        path = tmp_path / f"{encoder}.safetensors"
        _write_shard(path, torch.zeros(2, DIM), {"encoder": encoder, "ids": json.dumps(["a", "b"])})
        return SimpleNamespace(rows=[(cid, ImageFeatureRow(path, i, "d"), 0, {}) for i, cid in enumerate("ab")])

    check_joint_space(items("conch"), "conch-v1", "CONCH v1")
    with pytest.raises(PathkitError, match=r"uni.safetensors: features in no image-text space"):
        check_joint_space(items("uni"), "conch-v1", "CONCH v1")
