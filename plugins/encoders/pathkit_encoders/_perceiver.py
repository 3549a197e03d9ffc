"""PRISM's slide encoder (Shaikovski et al. 2024): a Perceiver over a slide's Virchow tile
embeddings, whose first latent (after LayerNorm) is the slide embedding (imported lazily: it
imports torch).

Written from the paper and the public model code (`paige-ai/Prism`: `PerceiverConfig`,
`perceiver.py`): 513 latents of width 1280 (the embedding query and 512 image latents), 8 perceiver
layers of single-head cross-attention to the 2560-d tiles (no context norm) then a 6-block latent
transformer (8 heads, no biases), GEGLU feed-forwards of multiplier 1; layers from the second on
share the second layer's cross-attention, and every layer shares the first layer's transformer.
Parameter names follow that code so the checkpoint's `image_resampler.` part loads strictly.
Sources and choices: docs/encoders.md, "Slide encoders".
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class _GEGLU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x, gates = x.chunk(2, dim=-1)
        return x * F.gelu(gates)


class _FeedForward(nn.Module):
    def __init__(self, dim: int, mult: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.net = nn.Sequential(nn.Linear(dim, dim * mult * 2), _GEGLU(), nn.Linear(dim * mult, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self.norm(x))


class _CrossAttention(nn.Module):
    def __init__(self, dim: int, context_dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.x_norm = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(context_dim, dim * 2, bias=False)
        self.to_out = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        b, n, dim = x.shape
        q = self.to_q(self.x_norm(x)).reshape(b, n, self.heads, -1).transpose(1, 2)
        k, v = self.to_kv(context).reshape(b, context.shape[1], 2, self.heads, -1).unbind(2)
        out = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2))
        return self.to_out(out.transpose(1, 2).reshape(b, n, dim))


class _SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mha = nn.MultiheadAttention(dim, heads, bias=False, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x)
        return self.mha(x, x, x, need_weights=False)[0]


def _xattn(dim: int, context_dim: int, heads: int, mult: int) -> nn.ModuleDict:
    return nn.ModuleDict({"xattn": _CrossAttention(dim, context_dim, heads), "ff": _FeedForward(dim, mult)})


def _transformer(dim: int, heads: int, depth: int, mult: int) -> nn.ModuleList:
    return nn.ModuleList([nn.ModuleDict({"mhsa": _SelfAttention(dim, heads), "ff": _FeedForward(dim, mult)})
                          for _ in range(depth)])


class _Perceiver(nn.Module):
    def __init__(self, latents: int, dim: int, context_dim: int, mhsa_heads: int, depth: int, tf_depth: int,
                 share_xattn_from: int, share_tf_from: int, xattn_heads: int, mult: int) -> None:
        super().__init__()
        self.latents = nn.Parameter(torch.randn(latents, dim))
        layers: list[nn.ModuleDict] = []
        for i in range(depth):
            xattn = _xattn(dim, context_dim, xattn_heads, mult) if i <= share_xattn_from else layers[-1]["xattn"]
            tf = _transformer(dim, mhsa_heads, tf_depth, mult) if i <= share_tf_from else layers[-1]["tf"]
            layers.append(nn.ModuleDict({"xattn": xattn, "tf": tf}))
        self.layers = nn.ModuleList(layers)

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        x = self.latents.unsqueeze(0).expand(context.shape[0], -1, -1)
        for layer in self.layers:
            x = x + layer["xattn"]["xattn"](x, context)
            x = x + layer["xattn"]["ff"](x)
            for block in layer["tf"]:
                x = x + block["mhsa"](x)
                x = x + block["ff"](x)
        return x


class PrismPerceiver(nn.Module):
    """`PerceiverResampler` of PRISM; the slide embedding is `image_embedding`, the LayerNormed
    first latent (1280-d). One slide at a time (no padding mask is needed then)."""

    def __init__(self, in_dim: int = 2560, latent_dim: int = 1280, latent_seq: int = 512, mhsa_heads: int = 8,
                 perceiver_depth: int = 8, transformer_depth: int = 6, share_xattn_start_layer: int = 1,
                 share_tf_start_layer: int = 0, xattn_heads: int = 1, mlp_mult: int = 1) -> None:
        super().__init__()
        self.cls_norm = nn.LayerNorm(latent_dim)
        self.img_norm = nn.LayerNorm(latent_dim)
        self.perceiver = _Perceiver(latent_seq + 1, latent_dim, in_dim, mhsa_heads, perceiver_depth,
                                    transformer_depth, share_xattn_start_layer, share_tf_start_layer, xattn_heads,
                                    mlp_mult)

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        return self.cls_norm(self.perceiver(features)[:, 0])
