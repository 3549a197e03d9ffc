"""SCOUT (Singh et al., 2026) as a torch module: the `scout` generator's model.

Architecture (the paper; public code PathBench `modules/models/scout`;
docs/report-generation.md, "SCOUT"):

1. adapters for the tile, slide and concept inputs, each an MLP d -> 2d -> 2D -> D (ReLU,
   dropout before the last layer, LayerNorm), D = d_model = 768;
2. a learnable prompt token before the tiles, the sequence padded to a square (as WSI-Caption),
   Linear(D, D) + ReLU + Dropout(drop_prob_lm), LayerNorm; slide and concept vectors LayerNorm;
3. per encoder layer i: a pre-norm transformer layer over the tile stream and a position-aware
   module (the WSI-Caption PAM); then FiLM conditioning of the tile stream on the slide vector and,
   separately, on the concept vector, LayerNorm(x * (1 + alpha * gamma) + beta) with (gamma, beta)
   from an MLP of the vector; the next layer's slide (concept) vector is the mean of the
   slide- (concept-) conditioned stream;
4. three memories: each stream's layer outputs weighted by softmax(learnable depth weights), then
   LayerNorm;
5. decoder layers: causal self-attention, separate cross-attention to the tile, slide and concept
   memories, fused per head by a gate: softmax over the three of gate logits / a learnable
   temperature; then the feed-forward (all sublayers pre-norm);
6. loss: masked NLL + `gate_entropy_weight` (0.07) x the mean entropy of the gates over layers,
   heads and real target positions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from pathkit_core.contracts import PathkitError
from pathkit_generators._scout_providers import make_provider, provider_state
from pathkit_generators._text.attention import MultiHeadAttention
from pathkit_generators._text.beam import BeamSearchConfig
from pathkit_generators._text.decoder import (
    DecodingCache,
    FeedForward,
    PreNormEncoderLayer,
    TransformerDecoder,
    xavier_init,
)
from pathkit_generators._text.model import ReportModel
from pathkit_generators._text.tokenizer import PAD_ID, ReportTokenizer
from pathkit_generators._wsi_caption_net import PositionAwareModule, pad_to_square

STREAMS = ("tile", "slide", "concept")


def adapter(in_dim: int, d_model: int, dropout: float) -> nn.Sequential:
    """SCOUT's input adapter: d -> 2d -> 2D -> D with ReLUs, dropout, LayerNorm."""
    return nn.Sequential(
        nn.Linear(in_dim, 2 * in_dim), nn.ReLU(),
        nn.Linear(2 * in_dim, 2 * d_model), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(2 * d_model, d_model), nn.LayerNorm(d_model),
    )


