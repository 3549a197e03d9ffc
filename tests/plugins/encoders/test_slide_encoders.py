"""Slide encoders (issue 40): the `slide-encoder` kind, FEATHER / MADELEINE / CHIEF at their
published sizes, their embeddings against hand computation, checkpoints, the feature checks
before anything runs, and slide embeddings kept in the feature store under their own key."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from _slide_encoders import check_published, slide_encoder

from pathkit_core.contracts import PathkitError
from pathkit_core.plugins import get_plugin_manager

pytest.importorskip("pathkit_encoders")

from pathkit_encoders.slide_store import embed_slides, read_slide_embedding  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# the pooling encoders read no coordinates: they run on the meta device at full size
POOLING = ("chief", "feather", "madeleine")


def test_slide_encoders_are_a_listed_kind(cli):
    names = get_plugin_manager().names("slide-encoder")
    assert {"feather", "madeleine", "chief", "mean-uni", "mean-tiny-vit"} <= set(names) and len(names) >= 5
    rows = {r["name"]: r for r in json.loads(cli("list", "slide-encoders", "--json").stdout)}
    assert (rows["chief"]["patch_encoder"], rows["chief"]["magnification"], rows["chief"]["tile_px"]) == (
        "ctranspath", "10x", 256)
    assert rows["mean-uni"]["patch_encoder"] == "uni" and rows["mean-uni"]["embed_dim"] == 1024


@pytest.mark.parametrize("name", POOLING)
def test_published_architecture_and_size(name):
    cls = check_published(name)
    with torch.no_grad():
        out = cls().build("meta")(torch.empty(1, 37, cls.patch_dim, device="meta"), None)
    assert tuple(out.shape) == (1, cls.embed_dim)


def test_mismatched_patch_features_are_refused_with_the_reason():
    feather = slide_encoder("feather")
    problem = feather.feature_problem("uni", 1024, 256, 0.5)
    assert "reads 'conch15' patch features, not 'uni'" in problem and "--encoder conch15" in problem
    assert "512 px tiles at 0.5 mpp (20x)" in feather.feature_problem("conch15", 768, 256, 0.5)
    assert feather.feature_problem("conch15", 768, 512, 0.5) is None
    assert slide_encoder("mean-uni").feature_problem("uni", 1024, 224, 1.0) is None  # the mean reads any tiles


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _lin(x, layer):
    return x @ layer.weight.detach().numpy().T + layer.bias.detach().numpy()


def _gated(x, g):
    a = np.tanh(_lin(x, g.attention_a[0]))
    b = 1 / (1 + np.exp(-_lin(x, g.attention_b[0])))
    return _lin(a * b, g.attention_c)


def test_feather_and_chief_embeddings_are_attention_weighted_means_by_hand():
    x = np.random.default_rng(0).normal(size=(9, 24)).astype(np.float32)
    feather = slide_encoder("feather", in_dim=24, embed_dim=16, attn_dim=8, num_classes=3)
    model = feather.load()
    h = np.maximum(_lin(x, model.model.patch_embed[0]), 0)
    want = _softmax(_gated(h, model.model.global_attn)[:, 0], 0) @ h
    got = feather.embed(model, torch.from_numpy(x), None).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    chief = slide_encoder("chief", in_dim=24, hidden=16, attn_dim=8)
    cm = chief.load()
    h = np.maximum(_lin(x, cm.attention_net[0]), 0)
    want = _softmax(_gated(h, cm.attention_net[3])[:, 0], 0) @ h
    np.testing.assert_allclose(chief.embed(cm, torch.from_numpy(x), None).numpy(), want, rtol=1e-5, atol=1e-6)


def test_madeleine_heads_pool_their_own_slices_and_are_projected():
    x = np.random.default_rng(1).normal(size=(7, 12)).astype(np.float32)
    mad = slide_encoder("madeleine", in_dim=12, hidden=8, heads=2)
    model = mad.load()
    t = torch.from_numpy(x)
    with torch.no_grad():
        tokens = model.wsi_embedders.pre_attn(t).numpy().reshape(7, 8, 2)   # '(e c)': head is the fast axis
    pooled = np.stack([_softmax(_gated(tokens[:, :, i], model.wsi_embedders.attn[i])[:, 0], 0) @ tokens[:, :, i]
                       for i in range(2)], axis=-1)                         # E x H
    want = _lin(pooled.reshape(-1), model.projector)
    np.testing.assert_allclose(mad.embed(model, t, None).numpy(), want, rtol=1e-5, atol=1e-5)


def test_checkpoints_load_strictly_and_a_wrong_one_is_named(tmp_path):
    small = {"in_dim": 12, "hidden": 8, "heads": 2}
    source = slide_encoder("madeleine", **small).load()
    path = tmp_path / "model.pt"
    torch.save({f"module.{k}": v for k, v in source.state_dict().items()}, path)  # DataParallel's prefix
    loaded_enc = slide_encoder("madeleine", **small)
    loaded = loaded_enc.load(weights_path=path)
    x = torch.randn(5, 12)
    assert torch.equal(loaded_enc.embed(loaded, x, None), loaded_enc.embed(source, x, None))
    sha = loaded_enc.weights_sha256
    assert loaded_enc.identity().endswith(f"weights={sha}") and len(sha) == 64
    with pytest.raises(PathkitError, match="does not fit"):
        slide_encoder("madeleine", in_dim=12, hidden=8, heads=3).load(weights_path=path)


def test_mean_baseline_is_the_mean_of_the_patch_features():
    x = torch.randn(6, 64)
    enc = slide_encoder("mean-tiny-vit")
    assert enc.parameter_count() == 0
    assert torch.allclose(enc.embed(enc.load(), x, None), x.mean(0))


# --------------------------------------------------------------------------- the store
def _features(folder, slide_id, seed, encoder="tiny-vit", dim=64, tile_px=128, mpp=1.0):
    from pathkit_core.features.store import write_features

    rng = np.random.default_rng(seed)
    return write_features(folder / f"{slide_id}.safetensors", rng.normal(size=(5, dim)).astype(np.float32),
                          rng.integers(0, 1000, (5, 2)),
                          {"slide_id": slide_id, "encoder": encoder, "tile_px": tile_px, "target_mpp": mpp})


def test_slide_embeddings_are_kept_and_recomputed_only_when_their_inputs_change(tmp_path):
    a, b = _features(tmp_path, "a", 0), _features(tmp_path, "b", 1)
    store = tmp_path / "store"
    first = embed_slides(slide_encoder("mean-tiny-vit"), [a, b], store)
    assert [r.status for r in first] == ["computed", "computed"]
    from pathkit_core.features.store import read_features

    assert torch.allclose(read_slide_embedding(first[0].path), read_features(a).features.float().mean(0))
    again = embed_slides(slide_encoder("mean-tiny-vit"), [a, b], store)
    assert [r.status for r in again] == ["reused", "reused"]
    _features(tmp_path, "b", 2)  # slide b's patch features change
    third = embed_slides(slide_encoder("mean-tiny-vit"), [a, b], store)
    assert [r.status for r in third] == ["reused", "computed"] and third[1].key != first[1].key
    # another slide encoder identity (other weights) recomputes every slide, under its own folder
    small = {"in_dim": 64, "embed_dim": 8, "attn_dim": 4, "num_classes": 2}
    w1, w2 = tmp_path / "w1.pt", tmp_path / "w2.pt"
    for seed, path in ((1, w1), (2, w2)):
        torch.manual_seed(seed)
        torch.save(slide_encoder("feather", **small).build().state_dict(), path)
    one = embed_slides(slide_encoder("feather", **small), [a, b], store, weights_path=w1)
    two = embed_slides(slide_encoder("feather", **small), [a, b], store, weights_path=w2)
    assert [r.status for r in one] == [r.status for r in two] == ["computed", "computed"]
    assert embed_slides(slide_encoder("feather", **small), [a], store, weights_path=w2)[0].status == "reused"
    assert one[0].path.parent.name == "feather" and one[0].key != two[0].key


def test_a_titan_like_mismatch_is_refused_before_anything_is_embedded(tmp_path):
    uni = _features(tmp_path, "u", 0, encoder="uni", dim=1024, tile_px=256, mpp=0.5)
    store = tmp_path / "store"
    with pytest.raises(PathkitError, match=r"u\.safetensors: slide encoder 'feather' reads 'conch15'"):
        embed_slides(slide_encoder("feather"), [uni], store)
    assert not store.exists()
