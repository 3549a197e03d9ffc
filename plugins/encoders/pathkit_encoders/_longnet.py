"""Prov-GigaPath's slide encoder (Xu et al., Nature 2024): LongNet (Ding et al. 2023) dilated
attention over a slide's 1536-d Prov-GigaPath tile features (imported lazily: it imports torch).

Written from the paper and the public code (`prov-gigapath`, `gigapath/slide_encoder.py` and its
vendored torchscale: `LongNet_12_layers_768_dim`, torchscale's `EncoderConfig` defaults, the
dilated attention). The published path needs flash-attn and a torchscale tree that is not on the
package registries (torchscale 0.3.0 there pins timm 0.6.13 and has no dilated attention), so the
arithmetic is written here in plain torch. Parameter names follow the checkpoint
(`slide_encoder.pth`, under `model`). Sources and choices: docs/encoders.md, "Slide encoders".
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from pathkit_core.contracts import PathkitError

# `get_optimal_segment_length(262144, 256)`: 2 ** linspace(log2 1024, log2 (262144 / 256) ** 2, 5), truncated.
GIGAPATH_SEGMENTS = (1024, 5792, 32768, 185363, 1048576)
GIGAPATH_DILATIONS = (1, 2, 4, 8, 16)


def sincos_2d(rows: torch.Tensor, cols: torch.Tensor, dim: int) -> torch.Tensor:
    """MAE's fixed 2D sine-cosine embedding of grid cells (row, col): the first half encodes the
    column, the second the row, each [sin, cos] of pos x 10000^(-k / (dim / 4))."""
    quarter = dim // 4
    omega = 1.0 / 10000 ** (torch.arange(quarter, dtype=torch.float64) / quarter)

    def one_axis(pos: torch.Tensor) -> torch.Tensor:
        out = pos.to(torch.float64)[:, None] * omega[None, :]
        return torch.cat((torch.sin(out), torch.cos(out)), dim=1)

    return torch.cat((one_axis(cols), one_axis(rows)), dim=1).to(torch.float32)


def _branch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, segment: int, ratio: int) -> tuple[
        torch.Tensor, torch.Tensor]:
    """One (segment length, dilation) branch: within each segment, head group g attends among the
    positions congruent to g modulo the dilation. Returns the dense output (B, L, H, D) and the
    log-sum-exp of its scores (B, L, H), -inf where a head does not see a position. Positions
    padded to fill a segment are zero keys and values, as in the public code."""
    b, length, heads, d = q.shape
    seg = min(segment, length)
    n = -(-length // seg)
    per = -(-seg // ratio)

    def sparse(x: torch.Tensor) -> torch.Tensor:
        x = F.pad(x, (0, 0, 0, 0, 0, n * seg - length)).reshape(b, n, seg, heads, d)
        x = F.pad(x, (0, 0, 0, 0, 0, per * ratio - seg)).reshape(b, n, per, ratio, ratio, heads // ratio, d)
        return torch.diagonal(x, dim1=3, dim2=4).permute(0, 1, 5, 3, 2, 4)  # B n r H/r m D

    qs, ks, vs = sparse(q), sparse(k), sparse(v)
    scores = torch.matmul(qs, ks.transpose(-1, -2)) * d ** -0.5
    lse = torch.logsumexp(scores, dim=-1)                                  # B n r H/r m
    out = torch.matmul(torch.softmax(scores, dim=-1), vs)                  # B n r H/r m D
    dense = out.new_zeros(b, n, per, ratio, ratio, heads // ratio, d)
    dense_lse = lse.new_full((b, n, per, ratio, ratio, heads // ratio), float("-inf"))
    idx = torch.arange(ratio)
    dense[:, :, :, idx, idx] = out.permute(0, 1, 4, 2, 3, 5)
    dense_lse[:, :, :, idx, idx] = lse.permute(0, 1, 4, 2, 3)
    dense = dense.reshape(b, n, per * ratio, heads, d)[:, :, :seg].reshape(b, n * seg, heads, d)
    dense_lse = dense_lse.reshape(b, n, per * ratio, heads)[:, :, :seg].reshape(b, n * seg, heads)
    return dense[:, :length], dense_lse[:, :length]


class DilatedAttention(nn.Module):
    """LongNet's dilated self-attention with torchscale's sub-LayerNorm (`inner_attn_ln`) before
    the output projection; the branches are mixed by the softmax of their log-sum-exps, which is
    attention over the union of what each branch sees."""

    def __init__(self, dim: int, heads: int, segments: Sequence[int], dilations: Sequence[int]) -> None:
        super().__init__()
        if len(segments) != len(dilations) or any(heads % r for r in dilations):
            raise PathkitError(f"dilated attention: segments {tuple(segments)} and dilations {tuple(dilations)} "
                               f"do not pair, or {heads} heads do not split into groups of each dilation")
        self.heads, self.segments, self.dilations = heads, tuple(segments), tuple(dilations)
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(dim, dim) for _ in range(3))
        self.out_proj = nn.Linear(dim, dim)
        self.inner_attn_ln = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, length, dim = x.shape
        q, k, v = (p(x).reshape(b, length, self.heads, -1) for p in (self.q_proj, self.k_proj, self.v_proj))
        branches = [_branch(q, k, v, s, r) for s, r in zip(self.segments, self.dilations, strict=True)]
        outs, lses = zip(*branches, strict=True)
        weights = torch.softmax(torch.stack(lses), dim=0).unsqueeze(-1)      # branches x B x L x H x 1
        attn = (torch.stack(outs) * weights).sum(0).reshape(b, length, dim)
        return self.out_proj(self.inner_attn_ln(attn))


class _FFN(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.ffn_layernorm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.ffn_layernorm(F.gelu(self.fc1(x))))


class _Layer(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int, segments: Sequence[int], dilations: Sequence[int]) -> None:
        super().__init__()
        self.self_attn = DilatedAttention(dim, heads, segments, dilations)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.ffn = _FFN(dim, hidden)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.self_attn_layer_norm(x))
        return x + self.ffn(self.final_layer_norm(x))


class _Encoder(nn.Module):
    def __init__(self, layers: list[_Layer], dim: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.layer_norm = nn.LayerNorm(dim)


class _PatchEmbed(nn.Module):
    def __init__(self, in_dim: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(in_dim, dim)


class GigaPathSlideEncoder(nn.Module):
    """`gigapath_slide_enc12l768d`: Linear(1536, 768) tile embedding, the fixed 2D sine-cosine
    position of each tile's cell (level-0 coordinates / 256 on a 1000 x 1000 grid), a class token,
    12 pre-LayerNorm LongNet layers (16 heads, FFN 3072 with sub-LayerNorm, GELU), torchscale's
    output LayerNorm, then LayerNorm(eps 1e-6) and the class token (`global_pool=False`)."""

    def __init__(self, in_dim: int = 1536, embed_dim: int = 768, depth: int = 12, num_heads: int = 16,
                 ffn_dim: int = 3072, segments: Sequence[int] = GIGAPATH_SEGMENTS,
                 dilations: Sequence[int] = GIGAPATH_DILATIONS, grid: int = 1000, cell_px: int = 256) -> None:
        super().__init__()
        self.grid, self.cell_px, self.embed_dim = grid, cell_px, embed_dim
        self.patch_embed = _PatchEmbed(in_dim, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.encoder = _Encoder([_Layer(embed_dim, num_heads, ffn_dim, segments, dilations) for _ in range(depth)],
                                embed_dim)
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)

    def positions(self, coords: torch.Tensor) -> torch.Tensor:
        """The position embedding of each tile: row floor(x / 256), column floor(y / 256) of the
        public code, flattened as row x 1000 + column (a column past the grid runs into the next
        row there, and so here); a cell beyond the grid is refused, where the public code fails."""
        cells = torch.floor(coords / self.cell_px).long()
        flat = cells[:, 0] * self.grid + cells[:, 1]
        if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= self.grid ** 2):
            raise PathkitError(f"Prov-GigaPath's slide encoder places tiles on a {self.grid} x {self.grid} grid of "
                               f"{self.cell_px}-px cells; these coordinates reach beyond it")
        return sincos_2d(flat // self.grid, flat % self.grid, self.embed_dim)

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        if coords is None:
            raise PathkitError("Prov-GigaPath's slide encoder needs the tiles' coordinates")
        pos = torch.stack([self.positions(c) for c in coords]).to(features.device)
        x = self.patch_embed.proj(features) + pos
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        for layer in self.encoder.layers:
            x = layer(x)
        return self.norm(self.encoder.layer_norm(x))[:, 0]
