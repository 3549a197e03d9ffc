"""Torch modules the encoder plugins add around timm backbones (imported lazily: it imports torch)."""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class ClassAndPatchMean(nn.Module):
    """Virchow embedding: concat(class token, mean of the patch tokens after the registers)."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.backbone.forward_features(x)
        prefix = int(getattr(self.backbone, "num_prefix_tokens", 1))
        return torch.cat([tokens[:, 0], tokens[:, prefix:].mean(dim=1)], dim=-1)


class AttentionalPooler(nn.Module):
    """Cross-attention of learned queries over the trunk's tokens (CoCa/CONCH contrastive pooler).

    Keys and values come from the LayerNorm-ed context tokens, queries from the LayerNorm-ed
    learned queries; projections carry no bias; the output is projected back to `d_model`.
    Parameter names follow the published CONCH checkpoints (query, ln_q, ln_k, to_q, to_kv, to_out).
    """

    def __init__(self, d_model: int, context_dim: int, n_head: int = 8, n_queries: int = 1) -> None:
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model {d_model} is not divisible by {n_head} heads")
        self.n_head = n_head
        self.query = nn.Parameter(torch.randn(n_queries, d_model))
        self.ln_q = nn.LayerNorm(d_model)
        self.ln_k = nn.LayerNorm(context_dim)
        self.to_q = nn.Linear(d_model, d_model, bias=False)
        self.to_kv = nn.Linear(context_dim, 2 * d_model, bias=False)
        self.to_out = nn.Linear(d_model, d_model, bias=False)

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        batch, n_ctx, _ = context.shape
        n_q, d_model = self.query.shape
        head_dim = d_model // self.n_head
        q = self.to_q(self.ln_q(self.query)).expand(batch, n_q, d_model)
        k, v = self.to_kv(self.ln_k(context)).chunk(2, dim=-1)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(batch, t.shape[1], self.n_head, head_dim).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(q), heads(k), heads(v))  # scale 1/sqrt(head_dim)
        out = out.transpose(1, 2).reshape(batch, n_q, d_model)
        return self.to_out(out)


def interpolate_grid_pos_embed(pos_embed: torch.Tensor, grid_h: int, grid_w: int) -> torch.Tensor:
    """Class + patch position embeddings for a (grid_h, grid_w) patch grid.

    Bicubic resampling of the square learned grid with the DINO/iBOT convention the CONCH
    v1.5 vision tower uses at inference: a scale factor of (new + 0.1) / old rather than a
    target size (the +0.1 guards against floor errors). This gives slightly different values
    from timm's size-based `resample_abs_pos_embed`, so it is kept as is.
    """
    cls_pos, patch_pos = pos_embed[:, :1], pos_embed[:, 1:]
    n_patches, dim = patch_pos.shape[1], patch_pos.shape[2]
    side = math.isqrt(n_patches)
    if side * side != n_patches:
        raise ValueError(f"position grid of {n_patches} entries is not square")
    if grid_h == side and grid_w == side:
        return pos_embed
    grid = patch_pos.reshape(1, side, side, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(
        grid.float(),
        scale_factor=((grid_h + 0.1) / side, (grid_w + 0.1) / side),
        mode="bicubic",
    ).to(pos_embed.dtype)
    if tuple(grid.shape[-2:]) != (grid_h, grid_w):
        raise ValueError(f"position grid resampled to {tuple(grid.shape[-2:])}, expected {(grid_h, grid_w)}")
    grid = grid.permute(0, 2, 3, 1).reshape(1, grid_h * grid_w, dim)
    return torch.cat([cls_pos, grid], dim=1)


class ConchVisionTower(nn.Module):
    """CONCH v1.5 vision encoder: ViT-L/16 trunk + attentional pooler (1 query) + LayerNorm.

    The trunk holds a 14 x 14 (224 px) position grid; 448 px inputs (28 x 28 patches) use
    the grid resampled (`interpolate_grid_pos_embed`): per forward pass when gradients may
    flow, once per grid size and weights version under `torch.inference_mode`. The embedding
    is the pooled, LayerNorm-ed contrastive token before the text-alignment projection (768-d).
    """

    def __init__(self, trunk: nn.Module, pooler_dim: int = 768, pooler_heads: int = 8) -> None:
        super().__init__()
        self.trunk = trunk
        context_dim = int(trunk.embed_dim)
        self.attn_pool_contrast = AttentionalPooler(pooler_dim, context_dim, n_head=pooler_heads, n_queries=1)
        self.ln_contrast = nn.LayerNorm(pooler_dim)
        self._grid_cache: tuple[tuple[Any, ...], torch.Tensor] | None = None

    def position_embedding(self, grid_h: int, grid_w: int) -> torch.Tensor:
        """Class + patch position embeddings for a (grid_h, grid_w) patch grid."""
        pos = self.trunk.pos_embed
        if not torch.is_inference_mode_enabled():
            return interpolate_grid_pos_embed(pos, grid_h, grid_w)
        # Keyed by the parameter's storage and version: loading weights or moving the module
        # changes them, so a stale grid is never used.
        key = (grid_h, grid_w, pos.data_ptr(), pos._version, pos.device, pos.dtype)
        if self._grid_cache is None or self._grid_cache[0] != key:
            self._grid_cache = (key, interpolate_grid_pos_embed(pos, grid_h, grid_w))
        return self._grid_cache[1]

    def tokens(self, x: torch.Tensor) -> torch.Tensor:
        trunk = self.trunk
        patches = trunk.patch_embed(x)
        if patches.ndim == 4:  # NHWC from a dynamic-size patch embedding
            batch, grid_h, grid_w, dim = patches.shape
            patches = patches.reshape(batch, grid_h * grid_w, dim)
        else:
            batch, _, dim = patches.shape
            grid_h = x.shape[-2] // trunk.patch_embed.patch_size[0]
            grid_w = x.shape[-1] // trunk.patch_embed.patch_size[1]
        pos = self.position_embedding(grid_h, grid_w)
        tokens = torch.cat([trunk.cls_token.expand(batch, -1, -1), patches], dim=1) + pos
        tokens = trunk.norm_pre(trunk.patch_drop(trunk.pos_drop(tokens)))
        return trunk.norm(trunk.blocks(tokens))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = self.attn_pool_contrast(self.tokens(x))[:, 0]
        return self.ln_contrast(pooled)


class ConchV1VisionTower(nn.Module):
    """CONCH v1 vision encoder into the image-text space: ViT-B/16 trunk (448 px grid), the
    contrastive attentional pooler (1 query, d_model 512, context 768, 8 heads, a
    `nn.MultiheadAttention` with separate key/value widths, as the public CoCa code builds it),
    LayerNorm(512), then the 512 x 512 contrastive projection (`proj_contrast`).

    Parameter names follow the `visual.` part of the public checkpoint, so it loads as is (the
    captioning pooler, unused for embeddings, is dropped by the encoder).
    """

    def __init__(self, trunk: nn.Module, contrast_dim: int = 512, pooler_heads: int = 8) -> None:
        super().__init__()
        self.trunk = trunk
        context_dim = int(trunk.embed_dim)
        self.attn_pool_contrast = ContrastPooler(contrast_dim, context_dim, n_head=pooler_heads)
        self.ln_contrast = nn.LayerNorm(contrast_dim)
        self.proj_contrast = nn.Parameter(context_dim ** -0.5 * torch.randn(contrast_dim, contrast_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = self.ln_contrast(self.attn_pool_contrast(self.trunk.forward_features(x))[:, 0])
        return pooled @ self.proj_contrast


class ContrastPooler(nn.Module):
    """Learned queries attending over LayerNorm-ed context tokens (the public CONCH v1
    `AttentionalPooler`: parameters `query`, `attn.*` of a `nn.MultiheadAttention` with separate
    key/value widths, `ln_q`, `ln_k`). The attention is written out (the same arithmetic,
    checked against `nn.MultiheadAttention`) so that its numbers do not depend on which of
    torch's attention paths a module's gradient flags select."""

    def __init__(self, d_model: int, context_dim: int, n_head: int = 8, n_queries: int = 1) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.randn(n_queries, d_model))
        self.attn = _CrossAttention(d_model, context_dim, n_head)
        self.ln_q = nn.LayerNorm(d_model)
        self.ln_k = nn.LayerNorm(context_dim)

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        keys = self.ln_k(context)
        queries = self.ln_q(self.query).unsqueeze(0).expand(context.shape[0], -1, -1)
        return self.attn(queries, keys)


class _CrossAttention(nn.Module):
    """`nn.MultiheadAttention(d_model, n_head, kdim=context_dim, vdim=context_dim)`'s parameters
    (q/k/v projection weights, one packed input bias, `out_proj`) and its forward pass."""

    def __init__(self, d_model: int, context_dim: int, n_head: int) -> None:
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model {d_model} is not divisible by {n_head} heads")
        self.num_heads = n_head
        self.q_proj_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.k_proj_weight = nn.Parameter(torch.empty(d_model, context_dim))
        self.v_proj_weight = nn.Parameter(torch.empty(d_model, context_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            nn.init.xavier_uniform_(weight)

    def forward(self, queries: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        batch, n_q, d_model = queries.shape
        head_dim = d_model // self.num_heads
        b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        q = F.linear(queries, self.q_proj_weight, b_q)
        k = F.linear(context, self.k_proj_weight, b_k)
        v = F.linear(context, self.v_proj_weight, b_v)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(batch, t.shape[1], self.num_heads, head_dim).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(q), heads(k), heads(v))  # scale 1/sqrt(head_dim)
        return self.out_proj(out.transpose(1, 2).reshape(batch, n_q, d_model))


# LayerNorm of Hugging Face's ViTModel (`layer_norm_eps=1e-12`, Phikon's config); timm's ViT uses 1e-6.
LayerNormEps12 = functools.partial(nn.LayerNorm, eps=1e-12)


class FeatureMapMean(nn.Module):
    """The spatial mean of the last feature map a timm `features_only` backbone returns (the
    truncated ResNet-50 of CLAM and TRIDENT: stage 3's 1024 x 14 x 14 map -> 1024-d)."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        maps = self.backbone(x)
        last = maps[-1] if isinstance(maps, (list, tuple)) else maps
        return last.mean(dim=(-2, -1))


class ConvStem(nn.Module):
    """CTransPath's patch embedding for timm's Swin: two 3x3 stride-2 convolutions without bias
    (widths embed_dim/8 and embed_dim/4, each with BatchNorm and ReLU), a 1x1 convolution to
    `embed_dim`, then the Swin's patch norm; NHWC output as timm's Swin expects. Parameter names
    (`proj.0`, `proj.1`, `proj.3`, `proj.4`, `proj.6`, `norm`) are those of the CTransPath checkpoint."""

    def __init__(self, img_size: Any = 224, patch_size: Any = 4, in_chans: int = 3, embed_dim: int = 96,
                 norm_layer: Any = None, **_: Any) -> None:
        super().__init__()
        size = (img_size, img_size) if isinstance(img_size, int) else tuple(img_size)
        patch = patch_size if isinstance(patch_size, int) else patch_size[0]
        if patch != 4 or embed_dim % 8:
            raise ValueError(f"CTransPath's stem needs 4 px patches and a width divisible by 8: {patch}, {embed_dim}")
        self.img_size, self.patch_size = size, (4, 4)
        self.grid_size = (size[0] // 4, size[1] // 4)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        layers: list[nn.Module] = []
        width_in, width = in_chans, embed_dim // 8
        for _stage in range(2):
            layers += [nn.Conv2d(width_in, width, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(width),
                       nn.ReLU(inplace=True)]
            width_in, width = width, width * 2
        layers.append(nn.Conv2d(width_in, embed_dim, kernel_size=1))
        self.proj = nn.Sequential(*layers)
        if isinstance(norm_layer, str):
            from timm.layers import get_norm_layer

            norm_layer = get_norm_layer(norm_layer)
        self.norm = norm_layer(embed_dim) if norm_layer else nn.Identity()

    def set_input_size(self, img_size: Any = None, **_: Any) -> None:
        if img_size is not None:
            size = (img_size, img_size) if isinstance(img_size, int) else tuple(img_size)
            self.img_size, self.grid_size = size, (size[0] // 4, size[1] // 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(x).permute(0, 2, 3, 1))


class ClipVisionTower(nn.Module):
    """A CLIP image tower (PLIP, QuiltNet): the timm ViT trunk (class token after the final
    LayerNorm, OpenAI CLIP's `ln_post`) and the bias-free `proj` (width x proj_dim, open_clip's
    `visual.proj` layout) into the image-text space."""

    def __init__(self, trunk: nn.Module, proj_dim: int = 512) -> None:
        super().__init__()
        self.trunk = trunk
        width = int(trunk.embed_dim)
        self.proj = nn.Parameter(width ** -0.5 * torch.randn(width, proj_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.trunk(x) @ self.proj
