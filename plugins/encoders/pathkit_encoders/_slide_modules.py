"""Torch modules of the slide encoders (imported lazily: it imports torch).

Each maps (features (B, N, D), coords (B, N, 2)) to slide embeddings (B, E) and names its
parameters as the published checkpoint does, so that the checkpoint loads strictly. Sources:
docs/encoders.md, "Slide encoders".
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class GatedAttention(nn.Module):
    """Ilse et al.'s gated attention scores: tanh(a(x)) * sigmoid(b(x)) -> c, one score per
    instance and head (`attention_a.0`, `attention_b.0`, `attention_c`, as the CLAM family names
    them; the dropout layers hold no parameters)."""

    def __init__(self, dim: int, hidden: int, heads: int = 1, dropout: float = 0.25) -> None:
        super().__init__()
        self.attention_a = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Dropout(dropout))
        self.attention_b = nn.Sequential(nn.Linear(dim, hidden), nn.Sigmoid(), nn.Dropout(dropout))
        self.attention_c = nn.Linear(hidden, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention_c(self.attention_a(x) * self.attention_b(x))


class _FeatherCore(nn.Module):
    def __init__(self, in_dim: int, embed_dim: int, attn_dim: int, num_classes: int) -> None:
        super().__init__()
        self.patch_embed = nn.Sequential(nn.Linear(in_dim, embed_dim), nn.ReLU(), nn.Dropout(0.25))
        self.global_attn = GatedAttention(embed_dim, attn_dim, heads=1)
        self.classifier = nn.Linear(embed_dim, num_classes)


class FeatherABMIL(nn.Module):
    """FEATHER (MIL-Lab's `abmil.base`): patch embedding Linear(in, 512) + ReLU, gated attention
    (384 hidden, one head), the attention-weighted sum of the embedded patches as the slide
    embedding (`forward_features`); the pan-cancer classifier of the release is kept so that its
    checkpoint (keys under `model.`) loads, and is not part of the embedding."""

    def __init__(self, in_dim: int = 768, embed_dim: int = 512, attn_dim: int = 384, num_classes: int = 108) -> None:
        super().__init__()
        self.model = _FeatherCore(in_dim, embed_dim, attn_dim, num_classes)

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        h = self.model.patch_embed(features)                                   # B x N x E
        weights = F.softmax(self.model.global_attn(h).transpose(-2, -1), dim=-1)  # B x 1 x N
        return torch.bmm(weights, h).flatten(1)                                # B x E


class _MadeleineEmbedder(nn.Module):
    def __init__(self, in_dim: int, hidden: int, heads: int) -> None:
        super().__init__()
        widths = [(in_dim, hidden), (hidden, hidden), (hidden, hidden * heads)]
        layers: list[nn.Module] = []
        for width_in, width_out in widths:
            layers += [nn.Linear(width_in, width_out), nn.LayerNorm(width_out), nn.GELU(), nn.Dropout(0.1)]
        self.pre_attn = nn.Sequential(*layers)
        self.attn = nn.ModuleList([GatedAttention(hidden, hidden, heads=1) for _ in range(heads)])
        self.heads = heads


class Madeleine(nn.Module):
    """MADELEINE's H&E slide embedder (`encode_he`): a 3-layer pre-attention MLP (LayerNorm,
    GELU) to `heads` x 512, one gated attention per head over that head's 512-d slice (softmax over
    the patches), the attention-weighted sums concatenated (embedding-major, as the public code's
    `view`) and projected to 512 (`projector`). `token_projector` (the local-alignment head of
    pretraining) is kept so that the checkpoint loads, and is not part of the embedding."""

    def __init__(self, in_dim: int = 512, hidden: int = 512, heads: int = 4) -> None:
        super().__init__()
        self.wsi_embedders = _MadeleineEmbedder(in_dim, hidden, heads)
        self.token_projector = nn.Linear(hidden * heads, 128)
        self.projector = nn.Linear(hidden * heads, hidden)

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        emb = self.wsi_embedders
        tokens = emb.pre_attn(features)                                      # B x N x (E*H)
        batch, n, _ = tokens.shape
        tokens = tokens.reshape(batch, n, -1, emb.heads)                     # B x N x E x H ('(e c)')
        weights = torch.stack([F.softmax(attn(tokens[..., i]), dim=1) for i, attn in enumerate(emb.attn)],
                              dim=-1)                                        # B x N x 1 x H
        pooled = (tokens * weights).sum(dim=1)                               # B x E x H
        return self.projector(pooled.reshape(batch, -1))


class _ChiefHead(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, 1)


class Chief(nn.Module):
    """CHIEF's slide model (`size_arg="small"`): Linear(768, 512) + ReLU, gated attention (256
    hidden) and the softmax-weighted sum of the 512-d patch embeddings (`WSI_feature`, 512-d); the
    bag and instance classifiers, the attention head, the text-to-vision projection and the 19
    organ embeddings of the release are kept so that `CHIEF_pretraining.pth` loads strictly; the
    embedding does not use them (no anatomic site is added)."""

    def __init__(self, in_dim: int = 768, hidden: int = 512, attn_dim: int = 256, n_classes: int = 2) -> None:
        super().__init__()
        self.attention_net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Dropout(0.25),
                                           _ChiefAttention(hidden, attn_dim))
        self.classifiers = nn.Linear(hidden, n_classes)
        self.instance_classifiers = nn.ModuleList([nn.Linear(hidden, 2) for _ in range(n_classes)])
        self.att_head = _ChiefHead(hidden, attn_dim)
        self.text_to_vision = nn.Sequential(nn.Linear(768, hidden), nn.ReLU(), nn.Dropout(0.25))
        self.register_buffer("organ_embedding", torch.zeros(19, 768))

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        scores, h = self.attention_net(features)                             # B x N x 1, B x N x E
        weights = F.softmax(scores.transpose(-2, -1), dim=-1)                # B x 1 x N
        return torch.bmm(weights, h).flatten(1)


class _ChiefAttention(GatedAttention):
    """CHIEF's `Attn_Net_Gated`: the scores and its input, passed on through the Sequential."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        return super().forward(x), x


class MeanPool(nn.Module):
    """The mean of a slide's patch features: the always-available slide-level baseline."""

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        return features.mean(dim=1)
