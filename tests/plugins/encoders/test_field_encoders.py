"""The field's patch encoders added as table rows (issue 40): every row's published parameter count
on the meta device, its magnification and tile size, and each foreign checkpoint layout (Hugging
Face ViT / Dinov2 / CLIP, open_clip, a DINOv2 training payload, timm 0.5's Swin, torchvision's
ResNet-50) loaded into the module pathkit builds, with the same outputs as the model it came from."""

from __future__ import annotations

import re

import pytest
import torch

from pathkit_core.plugins import get_component, get_plugin_manager

pytest.importorskip("pathkit_encoders")

from pathkit_encoders._vit import seeded  # noqa: E402
from pathkit_encoders.table import ROWS  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# The authors' rounded figures (model cards / papers), against which the exact counts are read.
PUBLISHED_ROUNDED_M = {
    "phikon": 86, "phikon-v2": 303, "kaiko-vits16": 22, "kaiko-vits8": 22, "kaiko-vitb16": 86, "kaiko-vitb8": 86,
    "kaiko-vitl14": 304, "lunit-vits8": 22, "gpfm": 303, "ctranspath": 28, "plip": 88, "quilt": 88,
    "resnet50-trunc": 9, "uni": 303, "uni2h": 681, "virchow2": 631, "conch15": 306,
}
# (tile px, mpp, magnification) the authors extract at (docs/encoders.md, "Every encoder").
FIELD_OF_VIEW = {
    "phikon": (224, 0.5, "20x"), "phikon-v2": (224, 0.5, "20x"), "kaiko-vitl14": (224, 0.5, "20x"),
    "lunit-vits8": (224, 0.5, "20x"), "gpfm": (224, 0.5, "20x"), "ctranspath": (256, 1.0, "10x"),
    "resnet50-trunc": (256, 0.5, "20x"), "conch15": (512, 0.5, "20x"), "uni2h": (256, 0.5, "20x"),
    "hibou-b": (224, 0.5, "20x"),
}


def _enc(name, **overrides):
    return get_component("encoder", name)(arch_overrides=overrides or None)


def test_at_least_25_patch_encoders_are_registered():
    assert len(get_plugin_manager().names("encoder")) >= 25
    assert set(ROWS) <= set(get_plugin_manager().names("encoder"))


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_row_builds_its_published_parameter_count_on_meta(name):
    spec = ROWS[name]
    enc = _enc(name)
    assert spec.parameters is not None, f"{name} states no parameter count"
    assert enc.parameter_count() == spec.parameters
    assert get_component("encoder", name).describe()["parameters"] == spec.parameters
    if name in PUBLISHED_ROUNDED_M:
        assert round(spec.parameters / 1e6) == PUBLISHED_ROUNDED_M[name]


@pytest.mark.parametrize("name", ["phikon", "phikon-v2", "kaiko-vitl14", "lunit-vits8", "gpfm", "ctranspath",
                                  "plip", "resnet50-trunc", "hibou-b"])
def test_new_rows_embed_to_their_width_on_meta(name):
    enc = _enc(name)
    model = enc.wrap(enc.build_backbone("meta"))
    with torch.no_grad():
        out = model(torch.empty(2, 3, enc.input_px, enc.input_px, device="meta"))
    assert tuple(out.shape) == (2, enc.embed_dim) == (2, enc.feature_dim)


@pytest.mark.parametrize("name", sorted(FIELD_OF_VIEW))
def test_magnification_and_tile_size_are_the_authors(name):
    px, mpp, mag = FIELD_OF_VIEW[name]
    info = get_component("encoder", name).describe()
    assert (info["tile_px"], info["mpp"], info["magnification"]) == (px, mpp, mag)


