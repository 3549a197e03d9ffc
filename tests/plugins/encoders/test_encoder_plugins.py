"""Encoder plugins: published architectures (full size on the meta device), checkpoint round trips
through the real loading path on tiny configs, key layouts, pooling, preprocessing, tiny-vit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pathkit_core.contracts import PathkitError
from pathkit_core.plugins import get_component
from tests._imports import imported_by

pytest.importorskip("pathkit_encoders")

from pathkit_encoders._vit import seeded  # noqa: E402

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
HOPTIMUS = ((0.707223, 0.578729, 0.703617), (0.211883, 0.230117, 0.177517))
OPENAI = ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))

# name: (dim, tile px, tile mpp, precision, hub id, model input px, (mean, std), exact parameter count)
# Counts: UNI2-h 681 M (docs/encoders.md), UNI ViT-L/16 ~303 M, CONCH v1.5 ViT-L trunk + pooler,
# H-optimus and Prov-GigaPath ViT-g ~1.13 B, Virchow2 ViT-H ~632 M (their papers / model cards).
PUBLISHED = {
    "uni2h": (1536, 256, 0.5, "bf16", "MahmoodLab/UNI2-h", 224, IMAGENET, 681_394_176),
    "conch15": (768, 512, 0.5, "fp16", "MahmoodLab/conchv1_5", 448, IMAGENET, 306_109_184),
    "hoptimus1": (1536, 224, 0.5, "fp16", "bioptimus/H-optimus-1", 224, HOPTIMUS, 1_134_774_272),
    "virchow2": (2560, 224, 0.5, "fp16", "paige-ai/Virchow2", 224, IMAGENET, 631_239_424),
    "gigapath": (1536, 256, 0.5, "fp16", "prov-gigapath/prov-gigapath", 224, IMAGENET, 1_134_953_984),
    "uni": (1024, 256, 0.5, "fp16", "MahmoodLab/UNI", 224, IMAGENET, 303_350_784),
    "hoptimus0": (1536, 224, 0.5, "fp16", "bioptimus/H-optimus-0", 224, HOPTIMUS, 1_134_774_272),
    # Virchow v1: the model card's "632 M" (Virchow2's 631,239,424 is given as 632 M too); no registers
    "virchow": (2560, 224, 0.5, "fp16", "paige-ai/Virchow", 224, IMAGENET, 631_229_184),
    # EAGLE: Prov-GigaPath fine-tuned, the same architecture (GOLDMARK's loader builds prov-gigapath)
    "eagle": (1536, 256, 0.5, "fp16", None, 224, IMAGENET, 1_134_953_984),
    # CONCH v1: ViT-B/16 at 448 px + contrastive pooler + LayerNorm + projection (the caption
    # pooler of the checkpoint, 2,563,584 more, is not part of the embedding; with it the image
    # tower is the paper's "90M" ViT-B/16)
    "conch": (512, 512, 0.5, "fp16", "MahmoodLab/CONCH", 448, OPENAI, 87_829_248),
}
TINY = {"depth": 1, "embed_dim": 32, "num_heads": 2}
TINY_CONCH = {**TINY, "pooler_dim": 16, "pooler_heads": 2}
TINY_CONCH1 = {**TINY, "contrast_dim": 16, "pooler_heads": 2}
TINY_OF = {"conch15": TINY_CONCH, "conch": TINY_CONCH1}


def _encoder(name, **overrides):
    cls = get_component("encoder", name)
    return cls(arch_overrides=overrides or None)


def _tiny(name):
    return _encoder(name, **TINY_OF.get(name, TINY))


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_registered_with_the_published_facts(name):
    dim, px, mpp, precision, hub, input_px, (mean, std), _ = PUBLISHED[name]
    cls = get_component("encoder", name)
    assert (cls.embed_dim, cls.tile_spec.tile_px, cls.tile_spec.mpp, cls.precision) == (dim, px, mpp, precision)
    w = cls.weights
    assert w.hf_hub_id == hub and w.input_size == input_px and w.mean == mean and w.std == std
    assert w.license and w.citation and cls.is_pathology_model
    assert cls().input_px == input_px
    info = cls.describe()
    assert info["timm_model"] and info["weights"]["hf_hub_id"] == hub


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_full_architecture_size_and_output_dimension_on_meta(name):
    dim, *_, input_px, _, params = PUBLISHED[name]
    enc = _encoder(name)
    model = enc.wrap(enc.build_backbone("meta"))
    assert sum(p.numel() for p in model.parameters()) == params
    with torch.no_grad():
        out = model(torch.empty(2, 3, input_px, input_px, device="meta"))
    assert tuple(out.shape) == (2, dim) and enc.feature_dim == dim


def test_architecture_details_on_meta():
    uni2h = _encoder("uni2h").build_backbone("meta")
    assert uni2h.num_prefix_tokens == 9 and uni2h.no_embed_class  # class + 8 registers
    assert tuple(uni2h.pos_embed.shape) == (1, 256, 1536) and type(uni2h.blocks[0].mlp).__name__ == "GluMlp"
    hopt = _encoder("hoptimus1").build_backbone("meta")
    assert hopt.num_prefix_tokens == 5 and hopt.global_pool == "token" and len(hopt.blocks) == 40
    virchow = _encoder("virchow2").build_backbone("meta")
    assert virchow.num_prefix_tokens == 5 and virchow.global_pool == ""
    giga = _encoder("gigapath").build_backbone("meta")
    assert giga.patch_embed.patch_size == (16, 16) and len(giga.blocks) == 40
    conch = _encoder("conch15").build_backbone("meta")
    assert tuple(conch.trunk.pos_embed.shape) == (1, 197, 1024) and len(conch.trunk.blocks) == 24
    pool = conch.attn_pool_contrast
    assert tuple(pool.query.shape) == (1, 768) and tuple(pool.to_kv.weight.shape) == (1536, 1024)
    assert pool.n_head == 8 and conch.ln_contrast.normalized_shape == (768,)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_tiny_checkpoint_round_trip_through_the_real_loading_path(name, tmp_path):
    enc = _tiny(name)
    path = enc.random_checkpoint(tmp_path / f"{name}.safetensors", seed=3)
    with seeded(3):
        original = enc.wrap(enc.build_backbone("cpu")).eval()
    loaded = _tiny(name).load("cpu", weights_path=path)
    x = torch.randn(2, 3, enc.input_px, enc.input_px, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        want, got = original(x), loaded(x)
    expected_dim = 16 if name in TINY_OF else 64 if name.startswith("virchow") else 32
    assert got.shape == (2, expected_dim) and enc.feature_dim == expected_dim
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert not any(p.requires_grad for p in loaded.parameters())


ALL_ENCODERS = sorted([*PUBLISHED, "tiny-vit", "tiny-vit-wide"])


def _small(name, **extra):
    """A small configuration of `name`'s architecture (tiny-vit is small already)."""
    if name.startswith("tiny-vit"):
        return _encoder(name, **extra)
    return _encoder(name, **TINY_OF.get(name, TINY), **extra)


