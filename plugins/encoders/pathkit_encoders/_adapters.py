"""Checkpoint adapters: a published checkpoint's key layout mapped onto the module pathkit builds.

A row of `pathkit_encoders.table` names one of these as its `adapt_state_dict`; each takes the
state dict read from the file and the freshly built backbone (meta device) and returns the state
dict to load strictly. Torch and timm are imported only when a checkpoint is adapted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import nn

State = dict[str, "torch.Tensor"]

# Prefixes of a full CONCH (CoCa) checkpoint that are not the contrastive image embedding: the
# text tower, the captioning pooler and the text decoder.
COCA_NOT_VISION = ("text.", "attn_pool_caption.", "ln_caption.", "logit_scale", "text_decoder.")
# CONCH v1's vision part also holds the captioning pooler and its head.
COCA_NOT_CONTRAST = ("attn_pool_caption.", "ln_caption.", "head.")


def strip_data_parallel(state_dict: State, backbone: nn.Module | None = None) -> State:
    """DataParallel's `module.` prefix removed when every key carries it (GOLDMARK's
    `_fix_state_dict` for EAGLE)."""
    if state_dict and all(k.startswith("module.") for k in state_dict):
        return {k[len("module."):]: v for k, v in state_dict.items()}
    return state_dict


def titan_vision_encoder(state_dict: State, backbone: nn.Module | None = None) -> State:
    """TITAN's slide encoder from the whole TITAN checkpoint: its `vision_encoder.` part alone
    (the text tower and the logit scale are dropped); a file holding only that part is kept."""
    prefix = "vision_encoder."
    if any(k.startswith(prefix) for k in state_dict):
        return {k[len(prefix):]: v for k, v in state_dict.items() if k.startswith(prefix)}
    return state_dict


def prism_image_resampler(state_dict: State, backbone: nn.Module) -> State:
    """PRISM's slide encoder from the whole PRISM checkpoint: its `image_resampler.` part alone
    (the BioGPT decoder and the contrastive heads are dropped). The Perceiver's layers share
    modules, which a checkpoint may store under one of their names only: every name of a shared
    tensor is filled from the one the file holds."""
    prefix = "image_resampler."
    if any(k.startswith(prefix) for k in state_dict):
        state_dict = {k[len(prefix):]: v for k, v in state_dict.items() if k.startswith(prefix)}
    names: dict[int, list[str]] = {}
    for name, tensor in backbone.state_dict(keep_vars=True).items():
        names.setdefault(id(tensor), []).append(name)
    out = dict(state_dict)
    for aliases in names.values():
        held = next((out[n] for n in aliases if n in out), None)
        if held is not None:
            out.update({n: held for n in aliases if n not in out})
    return out


def coca_vision_tower(state_dict: State, backbone: nn.Module, *, drop: tuple[str, ...]) -> State:
    """A CONCH vision tower from the vision-only file or the full CoCa checkpoint.

    The `module.` prefix is removed, a `visual.` part is taken alone, keys starting with `drop`
    are dropped, and a trunk position grid of another size is resampled to the trunk's (bilinear,
    no antialias), as the public loaders do.
    """
    state_dict = strip_data_parallel(state_dict)
    if any(k.startswith("visual.") for k in state_dict):
        state_dict = {k[len("visual."):]: v for k, v in state_dict.items() if k.startswith("visual.")}
    state_dict = {k: v for k, v in state_dict.items() if not k.startswith(drop)}
    key = "trunk.pos_embed"
    target = backbone.trunk.pos_embed
    if key in state_dict and tuple(state_dict[key].shape) != tuple(target.shape):
        from timm.layers import resample_abs_pos_embed

        source = state_dict[key]
        if source.ndim == 3 and source.shape[-1] == target.shape[-1]:
            state_dict[key] = resample_abs_pos_embed(
                source.float(),
                new_size=list(backbone.trunk.patch_embed.grid_size),
                num_prefix_tokens=1,
                interpolation="bilinear",
                antialias=False,
                verbose=False,
            ).to(source.dtype)
    return state_dict


def _fused_qkv(state: State, prefix: str, names: tuple[str, str, str]) -> dict[str, torch.Tensor]:
    """timm's fused `attn.qkv` weight and bias from three separate projections under `prefix`."""
    import torch

    out = {}
    for part in ("weight", "bias"):
        keys = [f"{prefix}{n}.{part}" for n in names]
        if all(k in state for k in keys):
            out[f"attn.qkv.{part}"] = torch.cat([state[k] for k in keys], dim=0)
    return out


