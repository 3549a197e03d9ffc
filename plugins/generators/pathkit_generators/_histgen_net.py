"""HistGen (Guo et al. MICCAI 2024) as a torch module: the `histgen` generator's model.

Architecture (the paper, public code dddavid4real/HistGen and PathBench; docs/report-generation.md, "histgen"):

1. tiles: Linear(D, d_vf) then Linear(d_vf, d_model) + ReLU + Dropout(drop_prob_lm);
2. cross-modal context: a learnable memory matrix (cmm_size x d_model) is queried by
   `prototype_num` evenly spaced tile tokens with top-k multi-head attention; every tile then
   attends to those responses and adds the result (one memory module serves vision and text);
3. local-global hierarchical encoder: tiles cut into regions of region_size - 1 tiles plus a
   learnable region token (the last region zero-padded and masked); layer 1 = region transformer
   layer (sinusoidal positions within the region), then a slide-level transformer layer over the
   region tokens, whose outputs replace them; layer 2 = region transformer layer again; LayerNorm;
4. attentive pooling inside each region, Linear + tanh: one memory token per region;
5. the shared decoder, whose text embeddings first query the same cross-modal memory and add
   the responses.

Deviations from the public code (docs/report-generation.md): the slide-level layer reads the
region tokens (the code reads each region's first tile, `outputs[:, ::region_size]`, although
it appended the region token at the end), and padding tiles are left out of the pooling.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from pathkit_generators._text.attention import MultiHeadAttention
from pathkit_generators._text.beam import BeamSearchConfig
from pathkit_generators._text.decoder import (
    PositionalEncoding,
    PreNormEncoderLayer,
    TransformerDecoder,
    xavier_init,
)
from pathkit_generators._text.model import ReportModel
from pathkit_generators._text.tokenizer import ReportTokenizer


class CrossModalMemory(nn.Module):
    """Top-k multi-head "memory querying and responding" over a (S, d) memory matrix.

    Each query keeps its `topk` best-scoring memory slots per head; the softmax over those
    scores weights their values (HistGen's `MultiThreadMemory`).
    """

    def __init__(self, d_model: int, num_heads: int, topk: int = 32, dropout: float = 0.1) -> None:
        super().__init__()
        self.num_heads, self.d_head, self.topk = num_heads, d_model // num_heads, topk
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        b, lq, d = query.shape
        h, dh = self.num_heads, self.d_head
        q = self.q_proj(query).view(b, lq, h, dh).transpose(1, 2)  # (B, h, Lq, dh)
        k = self.k_proj(memory).view(-1, h, dh).transpose(0, 1)  # (h, S, dh)
        v = self.v_proj(memory).view(-1, h, dh).transpose(0, 1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dh)  # (B, h, Lq, S)
        top, index = scores.topk(min(self.topk, k.size(1)), dim=-1)
        weights = self.dropout(torch.softmax(top, dim=-1))
        picked = v[torch.arange(h, device=v.device)[None, :, None, None], index]  # (B, h, Lq, k, dh)
        out = torch.matmul(weights.unsqueeze(-2), picked).squeeze(-2)  # (B, h, Lq, dh)
        return self.out_proj(out.transpose(1, 2).reshape(b, lq, d))


class HistGenModel(ReportModel):
    """HistGen encoder (cross-modal memory, hierarchical region/slide transformer) + shared decoder."""

    def __init__(self, tokenizer: ReportTokenizer, decoding: BeamSearchConfig, *, feature_dim: int,
                 d_vf: int = 1024, d_model: int = 512, d_ff: int = 512, num_heads: int = 4,
                 num_layers: int = 3, dropout: float = 0.1, drop_prob_lm: float = 0.5, topk: int = 32,
                 prototype_num: int = 512, cmm_size: int = 2048, region_size: int = 256) -> None:
        if region_size < 2:
            raise ValueError("region_size must be at least 2 (one tile and the region token)")
        decoder = TransformerDecoder(tokenizer.vocab_size, d_model, num_layers, num_heads, d_ff, dropout,
                                     token_adapter=self._text_memory_response)
        super().__init__(tokenizer, decoder, decoding)
        self.region_size, self.prototype_num = region_size, prototype_num
        self.wsi_mapping = nn.Linear(feature_dim, d_vf)
        self.att_embed = nn.Sequential(nn.Linear(d_vf, d_model), nn.ReLU(), nn.Dropout(drop_prob_lm))
        self.cmn = CrossModalMemory(d_model, num_heads, topk, dropout)
        self.memory_matrix = nn.Parameter(torch.empty(cmm_size, d_model))
        nn.init.normal_(self.memory_matrix, 0.0, 1.0 / d_model)
        self.attn_mem = MultiHeadAttention(d_model, num_heads, dropout)
        self.region_token = nn.Parameter(torch.randn(1, 1, d_model))
        self.region_positions = PositionalEncoding(d_model, dropout)
        self.region_layers = nn.ModuleList(
            PreNormEncoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(2)
        )
        self.slide_layer = PreNormEncoderLayer(d_model, num_heads, d_ff, dropout)
        self.norm = nn.LayerNorm(d_model, eps=1e-6)
        self.pool_proj = nn.Linear(d_model, d_model)
        self.pool_score = nn.Linear(d_model, 1, bias=False)
        self.pool_dense = nn.Linear(d_model, d_model)
        # the public code's make_model: Xavier on the hierarchical encoder, the memory module and
        # the decoder layers and embeddings; tile projections, memory matrix and output layer not.
        xavier_init(self.region_token, self.region_layers, self.slide_layer, self.pool_proj,
                    self.pool_score, self.pool_dense, self.cmn, self.decoder.embed, self.decoder.layers)

    def _text_memory_response(self, embeddings: torch.Tensor) -> torch.Tensor:
        return embeddings + self.cmn(embeddings, self.memory_matrix.to(embeddings.dtype))

    def encode_slide(self, features: torch.Tensor, coords: torch.Tensor | None) -> torch.Tensor:
        x = self.att_embed(self.wsi_mapping(features))  # (N, d)
        n, d = x.shape
        # cross-modal context: evenly spaced tile tokens query the memory matrix
        index = torch.linspace(0, n - 1, steps=self.prototype_num, device=x.device).long()
        responses = self.cmn(x[index][None], self.memory_matrix.to(x.dtype))
        x = x + self.attn_mem(x[None], responses)[0]
        # regions of region_size - 1 tiles, each closed by a region token
        per_region = self.region_size - 1
        regions = -(-n // per_region)
        pad = regions * per_region - n
        valid = torch.ones(regions * per_region, dtype=torch.bool, device=x.device)
        if pad:
            x = torch.cat([x, x.new_zeros(pad, d)])
            valid[n:] = False
        tokens = self.region_token.to(x.dtype).expand(regions, 1, d)
        h = torch.cat([x.view(regions, per_region, d), tokens], dim=1)  # (R, region_size, d)
        mask = torch.cat([valid.view(regions, per_region),
                          torch.ones(regions, 1, dtype=torch.bool, device=x.device)], dim=1)
        h = self.region_layers[0](self.region_positions(h), key_mask=mask)
        slide = self.slide_layer(self.region_positions(h[:, -1][None]))[0]
        h = torch.cat([h[:, :-1], slide[:, None]], dim=1)
        h = self.norm(self.region_layers[1](self.region_positions(h), key_mask=mask))
        scores = torch.tanh(self.pool_score(self.pool_proj(h))).squeeze(-1)
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        pooled = torch.einsum("rn,rnd->rd", weights, h)
        return F.tanh(self.pool_dense(pooled))
