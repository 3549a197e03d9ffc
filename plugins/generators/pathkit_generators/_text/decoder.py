"""Transformer report decoder (R2Gen / WSI-Caption / HistGen style) with cached incremental decoding.

Architecture (docs/report-generation.md, "Shared decoder"): token embedding scaled by sqrt(d_model)
plus sinusoidal positions and dropout; `num_layers` pre-norm layers of causal self-attention,
cross-attention to the slide memory and a ReLU feed-forward, each sublayer `x + dropout(f(norm(x)))`;
a final LayerNorm and a linear map to the vocabulary. An optional `token_adapter` transforms the
position-encoded embeddings before the first layer (HistGen adds its cross-modal memory
responses there).

Teacher forcing runs all positions at once; beam search calls `start()` once per batch (the
memory is projected to keys/values once per layer) and `step()` once per generated token, with
self-attention keys/values cached.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from pathkit_generators._text.attention import MultiHeadAttention


def xavier_init(*modules: nn.Module | nn.Parameter) -> None:
    """Xavier-uniform init of every weight with two or more dimensions (R2Gen's `make_model`)."""
    for module in modules:
        params = [module] if isinstance(module, nn.Parameter) else module.parameters()
        for p in params:
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """(length, d_model) sinusoidal position encodings (Vaswani et al. 2017, section 3.5)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div[: d_model // 2])
    return pe


class PositionalEncoding(nn.Module):
    """Adds sinusoidal encodings of positions `start ... start + L - 1`, then dropout."""

    def __init__(self, d_model: int, dropout: float, max_len: int = 5000) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positions(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        if start + x.size(1) > self.pe.size(0):
            self.pe = sinusoidal_positions(start + x.size(1), self.pe.size(1)).to(self.pe.device)
        return self.dropout(x + self.pe[start : start + x.size(1)].to(x.dtype))


class FeedForward(nn.Module):
    """Position-wise feed-forward w2(dropout(relu(w1 x)))."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.dropout(F.relu(self.w1(x))))


class PreNormEncoderLayer(nn.Module):
    """Pre-norm self-attention + feed-forward block (the encoder layer of R2Gen-style models)."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-6)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.dropout(self.self_attn(h, h, key_mask=key_mask))
        return x + self.dropout(self.ff(self.norm2(x)))


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the memory, feed-forward; all pre-norm."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model, eps=1e-6) for _ in range(3))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, memory_kv: tuple[torch.Tensor, torch.Tensor],
                memory_mask: torch.Tensor | None, self_cache: list[torch.Tensor] | None = None,
                ) -> torch.Tensor:
        attn = self.self_attn.self_attend(self.norms[0](x), self_cache)
        x = x + self.dropout(attn)
        h = self.norms[1](x)
        x = x + self.dropout(self.cross_attn.attend_projected(h, *memory_kv, key_mask=memory_mask))
        return x + self.dropout(self.ff(self.norms[2](x)))


@dataclass
class DecodingCache:
    """Per-batch decoding state: projected memory per layer, self-attention caches, position."""

    memory_kv: list[tuple[torch.Tensor, torch.Tensor]]
    memory_mask: torch.Tensor | None
    self_kv: list[list[torch.Tensor]] = field(default_factory=list)
    position: int = 0

    def reorder(self, index: torch.Tensor) -> None:
        """Keep hypotheses `index` (rows of the (B*beams) axis) in the self-attention caches."""
        for layer in self.self_kv:
            if layer:
                layer[0] = layer[0].index_select(0, index)
                layer[1] = layer[1].index_select(0, index)


class TransformerDecoder(nn.Module):
    """Autoregressive report decoder over a slide memory (B, M, d_model) with a key mask (B, M)."""

    def __init__(self, vocab_size: int, d_model: int = 512, num_layers: int = 3, num_heads: int = 8,
                 d_ff: int = 512, dropout: float = 0.1,
                 token_adapter: Callable[[torch.Tensor], torch.Tensor] | None = None) -> None:
        super().__init__()
        self.vocab_size, self.d_model = vocab_size, d_model
        self.embed = nn.Embedding(vocab_size, d_model)
        self.position = PositionalEncoding(d_model, dropout)
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, eps=1e-6)
        self.logit = nn.Linear(d_model, vocab_size)
        self.token_adapter = token_adapter

    def embed_tokens(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        x = self.position(self.embed(tokens) * math.sqrt(self.d_model), start)
        if self.token_adapter is not None:
            x = self.token_adapter(x)
        return x

    def forward(self, tokens: torch.Tensor, memory: torch.Tensor,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher forcing: logits (B, T, V) for next tokens after each of `tokens` (B, T)."""
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x, layer.cross_attn.project_kv(memory), memory_mask)
        return self.logit(self.norm(x))

    def start(self, memory: torch.Tensor, memory_mask: torch.Tensor | None = None) -> DecodingCache:
        """A cache for incremental decoding of `memory` (one row per case, beams share it)."""
        kv = [layer.cross_attn.project_kv(memory) for layer in self.layers]
        return DecodingCache(kv, memory_mask, [[] for _ in self.layers], 0)

    def step(self, tokens: torch.Tensor, cache: DecodingCache) -> torch.Tensor:
        """Log-probabilities (B*beams, V) of the token after `tokens` (B*beams,), advancing `cache`.

        Hypotheses are ordered case by case (all beams of case 0, then case 1, ...).
        """
        x = self.embed_tokens(tokens[:, None], cache.position)
        for layer, self_kv, kv in zip(self.layers, cache.self_kv, cache.memory_kv, strict=True):
            x = layer(x, kv, cache.memory_mask, self_kv)
        cache.position += 1
        return F.log_softmax(self.logit(self.norm(x[:, -1])).float(), dim=-1)