# Hugging Face ViTModel / Dinov2Model block names -> timm's (per encoder layer).
_HF_VIT_BLOCK = {"attention.output.dense": "attn.proj", "layernorm_before": "norm1", "layernorm_after": "norm2",
                 "intermediate.dense": "mlp.fc1", "output.dense": "mlp.fc2", "norm1": "norm1", "norm2": "norm2",
                 "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2", "layer_scale1.lambda1": "ls1.gamma",
                 "layer_scale2.lambda1": "ls2.gamma"}


def _resampled_grid(pos: torch.Tensor, backbone: nn.Module, prefix_tokens: int) -> torch.Tensor:
    """A position table of another grid resampled to the backbone's (bicubic, antialiased, as
    Hugging Face's Dinov2 interpolates at its forward pass)."""
    target = backbone.pos_embed
    if tuple(pos.shape) == tuple(target.shape):
        return pos
    from timm.layers import resample_abs_pos_embed

    return resample_abs_pos_embed(pos.float(), new_size=list(backbone.patch_embed.grid_size),
                                  num_prefix_tokens=prefix_tokens, interpolation="bicubic", antialias=True,
                                  verbose=False).to(pos.dtype)


def hf_vit(state_dict: State, backbone: nn.Module) -> State:
    """A Hugging Face `ViTModel` / `Dinov2Model` checkpoint (Phikon, Phikon-v2) in timm's ViT
    layout: q/k/v fused into `qkv`, layer scale `lambda1` -> `gamma`, the pooler and the mask token
    dropped (unused for embeddings), a position table of another grid resampled. A state dict
    already in timm's layout (pathkit's own random checkpoints) is returned unchanged."""
    state = {k.removeprefix("vit.").removeprefix("dinov2."): v for k, v in state_dict.items()}
    if "embeddings.cls_token" not in state:
        return state_dict
    out = {"cls_token": state["embeddings.cls_token"],
           "patch_embed.proj.weight": state["embeddings.patch_embeddings.projection.weight"],
           "patch_embed.proj.bias": state["embeddings.patch_embeddings.projection.bias"],
           "norm.weight": state["layernorm.weight"], "norm.bias": state["layernorm.bias"]}
    out["pos_embed"] = _resampled_grid(state["embeddings.position_embeddings"], backbone, 1)
    depth = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    for i in range(depth):
        src, dst = f"encoder.layer.{i}.", f"blocks.{i}."
        out.update({dst + k: v for k, v in _fused_qkv(state, src + "attention.attention.",
                                                      ("query", "key", "value")).items()})
        for hf_name, timm_name in _HF_VIT_BLOCK.items():
            for part in ("weight", "bias"):
                if f"{src}{hf_name}.{part}" in state:
                    out[f"{dst}{timm_name}.{part}"] = state[f"{src}{hf_name}.{part}"]
            if hf_name.endswith("lambda1") and src + hf_name in state:
                out[dst + timm_name] = state[src + hf_name]
    return out


_HF_CLIP_BLOCK = {"self_attn.out_proj": "attn.proj", "layer_norm1": "norm1", "layer_norm2": "norm2",
                  "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2"}


def hf_clip_vision(state_dict: State, backbone: nn.Module) -> State:
    """A Hugging Face `CLIPModel` checkpoint (PLIP) as pathkit's `ClipVisionTower`: the
    `vision_model.` part in timm's layout and `visual_projection` (a bias-free Linear) as `proj`
    (its transpose); the text tower and `logit_scale` dropped. An open_clip checkpoint (QuiltNet)
    goes through timm's own OpenAI-CLIP converter; pathkit's own layout is returned unchanged."""
    if any(k.startswith("visual.") for k in state_dict):
        return _open_clip_vision(state_dict, backbone)
    if "vision_model.embeddings.class_embedding" not in state_dict:
        return state_dict
    s = {k.removeprefix("vision_model."): v for k, v in state_dict.items() if k.startswith("vision_model.")}
    width = s["embeddings.class_embedding"].shape[-1]
    out = {"trunk.cls_token": s["embeddings.class_embedding"].reshape(1, 1, width),
           "trunk.pos_embed": s["embeddings.position_embedding.weight"].unsqueeze(0),
           "trunk.patch_embed.proj.weight": s["embeddings.patch_embedding.weight"],
           "trunk.norm_pre.weight": s["pre_layrnorm.weight"], "trunk.norm_pre.bias": s["pre_layrnorm.bias"],
           "trunk.norm.weight": s["post_layernorm.weight"], "trunk.norm.bias": s["post_layernorm.bias"],
           "proj": state_dict["visual_projection.weight"].t().contiguous()}
    depth = 1 + max(int(k.split(".")[2]) for k in s if k.startswith("encoder.layers."))
    for i in range(depth):
        src, dst = f"encoder.layers.{i}.", f"trunk.blocks.{i}."
        out.update({dst + k: v for k, v in _fused_qkv(s, src + "self_attn.", ("q_proj", "k_proj", "v_proj")).items()})
        for hf_name, timm_name in _HF_CLIP_BLOCK.items():
            for part in ("weight", "bias"):
                out[f"{dst}{timm_name}.{part}"] = s[f"{src}{hf_name}.{part}"]
    return out