@pytest.mark.parametrize("name", ALL_ENCODERS)
def test_fixed_size_build_gives_the_features_of_the_dynamic_size_build(name):
    """Built for the native input size, every encoder returns what the public loaders'
    `dynamic_img_size=True` build returns there; only CONCH v1.5, whose 448 px input runs on a
    224 px position grid, keeps the dynamic patch embedding."""
    fixed, dynamic = _small(name), _small(name, dynamic_img_size=True)
    assert fixed.architecture()["dynamic_img_size"] is (name == "conch15")
    with seeded(4):
        want_model = dynamic.wrap(dynamic.build_backbone("cpu")).eval()
    got_model = fixed.wrap(fixed.build_backbone("cpu")).eval()
    got_model.load_state_dict(want_model.state_dict())
    x = torch.randn(3, 3, fixed.input_px, fixed.input_px, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        want, got = want_model(x), got_model(x)
    assert got.shape == (3, fixed.feature_dim)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    if name != "conch15":  # a fixed-size model refuses another input size instead of resampling
        with pytest.raises(AssertionError, match="doesn't match model"), torch.inference_mode():
            got_model(torch.zeros(1, 3, fixed.input_px + 16, fixed.input_px + 16))


def test_conch_reuses_its_resampled_position_grid_only_while_the_weights_are_unchanged():
    with seeded(0):
        tower = _tiny("conch15").build_backbone("cpu").eval()
    x = torch.randn(2, 3, 448, 448, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        fresh = tower(x)  # no cache outside inference mode
    assert tower._grid_cache is None
    with torch.inference_mode():
        first, second = tower(x), tower(x)
        cached = tower._grid_cache[1]
        assert tower.position_embedding(28, 28) is cached
    torch.testing.assert_close(first, fresh, rtol=0, atol=0)
    torch.testing.assert_close(second, fresh, rtol=0, atol=0)
    with torch.no_grad():
        tower.trunk.pos_embed.mul_(2.0)  # new weights: the grid is resampled again
    with torch.inference_mode():
        changed = tower(x)
        assert tower.position_embedding(28, 28) is not cached
    assert not torch.allclose(changed, fresh)


def test_pickle_checkpoint_loads_like_safetensors(tmp_path):
    from safetensors.torch import load_file

    enc = _tiny("uni")
    st = enc.random_checkpoint(tmp_path / "u.safetensors", seed=1)
    torch.save(load_file(str(st)), tmp_path / "pytorch_model.bin")
    a, b = _tiny("uni").load(weights_path=st), _tiny("uni").load(weights_path=tmp_path / "pytorch_model.bin")
    x = torch.randn(1, 3, 224, 224)
    with torch.inference_mode():
        torch.testing.assert_close(a(x), b(x), rtol=0, atol=0)


def test_a_checkpoint_of_another_architecture_names_the_mismatches(tmp_path):
    path = _tiny("uni").random_checkpoint(tmp_path / "uni.safetensors")
    with pytest.raises(PathkitError) as err:
        _tiny("uni2h").load(weights_path=path)
    text = str(err.value)
    assert "does not fit the uni2h (vit_giant_patch14_224)" in text
    assert "missing key(s): reg_token" in text
    assert "patch_embed.proj.weight: checkpoint (32, 3, 16, 16) vs model (32, 3, 14, 14)" in text


def test_overridden_architecture_needs_an_explicit_checkpoint():
    with pytest.raises(PathkitError, match="not the published architecture"):
        _tiny("uni2h").load()


def test_virchow_embedding_is_class_token_and_mean_of_patch_tokens():
    enc = _tiny("virchow2")
    with seeded(0):
        backbone = enc.build_backbone("cpu").eval()
    model = enc.wrap(backbone)
    x = torch.randn(2, 3, 224, 224)
    with torch.inference_mode():
        tokens = backbone.forward_features(x)  # class, 4 registers, 256 patches
        got = model(x)
    assert tokens.shape[1] == 1 + 4 + 256
    torch.testing.assert_close(got, torch.cat([tokens[:, 0], tokens[:, 5:].mean(1)], dim=-1))


def test_conch_position_grid_is_resampled_by_scale_factor():
    import torch.nn.functional as F
    from pathkit_encoders._modules import interpolate_grid_pos_embed

    pos = torch.randn(1, 1 + 14 * 14, 8, generator=torch.Generator().manual_seed(0))
    assert interpolate_grid_pos_embed(pos, 14, 14) is pos
    out = interpolate_grid_pos_embed(pos, 28, 28)
    assert out.shape == (1, 1 + 28 * 28, 8) and torch.equal(out[:, 0], pos[:, 0])
    grid = pos[:, 1:].reshape(1, 14, 14, 8).permute(0, 3, 1, 2)
    by_factor = F.interpolate(grid, scale_factor=(28.1 / 14, 28.1 / 14), mode="bicubic")
    by_size = F.interpolate(grid, size=(28, 28), mode="bicubic")
    reference = by_factor.permute(0, 2, 3, 1).reshape(1, 784, 8)
    torch.testing.assert_close(out[:, 1:], reference)
    # The DINO-style factor gives different values from a size-based resample.
    assert not torch.allclose(by_size.permute(0, 2, 3, 1).reshape(1, 784, 8), reference)


def test_conch_full_coca_checkpoint_and_other_position_grids_load(tmp_path):
    from safetensors.torch import load_file, save_file
    from timm.layers import resample_abs_pos_embed

    enc = _tiny("conch15")
    path = enc.random_checkpoint(tmp_path / "v.safetensors", seed=2)
    sd = load_file(str(path))
    grid32 = torch.randn(1, 1 + 32 * 32, 32, generator=torch.Generator().manual_seed(1))
    coca = {f"visual.{k}": v for k, v in sd.items()}
    coca["visual.trunk.pos_embed"] = grid32
    coca["visual.attn_pool_caption.query"] = torch.zeros(256, 16)
    coca["visual.ln_caption.weight"] = torch.ones(16)
    coca["text.token_embedding.weight"] = torch.zeros(10, 16)
    coca["logit_scale"] = torch.ones(())
    save_file(coca, str(tmp_path / "coca.safetensors"))
    model = _tiny("conch15").load(weights_path=tmp_path / "coca.safetensors")
    want = resample_abs_pos_embed(grid32, new_size=[14, 14], num_prefix_tokens=1, interpolation="bilinear",
                                  antialias=False, verbose=False)
    torch.testing.assert_close(model.trunk.pos_embed, want)
    torch.testing.assert_close(model.attn_pool_contrast.query, sd["attn_pool_contrast.query"])
    with torch.inference_mode():
        assert model(torch.randn(1, 3, 448, 448)).shape == (1, 16)


def test_conch_layer_scale_starts_at_one():
    with seeded(0):
        tower = _tiny("conch15").build_backbone("cpu")
    assert torch.equal(tower.trunk.blocks[0].ls1.gamma, torch.ones(32))


@pytest.mark.parametrize(
    ("name", "tile_px", "value"),
    [("uni2h", 256, 128), ("conch15", 512, 200), ("hoptimus1", 224, 90), ("gigapath", 256, 17), ("virchow2", 224, 255),
     ("virchow", 224, 3), ("eagle", 256, 77), ("conch", 512, 140)],
)
def test_transform_of_a_constant_tile_matches_hand_normalisation(name, tile_px, value):
    enc = _encoder(name)
    mean, std = PUBLISHED[name][6]
    out = enc.transform(np.full((2, tile_px, tile_px, 3), value, dtype=np.uint8))
    input_px = PUBLISHED[name][5]
    assert out.shape == (2, 3, input_px, input_px) and out.dtype == torch.float32
    for c in range(3):
        expected = (value / 255.0 - mean[c]) / std[c]
        torch.testing.assert_close(out[:, c], torch.full_like(out[:, c], expected), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["uni2h", "gigapath", "virchow2", "conch15", "virchow", "eagle", "conch"])
def test_transform_matches_the_reference_pil_pipeline(name):
    from PIL import Image
    from torchvision import transforms as T

    enc = _encoder(name)
    tile_px = enc.tile_spec.tile_px
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:tile_px, 0:tile_px]
    smooth = np.stack([xx, yy, (xx + yy) // 2], axis=-1) * (255 / (2 * tile_px))
    tile = np.clip(smooth + rng.normal(0, 20, size=smooth.shape) + 60, 0, 255).astype(np.uint8)
    mode = T.InterpolationMode.BICUBIC if enc.interpolation == "bicubic" else T.InterpolationMode.BILINEAR
    steps = [T.Resize(enc.resize_px, interpolation=mode)]
    if enc.crop_px:
        steps.append(T.CenterCrop(enc.crop_px))
    reference = T.Compose([*steps, T.ToTensor(), T.Normalize(enc.mean, enc.std)])(Image.fromarray(tile))
    ours = enc.transform(tile)[0]
    assert ours.shape == reference.shape
    # Tensor and PIL resampling agree to about one grey level (1/255/std ~ 0.017).
    assert (ours - reference).abs().mean() < 0.01
    assert (ours - reference).abs().max() < 0.05


def test_transform_rejects_bad_tiles():
    enc = _encoder("uni2h")
    with pytest.raises(PathkitError, match="uint8"):
        enc.transform(np.zeros((1, 256, 256, 3), dtype=np.float32))
    with pytest.raises(PathkitError, match="RGB"):
        enc.transform(np.zeros((1, 256, 256, 4), dtype=np.uint8))


def test_tiny_vit_is_deterministic_and_labelled_not_pathology():
    cls = get_component("encoder", "tiny-vit")
    assert not cls.is_pathology_model and "NOT a pathology model" in cls.description
    a, b = cls(), cls()
    ma, mb = a.load(), b.load()
    for (ka, va), (kb, vb) in zip(ma.state_dict().items(), mb.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)
    assert a.weights_sha256 == "random-init:seed=0" and a.weights_path is None
    tiles = np.random.default_rng(0).integers(0, 255, (3, 128, 128, 3), dtype=np.uint8)
    with torch.inference_mode():
        feats = ma(a.transform(tiles))
    assert feats.shape == (3, 64) and torch.isfinite(feats).all() and feats.std(0).mean() > 0
    state = ma.state_dict()
    torch.manual_seed(123)
    other = type(a)()
    other.random_init_seed = 1
    assert not torch.equal(other.load().state_dict()["pos_embed"], state["pos_embed"])


def test_tiny_vit_needs_no_checkpoint_and_doctor_sees_it_built_in():
    from pathkit_core.features.weights import find_weights

    cls = get_component("encoder", "tiny-vit")
    assert cls.weights.hf_hub_id is None and cls.weights.filename is None
    path, looked = find_weights(cls)
    assert path is None and all("Hugging Face" not in p for p in looked)


def test_missing_paper_encoder_weights_name_the_places_and_terms(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("PATHKIT_WEIGHTS_DIR", raising=False)
    monkeypatch.delenv("PATHKIT_ALLOW_DOWNLOAD", raising=False)
    with pytest.raises(PathkitError) as err:
        _encoder("conch15").load()
    text = str(err.value)
    assert "pytorch_model_vision.bin" in text and "MahmoodLab/conchv1_5" in text
    assert "gated model" in text and "CC-BY-NC-ND-4.0" in text


def test_weights_dir_checkpoint_is_found_for_the_published_name(monkeypatch, tmp_path):
    enc = _tiny("hoptimus0")
    folder = tmp_path / "w" / "hoptimus0"
    enc.random_checkpoint(folder / "model.safetensors", seed=0)
    monkeypatch.setenv("PATHKIT_WEIGHTS_DIR", str(tmp_path / "w"))
    from pathkit_core.features.weights import find_weights

    path, _ = find_weights(type(enc))
    assert path == folder / "model.safetensors"


def test_plugin_import_stays_light():
    code = (
        "import pathkit_encoders.uni2h, pathkit_encoders.conch15, pathkit_encoders.hoptimus1\n"
        "import pathkit_encoders.virchow2, pathkit_encoders.gigapath, pathkit_encoders.uni\n"
        "import pathkit_encoders.hoptimus0, pathkit_encoders.tiny_vit\n"
        "from pathkit_core.plugins import get_plugin_manager\n"
        "reg = get_plugin_manager()\n"
        "infos = [reg.get('encoder', n).describe() for n in reg.names('encoder')]\n"
        "assert any(i['architecture'].get('mlp_layer') == 'timm.layers.SwiGLUPacked' for i in infos)\n"
    )
    assert imported_by(code, ("torch", "timm", "torchvision")) == []


# --------------------------------------------------------------------------- full size (slow)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["uni2h", "conch15", "hoptimus1", "conch"])
def test_full_paper_encoder_random_checkpoint_loads_and_embeds(name, tmp_path):
    """The exact published architecture, random weights saved as safetensors, loaded through
    the same path a real checkpoint takes, one tile at the encoder's tile spec."""
    torch.set_num_threads(2)
    enc = _encoder(name)
    path = enc.random_checkpoint(tmp_path / "model.safetensors", seed=0, dtype="float16")
    model = get_component("encoder", name)().load("cpu", weights_path=path)
    tile = np.random.default_rng(0).integers(0, 255, (1, enc.tile_spec.tile_px, enc.tile_spec.tile_px, 3),
                                             dtype=np.uint8)
    with torch.inference_mode():
        feats = model(enc.transform(tile))
    assert feats.shape == (1, PUBLISHED[name][0]) and torch.isfinite(feats).all()
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[name][7]


def test_tiny_vit_wide_shares_the_tile_spec_and_differs_in_weights():
    base, wide = get_component("encoder", "tiny-vit"), get_component("encoder", "tiny-vit-wide")
    assert wide.tile_spec == base.tile_spec and not wide.is_pathology_model
    enc = wide()
    model = enc.load()
    tiles = np.random.default_rng(1).integers(0, 255, (2, 128, 128, 3), dtype=np.uint8)
    with torch.inference_mode():
        feats = model(enc.transform(tiles))
    assert feats.shape == (2, 96) and enc.weights_sha256 == "random-init:seed=1"


# --------------------------------------------------------------------------- features unchanged

# Computed with the encoders as they were before CONCH v1, Virchow v1 and EAGLE were added (the
# tiny configuration of each architecture, seeded weights, a fixed input): the first four
# embedding values, and the sha256 (16 hex) of the uint8 array the patch path (HepatoBench)
# hands the encoder for a 150 px patch. A change to a shared piece (the ViT base class, the
# poolers, whole-image preprocessing) that moved an existing encoder's features fails here.
PINNED = {
    "uni2h": ("73c43aab8cf9cf28", [-0.0009589044, -0.0008049426, 0.0002395122, 0.000148144]),
    "conch15": ("49638d803810dc13", [-0.02028219, -0.966414, 0.6439351, 0.6736317]),
    "hoptimus1": ("73c43aab8cf9cf28", [-0.0009545015, -0.0008145192, 0.0002087378, 0.0001518876]),
    "virchow2": ("581728e170279aee", [0.6923583, 0.3599448, -0.5420013, -0.4168438]),
    # GigaPath's embedding is pinned; its patch path changed on purpose (resize 256, crop 224:
    # test_gigapath_patch_path_is_its_own_resize_and_centre_crop)
    "gigapath": (None, [-0.4141595, 0.7838156, -0.6039829, -1.159484]),
    "uni": ("73c43aab8cf9cf28", [-0.7856393, -1.110701, 0.1564497, 0.6709409]),
    "hoptimus0": ("73c43aab8cf9cf28", [-0.0009545015, -0.0008145192, 0.0002087378, 0.0001518876]),
    "tiny-vit": ("507f49c04b0df502", [-0.3970132, -0.3889825, 1.753315, -1.044585]),
    "tiny-vit-wide": ("507f49c04b0df502", [0.4463418, 0.9046884, -0.8378389, -0.5573876]),
}


def _patch_png(path):
    from PIL import Image

    Image.fromarray(np.random.default_rng(1).integers(0, 255, (150, 150, 3), dtype=np.uint8)).save(path)
    return path


@pytest.mark.parametrize("name", sorted(PINNED))
def test_features_of_every_existing_encoder_are_unchanged(name, tmp_path):
    import hashlib

    from pathkit_core.features.images import Preprocessing, _Images

    patch_digest, head = PINNED[name]
    enc = _encoder(name) if name.startswith("tiny-vit") else _tiny(name)
    with seeded(3):
        model = enc.wrap(enc.build_backbone("cpu")).eval()
    x = torch.randn(2, 3, enc.input_px, enc.input_px, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        got = model(x)[0, :4]
    torch.testing.assert_close(got, torch.tensor(head), rtol=1e-4, atol=1e-8)
    if patch_digest is not None:
        pixels = _Images([str(_patch_png(tmp_path / "p.png"))], Preprocessing.of(enc))[0][1]
        assert hashlib.sha256(pixels.tobytes()).hexdigest()[:16] == patch_digest


@pytest.mark.parametrize("name", ["gigapath", "eagle"])
def test_gigapath_patch_path_is_its_own_resize_and_centre_crop(name, tmp_path):
    """Prov-GigaPath's transform (resize 256 bicubic, centre crop 224) on a 150 px patch keeps
    224/256 = 87.5 % of the field, where resizing the whole patch to 224 keeps all of it."""
    from PIL import Image
    from torchvision import transforms as T

    from pathkit_core.features.images import Preprocessing, _Images

    prep = Preprocessing.of(_encoder(name))
    assert (prep.size, prep.resize, prep.interpolation) == (224, 256, "bicubic")
    path = _patch_png(tmp_path / "p.png")
    ours = _Images([str(path)], prep)[0][1]
    reference = T.Compose([T.Resize(256, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(224)])
    want = np.asarray(reference(Image.open(path).convert("RGB")))
    assert ours.shape == (224, 224, 3) and np.array_equal(ours, want)
    whole = np.asarray(Image.open(path).convert("RGB").resize((224, 224), resample=3))
    assert not np.array_equal(ours, whole)
    # a non-square patch: the shorter side to 256, then the centre, as torchvision does
    Image.fromarray(np.random.default_rng(2).integers(0, 255, (150, 210, 3), dtype=np.uint8)).save(tmp_path / "r.png")
    got = _Images([str(tmp_path / "r.png")], prep)[0][1]
    assert np.array_equal(got, np.asarray(reference(Image.open(tmp_path / "r.png").convert("RGB"))))
    # the shard key of the encoders that resize whole is what it was (no re-encoding of their stores)
    assert "resize" not in Preprocessing.of(_encoder("uni")).key() and prep.key()["resize"] == 256


# --------------------------------------------------------------------------- the new encoders


def test_model_card_parameter_counts_of_the_new_encoders():
    """Virchow v1's card: 632 M (Virchow2's exact 631,239,424 is stated as 632 M as well); EAGLE is
    Prov-GigaPath (1.13 B); CONCH v1's image tower is a "90M" ViT-B/16 in the paper, which counts
    the captioning pooler the embedding does not use."""
    from torch import nn

    counts = {n: _encoder(n).parameter_count() for n in ("virchow", "virchow2", "eagle", "gigapath", "conch")}
    assert round(counts["virchow"] / 1e6) == 631 and abs(counts["virchow"] - 632e6) / 632e6 < 0.002
    assert counts["virchow2"] - counts["virchow"] == 8 * 1280  # Virchow2's 4 registers (+ their class-free slots)
    assert counts["eagle"] == counts["gigapath"] == 1_134_953_984
    with torch.device("meta"):
        caption = nn.ModuleDict({"attn": nn.MultiheadAttention(768, 8, kdim=768, vdim=768),
                                 "ln_q": nn.LayerNorm(768), "ln_k": nn.LayerNorm(768), "ln_caption": nn.LayerNorm(768)})
    caption_params = sum(p.numel() for p in caption.parameters()) + 256 * 768  # + its 256 queries
    assert caption_params == 2_563_584 and round((counts["conch"] + caption_params) / 1e6) == 90


def test_virchow_v1_has_no_register_tokens_and_pools_like_virchow2():
    v1 = _encoder("virchow").build_backbone("meta")
    assert v1.num_prefix_tokens == 1 and tuple(v1.pos_embed.shape) == (1, 257, 1280) and len(v1.blocks) == 32
    assert type(v1.blocks[0].mlp).__name__ == "GluMlp"
    with seeded(0):
        tiny = _tiny("virchow")
        backbone = tiny.build_backbone("cpu").eval()
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        tokens = backbone.forward_features(x)
        got = tiny.wrap(backbone)(x)
    torch.testing.assert_close(got, torch.cat([tokens[:, 0], tokens[:, 1:].mean(1)], -1), rtol=0, atol=0)


def test_eagle_reads_goldmarks_training_payload_and_only_local_weights(tmp_path, monkeypatch):
    enc = _tiny("eagle")
    flat = enc.random_checkpoint(tmp_path / "flat.safetensors", seed=2)
    from safetensors.torch import load_file

    state = load_file(str(flat))
    payload = {"tile_model": {f"module.{k}": v for k, v in state.items()}, "epoch": 12}
    torch.save(payload, tmp_path / "gigapath_ft_checkpoint.pth")
    loaded = _tiny("eagle").load("cpu", weights_path=tmp_path / "gigapath_ft_checkpoint.pth")
    reference = _tiny("eagle").load("cpu", weights_path=flat)
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        torch.testing.assert_close(loaded(x), reference(x), rtol=0, atol=0)
    cls = get_component("encoder", "eagle")
    assert cls.weights.hf_hub_id is None and not cls.weights.gated
    monkeypatch.delenv("PATHKIT_WEIGHTS_DIR", raising=False)
    with pytest.raises(PathkitError, match=r"(?s)no checkpoint found for encoder 'eagle'.*gigapath_ft_checkpoint\.pth"):
        cls().load("cpu", allow_download=True)  # nothing to download from: a local file only


def test_conch_v1_embeds_into_the_joint_space_and_loads_the_full_coca_checkpoint(tmp_path):
    from safetensors.torch import load_file, save_file

    cls = get_component("encoder", "conch")
    assert cls.joint_space == "conch-v1" and cls.describe()["joint_space"] == "conch-v1"
    assert all(get_component("encoder", n).joint_space is None for n in PINNED)
    full = _encoder("conch").build_backbone("meta")
    assert tuple(full.trunk.pos_embed.shape) == (1, 785, 768) and len(full.trunk.blocks) == 12
    attn = full.attn_pool_contrast.attn
    assert tuple(attn.k_proj_weight.shape) == (512, 768) and attn.num_heads == 8
    assert tuple(full.proj_contrast.shape) == (512, 512) and full.trunk.blocks[0].ls1.__class__.__name__ == "Identity"
    enc = _tiny("conch")
    vision = load_file(str(enc.random_checkpoint(tmp_path / "v.safetensors", seed=1)))
    # the public file: the whole CoCa model, vision under "visual.", a captioning pooler, text tower
    coca = {f"visual.{k}": v for k, v in vision.items()}
    coca.update({"visual.attn_pool_caption.query": torch.zeros(4, 16), "visual.ln_caption.weight": torch.ones(16),
                 "text.token_embedding.weight": torch.zeros(8, 16), "logit_scale": torch.tensor(2.0)})
    save_file(coca, str(tmp_path / "pytorch_model.safetensors"))
    model = _tiny("conch").load("cpu", weights_path=tmp_path / "pytorch_model.safetensors")
    x = torch.randn(2, 3, 448, 448, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        got = model(x)
        tokens = model.trunk.forward_features(x)
        pool = model.attn_pool_contrast
        keys = pool.ln_k(tokens)
        query = pool.ln_q(pool.query).unsqueeze(0).expand(2, -1, -1)
        pooled = pool.attn(query, keys)[:, 0]
        want = model.ln_contrast(pooled) @ model.proj_contrast  # encode_image(proj_contrast=True, normalize=False)
    assert got.shape == (2, 16)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_conch_v1_pooler_matches_torch_multihead_attention_in_the_public_sequence_first_layout():
    """The public pooler runs nn.MultiheadAttention sequence-first (L, N, D) with permutes;
    pathkit's batch-first call gives the same numbers with the same parameters."""
    from pathkit_encoders._modules import ContrastPooler

    with seeded(0):
        pool = ContrastPooler(16, 24, n_head=2).eval()
    context = torch.randn(3, 10, 24, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        ours = pool(context)
        seq_first = torch.nn.MultiheadAttention(16, 2, kdim=24, vdim=24).eval()
        seq_first.load_state_dict(pool.attn.state_dict())  # the same parameter names and shapes
        keys = pool.ln_k(context).permute(1, 0, 2)
        query = pool.ln_q(pool.query).unsqueeze(1).repeat(1, 3, 1)
        public = seq_first(query, keys, keys, need_weights=False)[0].permute(1, 0, 2)
    torch.testing.assert_close(ours, public, rtol=1e-6, atol=1e-6)
