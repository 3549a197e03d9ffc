"""WSI-Caption (MI-Gen, Chen et al. MICCAI 2024) as a torch module: the `wsi-caption` generator's model.

Architecture (the paper, public code cpystan/Wsi-Caption and PathBench; docs/report-generation.md, "wsi-caption"):

1. a learnable prompt vector (in tile-feature space) is put in front of the tiles;
2. the sequence is padded to a square number of tokens by repeating its first tokens;
3. each token: Linear(D, d_model) + ReLU + Dropout(drop_prob_lm = 0.5);
4. `num_layers` pre-norm transformer encoder layers; after each one a position-aware module
   (PAM) reshapes the tokens to a sqrt(N) x sqrt(N) grid and sums depthwise convolutions with
   kernels 13, 7 and 3 and the identity; the memory is the sum of the PAM outputs of all layers
   (the public code's `Encoder.forward`; there is no final norm);
5. the shared transformer decoder (`_text.decoder`) attends to that memory.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from pathkit_generators._text.beam import BeamSearchConfig
from pathkit_generators._text.decoder import PreNormEncoderLayer, TransformerDecoder, xavier_init
from pathkit_generators._text.model import ReportModel
from pathkit_generators._text.tokenizer import ReportTokenizer


class PositionAwareModule(nn.Module):
    """PAM: tokens on a square grid, identity + depthwise convolutions of kernel 13, 7 and 3."""

    def __init__(self, d_model: int, kernels: tuple[int, ...] = (13, 7, 3)) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv2d(d_model, d_model, k, 1, k // 2, groups=d_model) for k in kernels
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        side = math.isqrt(n)
        if side * side != n:
            raise ValueError(f"the position-aware module needs a square token count, got {n}")
        # token t sits at row t // side, column t % side; (B, side, side, C) viewed as (B, C, side,
        # side) is the channels-last layout, in which CPU depthwise convolutions (backward above
        # all) run an order of magnitude faster than in the default layout
        grid = x.reshape(b, side, side, c).permute(0, 3, 1, 2)
        # identity + conv13 + conv7 + conv3 is one depthwise convolution whose kernel is the sum
        # of the three (centred, zero-padded) plus a unit centre tap: one pass instead of three
        size = max(conv.kernel_size[0] for conv in self.convs)
        kernel = grid.new_zeros(c, 1, size, size)
        bias = grid.new_zeros(c)
        for conv in self.convs:
            pad = (size - conv.kernel_size[0]) // 2
            kernel = kernel + F.pad(conv.weight, (pad, pad, pad, pad))
            if conv.bias is not None:
                bias = bias + conv.bias
        identity = torch.zeros_like(kernel)
        identity[:, :, size // 2, size // 2] = 1.0
        out = F.conv2d(grid, kernel + identity, bias, padding=size // 2, groups=c)
        return out.permute(0, 2, 3, 1).reshape(b, n, c)


def pad_to_square(tokens: torch.Tensor) -> torch.Tensor:
    """(N, D) tokens followed by copies of the first tokens up to the next square count."""
    n = tokens.size(0)
    side = math.isqrt(n)
    side += side * side < n
    extra = side * side - n
    if extra == 0:
        return tokens
    reps = torch.arange(extra, device=tokens.device) % n
    return torch.cat([tokens, tokens[reps]], dim=0)


class WSICaptionModel(ReportModel):
    """MI-Gen encoder (prompt, square padding, transformer + PAM) and the shared decoder."""

    def __init__(self, tokenizer: ReportTokenizer, decoding: BeamSearchConfig, *, feature_dim: int,
                 d_model: int = 512, d_ff: int = 512, num_heads: int = 4, num_layers: int = 3,
                 dropout: float = 0.1, drop_prob_lm: float = 0.5) -> None:
        decoder = TransformerDecoder(tokenizer.vocab_size, d_model, num_layers, num_heads, d_ff, dropout)
        super().__init__(tokenizer, decoder, decoding)
        self.prompt = nn.Parameter(torch.randn(1, feature_dim))
        self.att_embed = nn.Sequential(nn.Linear(feature_dim, d_model), nn.ReLU(), nn.Dropout(drop_prob_lm))
        self.encoder_layers = nn.ModuleList(
            PreNormEncoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)
        )
        self.pams = nn.ModuleList(PositionAwareModule(d_model) for _ in range(num_layers))
        # R2Gen's make_model: Xavier on the transformer (encoder, PAM, decoder layers, embeddings);
        # the tile projection and the output layer keep PyTorch's default init.
        xavier_init(self.encoder_layers, self.pams, self.decoder.embed, self.decoder.layers)

    def encode_slide(self, features: torch.Tensor, coords: torch.Tensor | None) -> torch.Tensor:
        tokens = torch.cat([self.prompt.to(features.dtype), features], dim=0)
        x = self.att_embed(pad_to_square(tokens))[None]
        memory = None
        for layer, pam in zip(self.encoder_layers, self.pams, strict=True):
            x = layer(x)
            out = pam(x)
            memory = out if memory is None else memory + out
        return memory[0]