def _open_clip_vision(state_dict: State, backbone: nn.Module) -> State:
    from timm.models.vision_transformer import _convert_openai_clip

    visual = {k: v for k, v in state_dict.items() if k.startswith("visual.")}
    proj = visual.pop("visual.proj")
    trunk = _convert_openai_clip(visual, backbone.trunk, prefix="visual.")
    trunk = {k: v for k, v in trunk.items() if not k.startswith("head.")}
    return {**{f"trunk.{k}": v for k, v in trunk.items()}, "proj": proj}


def dino_teacher(state_dict: State, backbone: nn.Module | None = None) -> State:
    """GPFM's release (`GPFM.pth`): the DINOv2 training payload's `teacher` backbone, keys without
    `backbone.`, block chunks (`blocks.0.3`) flattened to `blocks.3`, the mask token and the DINO /
    iBOT heads dropped (as kaiko's eva converts it for timm)."""
    import re

    state = state_dict.get("teacher", state_dict)
    out = {}
    for key, value in state.items():
        if "dino_head" in key or "ibot_head" in key:
            continue
        key = re.sub(r"^blocks\.\d+\.(\d+)\.", r"blocks.\1.", key.removeprefix("backbone."))
        if key != "mask_token":
            out[key] = value
    return out


def swin_old_layout(state_dict: State, backbone: nn.Module) -> State:
    """CTransPath's checkpoint (`CHIEF_CTransPath.pth`, a timm 0.5 Swin under `model`): timm's own
    Swin filter moves each stage's downsampling to the next stage and drops the relative position
    indices and attention masks (rebuilt by the module); a classifier head is dropped."""
    from timm.models.swin_transformer import checkpoint_filter_fn

    state = checkpoint_filter_fn(state_dict, backbone)
    return {k: v for k, v in state.items() if not k.startswith("head.")}


def torchvision_resnet_trunk(state_dict: State, backbone: nn.Module) -> State:
    """An ImageNet ResNet-50 checkpoint (torchvision's `resnet50-19c8e357.pth` / timm's
    `resnet50.tv_in1k`) cut after stage 3: `layer4` and `fc` dropped; BatchNorm's
    `num_batches_tracked` (absent from torchvision's old file, never used in eval mode) filled."""
    import torch

    out = {k: v for k, v in state_dict.items() if not k.startswith(("layer4.", "fc."))}
    for name, _ in backbone.named_buffers():
        if name.endswith("num_batches_tracked") and name not in out:
            out[name] = torch.zeros((), dtype=torch.long)
    return out


def dinov2_native(state_dict: State, backbone: nn.Module) -> State:
    """A checkpoint in the DINOv2 repository's own layout (Hibou-B's GitHub release, built by
    `hibou.build_model`) in timm's: timm's DINOv2 conversion (`checkpoint_filter_fn`) moves the
    register tokens to `reg_token`, folds the class token's position into the class token (timm's
    registered DINOv2 keeps no position for prefix tokens), renames the fused SwiGLU `w12` / `w3`
    to `fc1` / `fc2` and drops the mask token (unused for embeddings). A state dict already in
    timm's layout (pathkit's own random checkpoints) is returned unchanged."""
    if "register_tokens" not in state_dict and "mask_token" not in state_dict:
        return state_dict
    from timm.models.vision_transformer import checkpoint_filter_fn

    return checkpoint_filter_fn(dict(state_dict), backbone)
