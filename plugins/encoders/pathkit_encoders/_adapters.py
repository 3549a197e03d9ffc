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