def test_list_encoders_json_gives_parameters_and_magnification(cli):
    import json

    result = cli("list", "encoders", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["phikon"]["parameters"] == 85_798_656 and rows["ctranspath"]["magnification"] == "10x"
    info = json.loads(cli("info", "kaiko-vitl14", "--json").stdout)[0]
    assert (info["tile_px"], info["magnification"], info["parameters"]) == (224, "20x", 304_370_688)


# --------------------------------------------------------------------------- foreign checkpoint layouts
TINY = {"depth": 1, "embed_dim": 32, "num_heads": 2}


def _timm_to_hf_vit(state, *, dinov2: bool):
    """pathkit's timm-layout state written in Hugging Face's ViTModel / Dinov2Model names (the
    inverse of the adapter, written out here independently)."""
    out = {"embeddings.cls_token": state["cls_token"], "embeddings.position_embeddings": state["pos_embed"],
           "embeddings.patch_embeddings.projection.weight": state["patch_embed.proj.weight"],
           "embeddings.patch_embeddings.projection.bias": state["patch_embed.proj.bias"],
           "layernorm.weight": state["norm.weight"], "layernorm.bias": state["norm.bias"]}
    if dinov2:
        out["embeddings.mask_token"] = torch.zeros(1, state["cls_token"].shape[-1])
    names = ({"norm1": "norm1", "norm2": "norm2", "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2"} if dinov2 else
             {"norm1": "layernorm_before", "norm2": "layernorm_after", "mlp.fc1": "intermediate.dense",
              "mlp.fc2": "output.dense"})
    names["attn.proj"] = "attention.output.dense"
    for key, value in state.items():
        m = re.match(r"blocks\.(\d+)\.(.+)\.(weight|bias|gamma)$", key)
        if not m:
            continue
        i, mod, part = m.groups()
        hf = f"encoder.layer.{i}."
        if mod == "attn.qkv":
            for name, chunk in zip(("query", "key", "value"), value.chunk(3), strict=True):
                out[f"{hf}attention.attention.{name}.{part}"] = chunk
        elif part == "gamma":
            out[f"{hf}layer_scale{mod[-1]}.lambda1"] = value
        else:
            out[f"{hf}{names[mod]}.{part}"] = value
    return out


@pytest.mark.parametrize("name", ["phikon", "phikon-v2"])
def test_hugging_face_vit_layouts_load_and_embed_as_their_source(name, tmp_path):
    enc = _enc(name, **TINY)
    with seeded(1):
        source = enc.build_backbone("cpu").eval()
    hf = _timm_to_hf_vit(source.state_dict(), dinov2=name == "phikon-v2")
    hf["pooler.dense.weight"] = torch.zeros(32, 32)  # a pooler the embedding does not use
    adapted = enc.adapt_state_dict({k: v for k, v in hf.items() if not k.startswith("pooler.")},
                                   enc.build_backbone("meta"))
    x = torch.randn(2, 3, 224, 224)
    target = enc.build_backbone("cpu").eval()
    target.load_state_dict(adapted, strict=True)
    with torch.no_grad():
        assert torch.equal(target(x), source(x))


def _clip_tower_layouts(tower):
    """One CLIP image tower's state in Hugging Face CLIPModel names and in open_clip names."""
    s = tower.state_dict()
    width = s["trunk.cls_token"].shape[-1]
    hf = {"vision_model.embeddings.class_embedding": s["trunk.cls_token"].reshape(width),
          "vision_model.embeddings.position_embedding.weight": s["trunk.pos_embed"][0],
          "vision_model.embeddings.patch_embedding.weight": s["trunk.patch_embed.proj.weight"],
          "vision_model.pre_layrnorm.weight": s["trunk.norm_pre.weight"],
          "vision_model.pre_layrnorm.bias": s["trunk.norm_pre.bias"],
          "vision_model.post_layernorm.weight": s["trunk.norm.weight"],
          "vision_model.post_layernorm.bias": s["trunk.norm.bias"],
          "visual_projection.weight": s["proj"].t(), "text_projection.weight": torch.zeros(4, 4),
          "logit_scale": torch.tensor(1.0)}
    oc = {"visual.class_embedding": hf["vision_model.embeddings.class_embedding"],
          "visual.positional_embedding": s["trunk.pos_embed"][0],
          "visual.conv1.weight": s["trunk.patch_embed.proj.weight"],
          "visual.ln_pre.weight": s["trunk.norm_pre.weight"], "visual.ln_pre.bias": s["trunk.norm_pre.bias"],
          "visual.ln_post.weight": s["trunk.norm.weight"], "visual.ln_post.bias": s["trunk.norm.bias"],
          "visual.proj": s["proj"], "text_projection": torch.zeros(4, 4)}
    hf_block = {"norm1": "layer_norm1", "norm2": "layer_norm2", "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2",
                "attn.proj": "self_attn.out_proj"}
    oc_block = {"norm1": "ln_1", "norm2": "ln_2", "mlp.fc1": "mlp.c_fc", "mlp.fc2": "mlp.c_proj",
                "attn.proj": "attn.out_proj"}
    for key, value in s.items():
        m = re.match(r"trunk\.blocks\.(\d+)\.(.+)\.(weight|bias)$", key)
        if not m:
            continue
        i, mod, part = m.groups()
        if mod == "attn.qkv":
            for name, chunk in zip(("q_proj", "k_proj", "v_proj"), value.chunk(3), strict=True):
                hf[f"vision_model.encoder.layers.{i}.self_attn.{name}.{part}"] = chunk
            oc[f"visual.transformer.resblocks.{i}.attn.in_proj_{part}"] = value
        else:
            hf[f"vision_model.encoder.layers.{i}.{hf_block[mod]}.{part}"] = value
            oc[f"visual.transformer.resblocks.{i}.{oc_block[mod]}.{part}"] = value
    return hf, oc


def test_plip_and_quilt_checkpoint_layouts_load_and_project_as_their_source():
    enc = _enc("plip", **TINY, proj_dim=16)
    with seeded(2):
        source = enc.build_backbone("cpu").eval()
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        want = source(x)
    assert want.shape == (2, 16) and enc.feature_dim == 16
    for layout in _clip_tower_layouts(source):
        target = enc.build_backbone("cpu").eval()
        target.load_state_dict(enc.adapt_state_dict(dict(layout), enc.build_backbone("meta")), strict=True)
        with torch.no_grad():
            assert torch.allclose(target(x), want, atol=1e-6)


def test_gpfm_training_payload_loads_as_its_teacher_backbone():
    enc = _enc("gpfm", **TINY)
    with seeded(3):
        source = enc.build_backbone("cpu").eval()
    teacher = {re.sub(r"^blocks\.(\d+)\.", r"blocks.0.\1.", k): v for k, v in source.state_dict().items()}
    payload = {"teacher": {**{f"backbone.{k}": v for k, v in teacher.items()},
                           "backbone.mask_token": torch.zeros(1, 32), "dino_head.mlp.0.weight": torch.zeros(2, 2)}}
    adapted = enc.adapt_state_dict(payload, enc.build_backbone("meta"))
    assert set(adapted) == set(source.state_dict())
    target = enc.build_backbone("cpu").eval()
    target.load_state_dict(adapted, strict=True)
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        assert torch.equal(target(x), source(x))


def test_ctranspath_reads_the_old_swin_layout_through_the_real_loading_path(tmp_path):
    small = {"depths": (1, 1, 1, 1)}
    enc = _enc("ctranspath", **small)
    with seeded(4):
        source = enc.build_backbone("cpu").eval()
    stem = [k for k in source.state_dict() if k.startswith("patch_embed.")]
    assert {"patch_embed.proj.0.weight", "patch_embed.proj.6.bias", "patch_embed.norm.weight"} <= set(stem)
    # timm 0.5's layout: each downsampling at the end of the stage before, masks saved as buffers
    old = {re.sub(r"layers\.(\d+)\.downsample", lambda m: f"layers.{int(m.group(1)) - 1}.downsample", k): v
           for k, v in source.state_dict().items()}
    old["layers.0.blocks.0.attn_mask"] = torch.zeros(1)
    path = tmp_path / "CHIEF_CTransPath.pth"
    torch.save({"model": old}, path)
    loaded = _enc("ctranspath", **small).load("cpu", weights_path=path)
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        assert torch.allclose(loaded(x), source(x), atol=1e-6)
        assert loaded(x).shape == (1, 768)


def test_resnet50_trunc_is_torchvisions_resnet50_cut_after_stage_3(tmp_path):
    import torchvision

    with seeded(5):
        tv = torchvision.models.resnet50(weights=None).eval()
    state = {k: v for k, v in tv.state_dict().items() if not k.endswith("num_batches_tracked")}  # the old file's
    path = tmp_path / "resnet50-19c8e357.pth"
    torch.save(state, path)
    model = _enc("resnet50-trunc").load("cpu", weights_path=path)
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        h = tv.maxpool(tv.relu(tv.bn1(tv.conv1(x))))
        want = tv.layer3(tv.layer2(tv.layer1(h))).mean(dim=(-2, -1))
        assert torch.allclose(model(x), want, atol=1e-5)


def _dinov2_by_hand(state: dict, x: torch.Tensor, heads: int, registers: int) -> torch.Tensor:
    """The DINOv2 repository's forward (as `hibou.build_model` builds it) written out over its own
    checkpoint layout: patch embedding, class token + positions, registers inserted after the class
    token, pre-norm blocks with layer scale and the fused SwiGLU (`w12`, `w3`), final norm, class token."""
    import torch.nn.functional as F

    tokens = F.conv2d(x, state["patch_embed.proj.weight"], state["patch_embed.proj.bias"], stride=14)
    tokens = tokens.flatten(2).transpose(1, 2)
    tokens = torch.cat([state["cls_token"].expand(len(x), -1, -1), tokens], dim=1) + state["pos_embed"]
    tokens = torch.cat([tokens[:, :1], state["register_tokens"].expand(len(x), -1, -1), tokens[:, 1:]], dim=1)
    width = tokens.shape[-1]
    depth = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("blocks."))

    def ln(t, name):
        return F.layer_norm(t, (width,), state[f"{name}.weight"], state[f"{name}.bias"], eps=1e-6)

    for i in range(depth):
        b = f"blocks.{i}."
        q, k, v = F.linear(ln(tokens, b + "norm1"), state[b + "attn.qkv.weight"], state[b + "attn.qkv.bias"]) \
            .reshape(len(x), -1, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
        attn = torch.softmax(q @ k.transpose(-2, -1) / (width // heads) ** 0.5, dim=-1) @ v
        attn = F.linear(attn.transpose(1, 2).reshape(len(x), -1, width), state[b + "attn.proj.weight"],
                        state[b + "attn.proj.bias"])
        tokens = tokens + state[b + "ls1.gamma"] * attn
        x1, x2 = F.linear(ln(tokens, b + "norm2"), state[b + "mlp.w12.weight"], state[b + "mlp.w12.bias"]).chunk(2, -1)
        ffn = F.linear(F.silu(x1) * x2, state[b + "mlp.w3.weight"], state[b + "mlp.w3.bias"])
        tokens = tokens + state[b + "ls2.gamma"] * ffn
    assert registers == state["register_tokens"].shape[1]
    return ln(tokens, "norm")[:, 0]


def test_hibou_b_reads_the_dinov2_layout_and_embeds_as_dinov2_computes_it(tmp_path):
    """Hibou-B's release in the DINOv2 repository's layout (positions including the class token's,
    registers without positions, `w12` / `w3`, a mask token) loads through the real path and gives
    the DINOv2 forward written by hand; width 48 keeps DINOv2's SwiGLU hidden rule (2/3 of 4x,
    rounded to 8) equal to the packed width timm builds, as at 768."""
    small = {"depth": 2, "embed_dim": 48, "num_heads": 2}
    g = torch.Generator().manual_seed(0)
    grid = 16 * 16
    shapes = {"cls_token": (1, 1, 48), "pos_embed": (1, 1 + grid, 48), "register_tokens": (1, 4, 48),
              "mask_token": (1, 48), "patch_embed.proj.weight": (48, 3, 14, 14), "patch_embed.proj.bias": (48,),
              "norm.weight": (48,), "norm.bias": (48,)}
    for i in range(2):
        b = f"blocks.{i}."
        shapes.update({b + "norm1.weight": (48,), b + "norm1.bias": (48,), b + "attn.qkv.weight": (144, 48),
                       b + "attn.qkv.bias": (144,), b + "attn.proj.weight": (48, 48), b + "attn.proj.bias": (48,),
                       b + "ls1.gamma": (48,), b + "norm2.weight": (48,), b + "norm2.bias": (48,),
                       b + "mlp.w12.weight": (256, 48), b + "mlp.w12.bias": (256,), b + "mlp.w3.weight": (48, 128),
                       b + "mlp.w3.bias": (48,), b + "ls2.gamma": (48,)})
    native = {k: torch.randn(shape, generator=g) * 0.2 for k, shape in shapes.items()}
    path = tmp_path / "hibou-b.pth"
    torch.save(native, path)
    model = _enc("hibou-b", **small).load("cpu", weights_path=path)
    x = torch.randn(2, 3, 224, 224, generator=g)
    with torch.no_grad():
        assert torch.allclose(model(x), _dinov2_by_hand(native, x, heads=2, registers=4), atol=1e-4)