class FiLM(nn.Module):
    """Feature-wise linear modulation of tokens (L, D) by a conditioning vector (D_c,)."""

    def __init__(self, d_model: int, cond_dim: int, hidden: int = 1024, dropout: float = 0.2,
                 alpha: float = 0.4) -> None:
        super().__init__()
        self.alpha = alpha
        self.gamma_beta = nn.Sequential(
            nn.Linear(cond_dim, hidden), nn.ReLU(), nn.Linear(hidden, 2 * d_model), nn.Dropout(dropout),
            nn.ReLU(), nn.Linear(2 * d_model, 2 * d_model),
        )
        self.norm = nn.LayerNorm(d_model)

    def forward(self, tokens: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        gamma, beta = self.gamma_beta(condition).chunk(2, dim=-1)
        return self.norm(tokens * (1 + self.alpha * gamma) + beta)


class ScoutEncoder(nn.Module):
    """Tile stream layers with PAM, FiLM by slide and concept vectors per layer, depth-weighted streams."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, num_layers: int, dropout: float,
                 film_hidden: int, film_dropout: float, film_alpha: float) -> None:
        super().__init__()
        self.input_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.layers = nn.ModuleList(PreNormEncoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers))
        self.pams = nn.ModuleList(PositionAwareModule(d_model) for _ in range(num_layers))
        self.slide_films = nn.ModuleList(FiLM(d_model, d_model, film_hidden, film_dropout, film_alpha)
                                         for _ in range(num_layers))
        self.concept_films = nn.ModuleList(FiLM(d_model, d_model, film_hidden, film_dropout, film_alpha)
                                           for _ in range(num_layers))
        self.depth_weights = nn.Parameter(torch.ones(len(STREAMS), num_layers))
        self.stream_norms = nn.ModuleList(nn.LayerNorm(d_model, eps=1e-6) for _ in STREAMS)

    def forward(self, tiles: torch.Tensor, slide: torch.Tensor, concept: torch.Tensor) -> torch.Tensor:
        """(M, 3, D) memories of one case from its (M, D) tile tokens and (D,) slide and concept vectors."""
        outputs: list[list[torch.Tensor]] = [[], [], []]
        x = tiles[None]
        for layer, pam, slide_film, concept_film in zip(self.layers, self.pams, self.slide_films,
                                                         self.concept_films, strict=True):
            # the public code normalises the stream before every layer with one shared LayerNorm
            x = pam(layer(self.input_norm(x)))
            x_slide = slide_film(x, slide)
            x_concept = concept_film(x, concept)
            slide, concept = x_slide.mean(1)[0], x_concept.mean(1)[0]
            for stream, out in zip(outputs, (x, x_slide, x_concept), strict=True):
                stream.append(out[0])
        weights = torch.softmax(self.depth_weights, dim=-1)
        memories = [norm(torch.einsum("l,lmd->md", w, torch.stack(stream)))
                    for w, stream, norm in zip(weights, outputs, self.stream_norms, strict=True)]
        return torch.stack(memories, dim=1)


class HeadGate(nn.Module):
    """Per-head softmax gate over the three cross-attention outputs, with a learnable temperature."""

    def __init__(self, d_model: int, num_heads: int, dropout: float) -> None:
        super().__init__()
        self.num_heads, self.d_head = num_heads, d_model // num_heads
        self.logits = nn.Sequential(nn.Linear(4 * d_model, d_model), nn.ReLU(), nn.Dropout(dropout),
                                    nn.Linear(d_model, len(STREAMS) * num_heads))
        self.values = nn.ModuleList(nn.Linear(d_model, d_model) for _ in STREAMS)
        self.out_proj = nn.Linear(d_model, d_model)
        self.log_temperature = nn.Parameter(torch.zeros(()))  # temperature exp(0) = 1 at the start

    def forward(self, query: torch.Tensor, attended: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Fused output (B, L, D) and gate weights (B, L, heads, 3)."""
        b, length, d = query.shape
        logits = self.logits(torch.cat([query, *attended], dim=-1)).view(b, length, self.num_heads, len(STREAMS))
        gates = torch.softmax(logits.float() / self.log_temperature.exp(), dim=-1).to(query.dtype)
        values = torch.stack([proj(a).view(b, length, self.num_heads, self.d_head)
                              for proj, a in zip(self.values, attended, strict=True)], dim=-2)
        fused = (gates[..., None] * values).sum(-2).reshape(b, length, d)
        return self.out_proj(fused), gates


class GatedDecoderLayer(nn.Module):
    """Causal self-attention, three cross-attentions fused by the head gate, feed-forward (pre-norm)."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attns = nn.ModuleList(MultiHeadAttention(d_model, num_heads, dropout) for _ in STREAMS)
        self.gate = HeadGate(d_model, num_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.self_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.cross_norms = nn.ModuleList(nn.LayerNorm(d_model, eps=1e-6) for _ in STREAMS)
        self.gate_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.ff_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.dropout = nn.Dropout(dropout)
        self.last_gates: torch.Tensor | None = None

    def project_memories(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [attn.project_kv(memory[:, :, s]) for s, attn in enumerate(self.cross_attns)]

    def forward(self, x: torch.Tensor, memory_kv: list[tuple[torch.Tensor, torch.Tensor]],
                memory_mask: torch.Tensor | None, self_cache: list[torch.Tensor] | None = None) -> torch.Tensor:
        attn = self.self_attn.self_attend(self.self_norm(x), self_cache)
        x = x + self.dropout(attn)
        attended = [cross.attend_projected(norm(x), k, v, key_mask=memory_mask)
                    for cross, norm, (k, v) in zip(self.cross_attns, self.cross_norms, memory_kv, strict=True)]
        fused, self.last_gates = self.gate(self.gate_norm(x), attended)
        x = x + self.dropout(fused)
        return x + self.dropout(self.ff(self.ff_norm(x)))


class GatedTransformerDecoder(TransformerDecoder):
    """The shared decoder with SCOUT's gated layers; the memory is (B, M, 3, D): tile, slide, concept."""

    def __init__(self, vocab_size: int, d_model: int, num_layers: int, num_heads: int, d_ff: int,
                 dropout: float) -> None:
        super().__init__(vocab_size, d_model, num_layers, num_heads, d_ff, dropout)
        self.layers = nn.ModuleList(GatedDecoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers))

    def forward(self, tokens: torch.Tensor, memory: torch.Tensor,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x, layer.project_memories(memory), memory_mask)
        return self.logit(self.norm(x))

    def start(self, memory: torch.Tensor, memory_mask: torch.Tensor | None = None) -> DecodingCache:
        # each layer's entry holds three projected memories; `step` passes it through unchanged
        kv = [layer.project_memories(memory) for layer in self.layers]
        return DecodingCache(kv, memory_mask, [[] for _ in self.layers], 0)  # type: ignore[arg-type]

    def gates(self) -> torch.Tensor:
        """(layers, B, L, heads, 3) gate weights of the last teacher-forced pass."""
        return torch.stack([layer.last_gates for layer in self.layers])


