"""Slide-embedding probes (issue 40, item 3): a slide encoder named as a generator fits scikit-learn's
logistic regression on its slide embeddings, keeps the embeddings keyed by bag and slide encoder
(a changed bag or slide encoder recomputes that, and nothing else), refuses features of another
patch encoder, and its weights file's content is part of the fit's identity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pathkit_core.contracts import GeneratorSpec, PathkitError
from pathkit_core.plugins import get_component

pytest.importorskip("pathkit_encoders")

from pathkit_encoders.slide_store import embed_items  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _items(n, seed, dim=64, shift=2.0):
    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        label = i % 2
        feats = (rng.normal(size=(5, dim)) + (shift if label else -shift) * (np.arange(dim) < 4)).astype(np.float32)
        items.append({"case_id": f"c{seed}-{i}", "features": torch.from_numpy(feats),
                      "coords": torch.tensor([[128 * (j % 3), 128 * (j // 3)] for j in range(5)]),
                      "target": label, "geometry": [{"tile_px_level0": "128"}]})
    return items


def test_mean_probe_is_sklearns_logistic_regression_on_the_mean_features():
    from sklearn.linear_model import LogisticRegression

    train, test = _items(12, 0, shift=0.3), _items(6, 1, shift=0.3)
    generator = get_component("generator", "mean-tiny-vit")()
    spec = GeneratorSpec(task="slide-classification", feature_dim=64, hparams=generator.hparams({}),
                         class_names=("a", "b"), train_items=train, val_items=[])
    model = generator.build(spec)
    x = torch.stack([it["features"].mean(0) for it in train]).double().numpy()
    y = np.array([it["target"] for it in train])
    ref = LogisticRegression(C=64 * 2 / 100.0, max_iter=1000).fit(x, y)  # UNI's C = D * K / 100
    xt = torch.stack([it["features"].mean(0) for it in test]).double().numpy()
    got = model.predict(model.collate([{**it, "target": None} for it in test]))
    np.testing.assert_allclose([p["probabilities"] for p in got], ref.predict_proba(xt), atol=2e-4)
    assert model.export_state()["embedded_at_fit"] == {"computed": 12, "reused": 0}


def test_the_probe_learns_separable_slides_through_a_slide_encoder():
    train, test = _items(16, 2), _items(8, 3)
    generator = get_component("generator", "tiny-titan")()
    spec = GeneratorSpec(task="slide-classification", feature_dim=64, hparams=generator.hparams({}),
                         class_names=("a", "b"), train_items=train)
    model = generator.build(spec)
    got = model.predict(model.collate(test))
    assert [p["label"] for p in got] == [it["target"] for it in test]


def test_bag_embeddings_are_kept_and_recomputed_only_for_what_changed(tmp_path):
    mean = get_component("slide-encoder", "mean-tiny-vit")()
    model = mean.load()
    items = _items(3, 4)
    first, statuses = embed_items(mean, model, items, tmp_path)
    assert statuses == ["computed"] * 3
    torch.testing.assert_close(first[1], items[1]["features"].mean(0))
    _, statuses = embed_items(mean, model, items, tmp_path)
    assert statuses == ["reused"] * 3
    changed = [items[0], {**items[1], "features": items[1]["features"] + 1}, items[2]]  # one bag changes
    again, statuses = embed_items(mean, model, changed, tmp_path)
    assert statuses == ["reused", "computed", "reused"]
    torch.testing.assert_close(again[1], first[1] + 1)
    small = {"in_dim": 64, "embed_dim": 8, "depth": 1, "num_heads": 2, "pool_queries": 2, "pool_heads": 2}
    paths = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        paths.append(tmp_path / f"w{seed}.pt")
        torch.save(get_component("slide-encoder", "titan")(arch_overrides=small).build().state_dict(), paths[-1])
    one = get_component("slide-encoder", "titan")(arch_overrides=small)
    _, s1 = embed_items(one, one.load(weights_path=paths[0]), items, tmp_path)
    two = get_component("slide-encoder", "titan")(arch_overrides=small)
    _, s2 = embed_items(two, two.load(weights_path=paths[1]), items, tmp_path)  # another slide encoder identity
    assert s1 == s2 == ["computed"] * 3
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["mean-tiny-vit", "titan"]
    _, statuses = embed_items(mean, model, items, tmp_path)  # the mean's embeddings were not touched
    assert statuses == ["reused", "computed", "reused"]  # (its second bag is back to the first version)


def test_a_probe_over_another_patch_encoders_features_is_refused():
    generator = get_component("generator", "tiny-titan")()
    wide = _items(4, 5, dim=96)
    spec = GeneratorSpec(task="slide-classification", feature_dim=96, hparams=generator.hparams({}),
                         class_names=("a", "b"), train_items=wide)
    with pytest.raises(PathkitError, match="slide encoder 'tiny-titan' reads 64-d patch features, these are 96-d"):
        generator.build(spec)


def test_the_slide_encoders_weights_file_is_part_of_the_fit_identity(tmp_path):
    generator = get_component("generator", "titan")()
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"one")
    first = generator.key_facts({"weights": str(path)})
    assert generator.key_facts({"weights": str(path)}) == first
    path.write_bytes(b"two")
    assert generator.key_facts({"weights": str(path)}) != first
    assert generator.key_facts({})["slide_encoder"]["architecture"].startswith("titan (TitanSlideViT)")


def _survival_items(n, seed):
    rng = np.random.default_rng(seed)
    items = _items(n, seed, shift=1.0)
    for item in items:
        risk = float(item["features"][:, 0].mean())
        item["target"] = {"time": float(rng.exponential(np.exp(-risk))), "event": bool(rng.random() < 0.8)}
    return items


def test_coxnet_and_retrieval_take_a_slide_encoders_embeddings():
    from pathkit_generators.coxnet import CoxNet
    from pathkit_generators.retriever import FeatureRetriever

    train, val, test = _survival_items(30, 6), _survival_items(10, 7), _survival_items(10, 8)
    risks = {}
    for name in (None, "mean-tiny-vit", "tiny-titan"):
        hp = CoxNet().hparams({"slide_encoder": name})
        model = CoxNet().build(GeneratorSpec(task="survival", feature_dim=64, hparams=hp, train_items=train,
                                             val_items=val))
        risks[name] = [p["risk"] for p in model.predict(model.collate([{**i, "target": None} for i in test]))]
    assert risks["mean-tiny-vit"] == risks[None]  # the mean baseline is the head's own mean pooling
    assert np.isfinite(risks["tiny-titan"]).all() and risks["tiny-titan"] != risks[None]
    assert CoxNet().key_facts(CoxNet().hparams({})) == {}
    facts = CoxNet().key_facts(CoxNet().hparams({"slide_encoder": "tiny-titan"}))
    assert facts["slide_encoder"]["name"] == "tiny-titan"
    keys, queries = _items(10, 9), _items(4, 10)
    found = {}
    for name in (None, "mean-tiny-vit"):
        hp = FeatureRetriever().hparams({"slide_encoder": name})
        model = FeatureRetriever().build(GeneratorSpec(task="retrieval", feature_dim=64, hparams=hp, train_items=keys))
        found[name] = model.predict(model.collate(queries))
    assert found["mean-tiny-vit"] == found[None]


def test_a_case_of_two_slides_is_the_mean_of_its_slides_embeddings():
    enc = get_component("slide-encoder", "tiny-titan")()
    model = enc.load()
    a, b = _items(2, 11)
    both = {"case_id": "p", "features": torch.cat([a["features"], b["features"]]),
            "coords": torch.cat([a["coords"], b["coords"]]),  # the same grid cells in both slides
            "tile_file": torch.tensor([0] * 5 + [1] * 5), "geometry": [{"tile_px_level0": "128"}] * 2}
    (got,), _ = embed_items(enc, model, [both], None)
    one, _ = embed_items(enc, model, [a, b], None)
    torch.testing.assert_close(got, one.mean(dim=0))


def test_the_weights_the_resolution_finds_are_part_of_the_fit_identity(tmp_path, monkeypatch):
    monkeypatch.setenv("PATHKIT_WEIGHTS_DIR", str(tmp_path))
    generator = get_component("generator", "chief")()
    assert generator.key_facts({})["slide_encoder"]["weights"] is None  # nothing on this machine yet
    (tmp_path / "chief").mkdir()
    (tmp_path / "chief" / "CHIEF_pretraining.pth").write_bytes(b"one")
    first = generator.key_facts({})
    assert first["slide_encoder"]["weights"] is not None
    (tmp_path / "chief" / "CHIEF_pretraining.pth").write_bytes(b"two")
    assert generator.key_facts({}) != first
