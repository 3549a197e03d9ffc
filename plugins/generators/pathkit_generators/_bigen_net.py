"""BiGen (Zhang et al., MICCAI 2025) as a torch module: the `bigen` generator's model.

Architecture (the paper; public code DeepMed-Lab-ECNU/BiGen and PathBench
`modules/models/bigen`; docs/report-generation.md, "BiGen"):

1. tiles: Linear(D, d_model) + ReLU + Dropout(drop_prob_lm) (the R2Gen `att_embed`);
2. a learnable visual latent and a learnable text latent (1 x d_model each);
3. ONE encoder layer, its weights shared across `iterations` (3) applications and across the two
   latents: pre-norm cross-attention (latent queries, tiles or retrieved text as keys), a
   feed-forward, pre-norm self-attention over the latent, a second feed-forward;
4. iteration 1 updates the visual latent only; its cross-attention weights (mean over heads) rank
   the tiles; the top `top_fraction` (40%) of tiles, in rank order, form regions of
   `region_size` (10) tiles whose mean feature queries the knowledge bank by cosine similarity;
   each region takes the mean embedding of its `top_k` (3) nearest sentences, and
   Linear(E, d_model) of those vectors is the text memory;
5. iterations 2..n update both latents (the text latent attends to the text memory);
6. the decoder memory is two tokens: the mean of the visual latent over all iterations and the
   mean of the text latent over iterations 2..n (the public code's `o` and `ot` are sums; the
   means differ only by a constant scale, which trains much faster; docs, deviations);
7. the shared transformer decoder (`_text.decoder`).

Retrieval space. The reference compares region means of a second, text-aligned tile embedding
(PLIP, or CONCH v1 in PathBench) with sentence embeddings of the same vision-language model.
pathkit gives a generator one encoder's tile features, so by default (`query_space="learned"`)
a linear map takes region means into the bank's space and is trained by an auxiliary retrieval
loss: each region's softmax over the bank (cosine / `align_temperature`) should spread its mass
evenly over the sentences of the case's own report. `query_space="identity"` compares the raw region means
(for tile features that already live in the bank's space) and has no auxiliary loss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pathkit_core.contracts import PathkitError
from pathkit_generators._knowledge_bank import KnowledgeBank
from pathkit_generators._text.attention import MultiHeadAttention
from pathkit_generators._text.beam import BeamSearchConfig
from pathkit_generators._text.decoder import FeedForward, TransformerDecoder, xavier_init
from pathkit_generators._text.model import ReportModel
from pathkit_generators._text.tokenizer import ReportTokenizer

QUERY_SPACES = ("learned", "identity")


def rank_regions(order: torch.Tensor, n_tiles: int, top_fraction: float, region_size: int) -> torch.Tensor:
    """(R, region_size) tile indices of the top-ranked tiles in rank order, -1 where a region is short."""
    keep = max(1, int(n_tiles * top_fraction))
    top = order[:keep]
    regions = -(-keep // region_size)
    padded = top.new_full((regions * region_size,), -1)
    padded[:keep] = top
    return padded.view(regions, region_size)


def region_means(features: torch.Tensor, regions: torch.Tensor) -> torch.Tensor:
    """(R, D) mean feature of each region's real tiles (the public code also averages zero padding)."""
    valid = regions >= 0
    gathered = features[regions.clamp_min(0)] * valid[..., None].to(features.dtype)
    return gathered.sum(1) / valid.sum(1, keepdim=True).to(features.dtype)


