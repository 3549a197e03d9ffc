"""Multi-head attention on `scaled_dot_product_attention`, with a materialised variant for benchmarks.

`torch.nn.functional.scaled_dot_product_attention` picks a fused kernel (flash or memory-efficient
on GPU, the flash kernel on CPU) that never holds the (queries x keys) score matrix, so a
10,000-tile slide fits in memory. One gap: PyTorch's CPU flash kernel has no dropout, and with
attention dropout (training, p = 0.1 in these models) SDPA falls back to materialising the
matrix. There, long sequences go through `chunked_attention` instead: queries in chunks, each
chunk's attention recomputed in the backward pass (activation checkpointing, same dropout mask),
so memory stays linear in the number of tiles. `attention_implementation("naive")` switches every
module to the textbook softmax(QK^T / sqrt(d)) V with the matrix materialised, which is what the
public WSI-Caption and HistGen code does; `benchmarks/bench_generators.py` compares the two.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

_IMPLEMENTATIONS = ("sdpa", "naive")
_current = "sdpa"


@contextlib.contextmanager
def attention_implementation(name: str) -> Iterator[None]:
    """Run the block with attention computed by `name` ("sdpa" or "naive")."""
    global _current
    if name not in _IMPLEMENTATIONS:
        raise ValueError(f"unknown attention implementation {name!r}; known: {_IMPLEMENTATIONS}")
    previous, _current = _current, name
    try:
        yield
    finally:
        _current = previous


def current_attention_implementation() -> str:
    return _current


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, mask: torch.Tensor | None = None,
           causal: bool = False, dropout: float = 0.0) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) + mask) v over (..., L, d) tensors.

    `mask` is boolean and broadcastable to (..., Lq, Lk); True marks keys a query may see.
    Every query must see at least one key.
    """
    if _current == "sdpa":
        if (dropout and not causal and q.device.type == "cpu" and torch.is_grad_enabled()
                and q.size(-2) * k.size(-2) > CHUNK_ELEMENTS):
            return chunked_attention(q, k, v, mask=mask, dropout=dropout)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout,
                                              is_causal=causal and mask is None)
    return _materialised(q, k, v, mask, causal, dropout)


# Score-matrix elements per head above which CPU training with dropout is chunked (4M: 16 MB).
CHUNK_ELEMENTS = 1 << 22


def chunked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, mask: torch.Tensor | None = None,
                      dropout: float = 0.0) -> torch.Tensor:
    """Attention with dropout on the probabilities, computed for chunks of queries whose score
    matrices are recomputed in the backward pass instead of stored (memory linear in length)."""
    from torch.utils.checkpoint import checkpoint

    lq, lk = q.size(-2), k.size(-2)
    chunk = max(64, CHUNK_ELEMENTS // max(lk, 1))
    outputs = []
    for start in range(0, lq, chunk):
        part = mask
        if mask is not None and mask.dim() >= 2 and mask.size(-2) == lq and lq > 1:
            part = mask[..., start : start + chunk, :]
        outputs.append(checkpoint(_materialised, q[..., start : start + chunk, :], k, v, part, False, dropout,
                                  use_reentrant=False))
    return torch.cat(outputs, dim=-2)


def _materialised(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                  causal: bool, dropout: float) -> torch.Tensor:
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if causal:
        lq, lk = q.size(-2), k.size(-2)
        allowed = torch.ones(lq, lk, dtype=torch.bool, device=q.device).tril(lk - lq)
        mask = allowed if mask is None else mask & allowed
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if dropout:
        weights = F.dropout(weights, dropout)
    return torch.matmul(weights, v)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query/key/value/output projections (Vaswani et al.).

    `key_mask` (B, Lk) is True on real keys; `causal` hides later positions. `project_kv`
    and `attend_projected` let a decoder project a fixed memory once and reuse it every step.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.1) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model {d_model} is not divisible by num_heads {num_heads}")
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.d_head).transpose(1, 2)

    def _merge(self, x: torch.Tensor) -> torch.Tensor:
        b, _, n, _ = x.shape
        return x.transpose(1, 2).reshape(b, n, self.d_model)

    def project_kv(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of `memory` (B, M, d) split into heads: (B, h, M, d_head) each."""
        return self._heads(self.k_proj(memory)), self._heads(self.v_proj(memory))

    def attend_projected(self, query: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                         key_mask: torch.Tensor | None = None, causal: bool = False) -> torch.Tensor:
        """Attention of `query` (B', Lq, d) over projected keys/values of B cases.

        B' may be a multiple of B (beams of each case stacked case by case): the extra queries
        are folded into the query axis, so the memory is never copied per beam.
        """
        batch = k.size(0)
        fold = query.size(0) // batch
        q = self._heads(self.q_proj(query))  # (B', h, Lq, dh)
        if fold > 1:
            bq, h, lq, dh = q.shape
            q = q.view(batch, fold, h, lq, dh).transpose(1, 2).reshape(batch, h, fold * lq, dh)
        mask = None if key_mask is None else key_mask[:, None, None, :]
        out = attend(q, k, v, mask=mask, causal=causal,
                     dropout=self.dropout if self.training else 0.0)
        if fold > 1:
            out = out.view(batch, self.num_heads, fold, -1, self.d_head).transpose(1, 2)
            out = out.reshape(batch * fold, self.num_heads, -1, self.d_head)
        return self.out_proj(self._merge(out))

    def self_attend(self, h: torch.Tensor, cache: list[torch.Tensor] | None) -> torch.Tensor:
        """Causal self-attention of `h`; with `cache` (a list, filled in place with the keys and
        values so far), one incremental decoding step: the new positions see every cached
        position and themselves."""
        if cache is None:
            return self(h, h, causal=True)
        k, v = self.project_kv(h)
        if cache:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        cache[:] = [k, v]
        return self.attend_projected(h, k, v)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor | None = None, *,
                key_mask: torch.Tensor | None = None, causal: bool = False) -> torch.Tensor:
        value = key if value is None else value
        k, v = self._heads(self.k_proj(key)), self._heads(self.v_proj(value))
        return self.attend_projected(query, k, v, key_mask=key_mask, causal=causal)
