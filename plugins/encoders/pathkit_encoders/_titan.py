"""TITAN's slide encoder (Ding et al., Nature Medicine 2025): a ViT over the 2D grid of a slide's
CONCH v1.5 patch features, with 2D ALiBi attention biases instead of position embeddings, and the
contrastive attentional pooler's token as the slide embedding (imported lazily: it imports torch).

Written from the paper and the public model code (`MahmoodLab/TITAN`, `vision_transformer.py`,
`TitanVisionConfig`); parameter names follow that code so the published checkpoint's
`vision_encoder.` part loads strictly. Sources and choices: docs/encoders.md, "Slide encoders".
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from pathkit_core.contracts import PathkitError


def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's head slopes (Press et al. 2022): a geometric series from 2^(-8/n) for n a power of
    two; otherwise the nearest lower power's series plus every other slope of the next one."""
    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_two(heads)
    lower = 2 ** math.floor(math.log2(heads))
    return power_of_two(lower) + power_of_two(2 * lower)[0::2][: heads - lower]


def feature_grid(features: torch.Tensor, coords: torch.Tensor, tile_px_level0: float | None) -> tuple[
        torch.Tensor, torch.Tensor]:
    """The non-empty cells of the slide's feature grid, row-major: (features (n, D), cells (n, 2)).
    A cell is a tile step of level-0 pixels from the top-left tile; features landing in one cell
    are summed and an all-zero cell is background, as in the public `preprocess_features`."""
    step = tile_px_level0 or grid_step(coords)
    cells = torch.div(coords - coords.min(dim=0).values, step, rounding_mode="floor").long()
    rows, cols = (int(v) + 1 for v in cells.max(dim=0).values)
    grid = torch.zeros(rows * cols, features.shape[-1], dtype=features.dtype, device=features.device)
    grid.index_add_(0, cells[:, 0] * cols + cells[:, 1], features)
    keep = (grid != 0).any(dim=-1)
    index = torch.nonzero(keep).flatten()
    return grid[index], torch.stack((index // cols, index % cols), dim=1)


def grid_step(coords: torch.Tensor) -> float:
    """The tile step when the feature file does not record it: the smallest positive gap between
    coordinates along either axis."""
    gaps = [torch.diff(torch.unique(coords[:, axis])) for axis in (0, 1)]
    gaps = torch.cat([g[g > 0] for g in gaps])
    if gaps.numel() == 0:
        return 1.0
    return float(gaps.min())


def alibi_bias(cells: torch.Tensor, heads: int) -> torch.Tensor:
    """(1, heads, n + 1, n + 1): minus slope x the Euclidean grid distance between two cells, zero
    in the class token's row and column."""
    pts = cells.to(torch.float32)
    dist = torch.cdist(pts, pts)
    slopes = torch.tensor(alibi_slopes(heads), dtype=torch.float32).view(heads, 1, 1)
    n = cells.shape[0]
    bias = torch.zeros(1, heads, n + 1, n + 1)
    bias[0, :, 1:, 1:] = -slopes * dist
    return bias


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(x.dtype))
        return self.proj(out.transpose(1, 2).reshape(b, n, c))


class _Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = _Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = _Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), bias)
        return x + self.mlp(self.norm2(x))


class _Blocks(nn.Module):
    def __init__(self, blocks: list[_Block]) -> None:
        super().__init__()
        self.modules_list = nn.ModuleList(blocks)


class AttentionalPooler(nn.Module):
    """CoCa's attentional pooler: learned queries (after LayerNorm) attend to the LayerNormed
    tokens through `nn.MultiheadAttention` (sequence-first)."""

    def __init__(self, dim: int, heads: int, queries: int) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.randn(queries, dim))
        self.attn = nn.MultiheadAttention(dim, heads)
        self.ln_q = nn.LayerNorm(dim)
        self.ln_k = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctx = self.ln_k(x).transpose(0, 1)                                  # N x B x D
        q = self.ln_q(self.query).unsqueeze(1).expand(-1, x.shape[0], -1)   # Q x B x D
        out, _ = self.attn(q, ctx, ctx, need_weights=False)
        return out.transpose(0, 1)                                          # B x Q x D


class TitanSlideViT(nn.Module):
    """TITAN's vision encoder (`TitanVisionConfig`: width 768, 6 layers, 12 heads, MLP ratio 4, qkv
    bias, LayerNorm eps 1e-6, patch embedding Linear + GELU over 768-d CONCH v1.5 features, a class
    token, 2D ALiBi, parallel attentional pools of 128 queries and of 1 query, 8 heads each, and the
    768 x 768 text projection). The slide embedding is the 1-query pool's token without the
    projection (`encode_slide_from_patch_features`, `no_proj=True`). One slide at a time."""

    def __init__(self, in_dim: int = 768, embed_dim: int = 768, depth: int = 6, num_heads: int = 12,
                 mlp_ratio: float = 4.0, pool_queries: int = 128, pool_heads: int = 8) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.patch_embed = nn.Sequential(nn.Linear(in_dim, embed_dim), nn.GELU())
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.blocks = _Blocks([_Block(embed_dim, num_heads, mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.attn_pool = AttentionalPooler(embed_dim, pool_heads, pool_queries)          # captioning tokens
        self.attn_pool_contrastive = AttentionalPooler(embed_dim, pool_heads, 1)
        self.proj = nn.Parameter(embed_dim ** -0.5 * torch.randn(embed_dim, embed_dim))  # into the text space

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None,
                tile_px_level0: float | None = None) -> torch.Tensor:
        if coords is None or features.shape[0] != 1:
            raise PathkitError("TITAN embeds one slide at a time from its patch features and their coordinates")
        tokens, cells = feature_grid(features[0], coords[0], tile_px_level0)
        bias = alibi_bias(cells, self.num_heads).to(tokens.device)
        x = torch.cat((self.cls_token, self.patch_embed(tokens).unsqueeze(0)), dim=1)
        for block in self.blocks.modules_list:
            x = block(x, bias)
        return self.attn_pool_contrastive(self.norm(x))[:, 0]