def gate_entropy(gates: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Mean entropy of the (..., B, L, heads, 3) gates over real positions (B, L)."""
    entropy = -(gates.float() * gates.float().clamp_min(1e-8).log()).sum(-1)  # (layers, B, L, heads)
    weight = positions.to(entropy.dtype)[None, :, :, None].expand_as(entropy)
    return (entropy * weight).sum() / weight.sum().clamp_min(1.0)


class ScoutModel(ReportModel):
    """SCOUT: adapters, FiLM-conditioned encoder with depth-weighted streams, gated three-memory decoder."""

    def __init__(self, tokenizer: ReportTokenizer, decoding: BeamSearchConfig, *, feature_dim: int,
                 d_model: int = 768, d_ff: int = 768, num_heads: int = 4, num_layers: int = 3,
                 dropout: float = 0.4, adapter_dropout: float = 0.4, drop_prob_lm: float = 0.5,
                 film_hidden: int = 1024, film_dropout: float = 0.2, film_alpha: float = 0.4,
                 gate_entropy_weight: float = 0.07, slide_provider: str = "mean",
                 concept_provider: str = "prototypes", provider_hparams: Mapping[str, Any] | None = None,
                 provider_states: Mapping[str, Any] | None = None) -> None:
        if d_model % num_heads:
            raise PathkitError(f"d_model {d_model} is not divisible by num_heads {num_heads}")
        decoder = GatedTransformerDecoder(tokenizer.vocab_size, d_model, num_layers, num_heads, d_ff, dropout)
        super().__init__(tokenizer, decoder, decoding)
        states = provider_states or {}
        self.provider_names = {"slide": slide_provider, "concept": concept_provider}
        self.slide_provider = make_provider("slide", slide_provider, feature_dim, provider_hparams or {},
                                            states.get("slide"))
        self.concept_provider = make_provider("concept", concept_provider, feature_dim, provider_hparams or {},
                                              states.get("concept"))
        self.gate_entropy_weight = gate_entropy_weight
        self.tile_adapter = adapter(feature_dim, d_model, adapter_dropout)
        self.slide_adapter = adapter(self.slide_provider.out_dim, d_model, adapter_dropout)
        self.concept_adapter = adapter(self.concept_provider.out_dim, d_model, adapter_dropout)
        self.prompt = nn.Parameter(torch.randn(1, d_model))
        self.att_embed = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU(), nn.Dropout(drop_prob_lm))
        self.tile_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.slide_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.concept_norm = nn.LayerNorm(d_model, eps=1e-6)
        self.encoder = ScoutEncoder(d_model, num_heads, d_ff, num_layers, dropout, film_hidden,
                                    film_dropout, film_alpha)
        # The public __init_model: Xavier on every matrix of the encoder-decoder (encoder layers,
        # PAMs, FiLMs, decoder layers and embeddings); adapters, att_embed, providers and the
        # output layer keep PyTorch's default init.
        xavier_init(self.encoder.layers, self.encoder.pams, self.encoder.slide_films, self.encoder.concept_films,
                    self.decoder.embed, self.decoder.layers)

    def encode_slide(self, features: torch.Tensor, coords: torch.Tensor | None) -> torch.Tensor:
        slide = self.slide_norm(self.slide_adapter(self.slide_provider(features, coords)))
        concept = self.concept_norm(self.concept_adapter(self.concept_provider(features, coords)))
        tiles = torch.cat([self.prompt.to(features.dtype), self.tile_adapter(features)], dim=0)
        tiles = self.tile_norm(self.att_embed(pad_to_square(tiles)))
        return self.encoder(tiles, slide, concept)

    def training_step(self, batch: Mapping[str, Any]) -> torch.Tensor:
        loss = super().training_step(batch)
        if self.gate_entropy_weight:
            positions = batch["tokens"][:, 1:] != PAD_ID
            loss = loss + self.gate_entropy_weight * gate_entropy(self.decoder.gates(), positions).to(loss.dtype)
        return loss

    def export_state(self) -> dict[str, Any]:
        return {**super().export_state(),
                "providers": {"slide": provider_state(self.slide_provider),
                              "concept": provider_state(self.concept_provider)}}