def retrieve(queries: torch.Tensor, bank: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine similarities (R, S) of region queries to the bank and the indices (R, k) of the k nearest."""
    sims = F.normalize(queries.float(), dim=-1) @ F.normalize(bank.float(), dim=-1).T
    return sims, sims.topk(min(top_k, bank.size(0)), dim=-1).indices


class SharedLatentLayer(nn.Module):
    """BiGen's encoder layer: latent cross-attention, feed-forward, latent self-attention, feed-forward."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = nn.ModuleList(FeedForward(d_model, d_ff, dropout) for _ in range(2))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model, eps=1e-6) for _ in range(4))
        self.dropout = nn.Dropout(dropout)

    def attention_weights(self, latent: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """(B, N) cross-attention weights of the latent over the keys, averaged over heads."""
        mha = self.cross_attn
        q = mha.q_proj(self.norms[0](latent)).view(latent.size(0), -1, mha.num_heads, mha.d_head).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(mha.d_head)  # (B, h, 1, N)
        return torch.softmax(scores.float(), dim=-1).mean(1)[:, 0]

    def forward(self, latent: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        h = self.norms[0](latent)
        latent = latent + self.dropout(self.cross_attn.attend_projected(h, *kv))
        latent = latent + self.dropout(self.ff[0](self.norms[1](latent)))
        h = self.norms[2](latent)
        latent = latent + self.dropout(self.self_attn(h, h))
        return latent + self.dropout(self.ff[1](self.norms[3](latent)))


class BiGenModel(ReportModel):
    """BiGen: visual and text latents through one shared layer, knowledge retrieval, two memory tokens."""

    def __init__(self, tokenizer: ReportTokenizer, decoding: BeamSearchConfig, *, feature_dim: int,
                 bank: KnowledgeBank | None = None, bank_state: Mapping[str, Any] | None = None,
                 d_model: int = 512, d_ff: int = 512, num_heads: int = 4, num_layers: int = 3,
                 iterations: int = 3, dropout: float = 0.1, drop_prob_lm: float = 0.5,
                 top_fraction: float = 0.4, region_size: int = 10, top_k: int = 3,
                 query_space: str = "learned", align_weight: float = 1.0,
                 align_temperature: float = 0.07) -> None:
        if iterations < 2:
            raise PathkitError("BiGen needs at least 2 iterations (the text latent starts at the second)")
        if not 0.0 < top_fraction <= 1.0 or region_size < 1 or top_k < 1:
            raise PathkitError(f"BiGen retrieval settings out of range: top_fraction {top_fraction} "
                               f"(0, 1], region_size {region_size} >= 1, top_k {top_k} >= 1")
        if query_space not in QUERY_SPACES:
            raise PathkitError(f"unknown BiGen query_space {query_space!r}; known: {', '.join(QUERY_SPACES)}")
        if align_temperature <= 0:
            raise PathkitError(f"align_temperature must be positive, not {align_temperature}")
        decoder = TransformerDecoder(tokenizer.vocab_size, d_model, num_layers, num_heads, d_ff, dropout)
        super().__init__(tokenizer, decoder, decoding)
        if bank is not None:
            self.bank_state: dict[str, Any] = bank.state()
            embeddings = bank.embeddings.float()
        elif bank_state:
            self.bank_state = dict(bank_state)
            embeddings = torch.zeros(int(bank_state["size"]), int(bank_state["dim"]))  # filled by the checkpoint
        else:
            raise PathkitError("BiGen needs a knowledge bank (built from the train reports) or its saved state")
        bank_dim = int(embeddings.shape[1])
        if query_space == "identity" and bank_dim != feature_dim:
            raise PathkitError(f"query_space='identity' compares tile features ({feature_dim}-d) with the "
                               f"knowledge bank ({bank_dim}-d) directly: the sizes must match")
        self.register_buffer("knowledge_bank", embeddings)
        self._bank_rows = {s: i for i, s in enumerate(self.bank_state.get("sentences", []))}
        self.iterations, self.top_fraction, self.region_size, self.top_k = iterations, top_fraction, region_size, top_k
        self.query_space, self.align_weight, self.align_temperature = query_space, align_weight, align_temperature
        self.att_embed = nn.Sequential(nn.Linear(feature_dim, d_model), nn.ReLU(), nn.Dropout(drop_prob_lm))
        self.visual_latent = nn.Parameter(torch.randn(1, d_model))
        self.text_latent = nn.Parameter(torch.randn(1, d_model))
        self.layer = SharedLatentLayer(d_model, num_heads, d_ff, dropout)
        self.retrieval_query = nn.Linear(feature_dim, bank_dim) if query_space == "learned" else nn.Identity()
        self.down_proj = nn.Linear(bank_dim, d_model)
        # The public make_model: Xavier on every matrix of the encoder-decoder transformer (latents,
        # shared layer, down projection, decoder layers and embeddings); att_embed and logit keep
        # PyTorch's default init.
        xavier_init(self.visual_latent, self.text_latent, self.layer, self.down_proj,
                    self.decoder.embed, self.decoder.layers)
        self._region_sims: list[torch.Tensor] = []
        self.last_retrieval: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ encoder

    def encode(self, batch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        self._region_sims, self.last_retrieval = [], []
        return super().encode(batch)

    def encode_slide(self, features: torch.Tensor, coords: torch.Tensor | None) -> torch.Tensor:
        x = self.att_embed(features)[None]  # (1, N, d)
        tiles_kv = self.layer.cross_attn.project_kv(x)
        visual = self.visual_latent.to(x.dtype)[None]  # (1, 1, d)
        weights = self.layer.attention_weights(visual, tiles_kv[0])[0]  # (N,)
        visual = self.layer(visual, tiles_kv)
        visual_sum = visual

        order = torch.argsort(weights.detach(), descending=True)
        regions = rank_regions(order, features.size(0), self.top_fraction, self.region_size)
        queries = self.retrieval_query(region_means(features, regions))
        sims, nearest = retrieve(queries, self.knowledge_bank, self.top_k)
        self._region_sims.append(sims)
        self.last_retrieval.append({"tile_weights": weights.detach(), "regions": regions, "sentences": nearest})
        knowledge = self.knowledge_bank[nearest].mean(1).to(x.dtype)  # (R, E)
        text_kv = self.layer.cross_attn.project_kv(self.down_proj(knowledge)[None])

        text = self.text_latent.to(x.dtype)[None]
        text_sum = None
        for _ in range(1, self.iterations):
            visual = self.layer(visual, tiles_kv)
            text = self.layer(text, text_kv)
            visual_sum = visual_sum + visual
            text_sum = text if text_sum is None else text_sum + text
        # means rather than the public code's sums: a fixed rescaling that the decoder's key/value
        # maps could absorb, but the sums' growing scale slowed learning several-fold in our tests
        return torch.cat([visual_sum / self.iterations, text_sum / (self.iterations - 1)], dim=1)[0]  # (2, d)

    # ------------------------------------------------------------------ training

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super().collate(items)
        targets = [it.get("target") for it in items]
        if self._bank_rows and all(isinstance(t, str) for t in targets):
            from pathkit_generators._knowledge_bank import split_sentences

            batch["bank_positives"] = [sorted({self._bank_rows[s] for s in split_sentences(t) if s in self._bank_rows})
                                       for t in targets]
        return batch

    def alignment_loss(self, positives: list[list[int]]) -> torch.Tensor | None:
        """Cross-entropy of each region's softmax over the bank against a uniform target over the
        sentences of the case's own report (so each of them, not only the most common one, is pulled
        into the top k), averaged over regions and cases."""
        losses = []
        for sims, rows in zip(self._region_sims, positives, strict=True):
            if not rows:
                continue
            logits = sims / self.align_temperature
            wanted = torch.as_tensor(rows, device=logits.device)
            losses.append((logits.logsumexp(-1) - logits[:, wanted].mean(-1)).mean())
        return torch.stack(losses).mean() if losses else None

    def training_step(self, batch: Mapping[str, Any]) -> torch.Tensor:
        loss = super().training_step(batch)
        if self.query_space == "learned" and self.align_weight > 0 and batch.get("bank_positives"):
            align = self.alignment_loss(batch["bank_positives"])
            if align is not None:
                loss = loss + self.align_weight * align.to(loss.dtype)
        return loss

    def retrieved_sentences(self, batch: Mapping[str, Any]) -> list[list[list[str]]]:
        """Per case, per region: the bank sentences retrieved for it (an explanation of a prediction)."""
        sentences = self.bank_state.get("sentences", [])
        if not sentences:
            raise PathkitError("this BiGen model's state holds no bank sentences")
        with torch.no_grad():
            self.encode(batch)
        return [[[sentences[i] for i in row.tolist()] for row in r["sentences"]] for r in self.last_retrieval]

    def export_state(self) -> dict[str, Any]:
        return {**super().export_state(), "knowledge_bank": self.bank_state}
