"""Shared multiple-instance-learning machinery: padded bags, masked attention pooling, MIL heads.

Imported only when a MIL generator builds its model, so torch is imported at module level here.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from torch import nn

from pathkit_core.contracts import PathkitError
from pathkit_generators._bags import pad_bags

# (hidden width, attention width) of the CLAM-style presets; GOLDMARK's GMA uses the "big" widths.
SIZE_PRESETS: dict[str, tuple[int, int]] = {"small": (512, 256), "big": (512, 384)}
VARIANTS = ("gma", "abmil")
SAMPLING = ("random", "first")


def xavier_init(module: nn.Module) -> None:
    """Xavier-normal weights and zero biases for every linear layer (GOLDMARK and CLAM both do this)."""
    for child in module.modules():
        if isinstance(child, nn.Linear):
            nn.init.xavier_normal_(child.weight)
            if child.bias is not None:
                nn.init.zeros_(child.bias)


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over tiles (last axis) where padded tiles get exactly zero weight.

    The public GOLDMARK code builds this mask but never applies it, so with more than one
    bag per batch attention leaks onto padding; here it is applied.
    """
    logits = logits.float().masked_fill(~mask, float("-inf"))
    weights = torch.softmax(logits, dim=-1)
    # A bag with no valid tile would give NaN; it cannot occur (pad_bags refuses empty
    # batches and the dataset refuses empty bags), but keep the weights finite regardless.
    return torch.nan_to_num(weights, nan=0.0)


class GatedAttention(nn.Module):
    """Gated attention scores (Ilse et al. 2018): Linear(a_tanh * b_sigmoid) -> one score per tile."""

    def __init__(self, in_dim: int, attn_dim: int, dropout: float) -> None:
        super().__init__()
        self.attention_a = nn.Sequential(nn.Linear(in_dim, attn_dim), nn.Tanh(), nn.Dropout(dropout))
        self.attention_b = nn.Sequential(nn.Linear(in_dim, attn_dim), nn.Sigmoid(), nn.Dropout(dropout))
        self.attention_c = nn.Linear(attn_dim, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.attention_c(self.attention_a(h) * self.attention_b(h)).squeeze(-1)


class AttentionMIL(nn.Module):
    """Tile embedding MLP -> gated attention -> attention-weighted mean -> linear classifier.

    `variant="gma"`: GOLDMARK's head, two Linear-ReLU-Dropout layers (D->512->512);
    `variant="abmil"`: CLAM-style single Linear-ReLU-Dropout layer (D->512).
    """

    def __init__(self, feature_dim: int, n_classes: int, *, variant: str = "gma", size: str = "big",
                 dropout: float = 0.25) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise PathkitError(f"MIL: unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        if size not in SIZE_PRESETS:
            raise PathkitError(f"MIL: unknown size {size!r}; known: {', '.join(SIZE_PRESETS)}")
        hidden, attn = SIZE_PRESETS[size]
        layers: list[nn.Module] = [nn.Linear(feature_dim, hidden), nn.ReLU(), nn.Dropout(dropout)]
        if variant == "gma":
            layers += [nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout)]
        self.embed = nn.Sequential(*layers)
        self.attention = GatedAttention(hidden, attn, dropout)
        self.classifier = nn.Linear(hidden, n_classes)
        xavier_init(self)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, N, D) features and (B, N) mask -> logits (B, C), weights (B, N), raw scores (B, N)."""
        h = self.embed(features)
        scores = self.attention(h)
        weights = masked_softmax(scores, mask)
        pooled = torch.einsum("bn,bnd->bd", weights.to(h.dtype), h)
        return self.classifier(pooled), weights, scores.float().masked_fill(~mask, float("nan"))


def _case_seed(case_id: str) -> int:
    return int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest()[:8], "little") & 0x7FFF_FFFF


class MILClassifier(nn.Module):
    """The `TaskModel` the trainer drives: bags in, cross-entropy loss / class probabilities out.

    `max_tiles` (None: every tile, GOLDMARK's default) caps a bag: while training a fresh
    random subset each time the bag is drawn (or the first tiles with `tile_sampling="first"`),
    while predicting a fixed subset seeded by the case id, so predictions are reproducible.
    """

    def __init__(self, feature_dim: int, n_classes: int, *, variant: str, size: str, dropout: float,
                 max_tiles: int | None, tile_sampling: str) -> None:
        super().__init__()
        if tile_sampling not in SAMPLING:
            raise PathkitError(f"MIL: unknown tile_sampling {tile_sampling!r}; known: {', '.join(SAMPLING)}")
        if max_tiles is not None and int(max_tiles) < 1:
            raise PathkitError(f"MIL: max_tiles must be a positive number of tiles or None, got {max_tiles}")
        self.net = AttentionMIL(feature_dim, n_classes, variant=variant, size=size, dropout=dropout)
        self.feature_dim = feature_dim
        self.n_classes = n_classes
        self.config = {"variant": variant, "size": size, "dropout": dropout, "max_tiles": max_tiles,
                       "tile_sampling": tile_sampling}
        self.max_tiles = None if max_tiles is None else int(max_tiles)
        self.tile_sampling = tile_sampling

    # ------------------------------------------------------------------ batches

    def _keep(self, case_id: str, n: int) -> torch.Tensor:
        if self.max_tiles is None or n <= self.max_tiles:
            return torch.arange(n)
        if self.tile_sampling == "first":
            return torch.arange(self.max_tiles)
        if self.training:
            return torch.randperm(n)[: self.max_tiles].sort().values
        g = torch.Generator().manual_seed(_case_seed(case_id))
        return torch.randperm(n, generator=g)[: self.max_tiles].sort().values

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        bags, indices, files, targets = [], [], [], []
        for item in items:
            feats = torch.as_tensor(item["features"])
            if feats.ndim != 2 or feats.shape[0] == 0:
                raise PathkitError(f"MIL: case {item['case_id']!r} has a bag of shape {tuple(feats.shape)}")
            if feats.shape[1] != self.feature_dim:
                raise PathkitError(
                    f"MIL: case {item['case_id']!r} has {feats.shape[1]}-dimensional features; the model was "
                    f"built for {self.feature_dim}"
                )
            n = int(feats.shape[0])
            base_index = item.get("tile_index")
            base_index = torch.arange(n) if base_index is None else torch.as_tensor(base_index)
            base_file = item.get("tile_file")
            base_file = torch.zeros(n, dtype=torch.long) if base_file is None else torch.as_tensor(base_file)
            keep = self._keep(str(item["case_id"]), n)
            bags.append(feats[keep].float())
            indices.append(base_index[keep])
            files.append(base_file[keep])
            target = item.get("target")
            targets.append(-100 if target is None else _class_index(target, self.n_classes, item["case_id"]))
        features, mask = pad_bags(bags)
        return {"case_ids": [str(i["case_id"]) for i in items], "features": features, "mask": mask,
                "targets": torch.tensor(targets, dtype=torch.long), "tile_index": indices, "tile_file": files}

    # ------------------------------------------------------------------ TaskModel

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        logits, _, _ = self.net(batch["features"], batch["mask"])
        return nn.functional.cross_entropy(logits.float(), batch["targets"], ignore_index=-100)

    def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        logits, _, _ = self.net(batch["features"], batch["mask"])
        probs = torch.softmax(logits.float(), dim=-1).cpu()
        return [{"probabilities": p.tolist(), "label": int(p.argmax())} for p in probs]

    def tile_attention(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        """Per case: each tile's row in its feature file (and which file), its softmax attention
        weight and its raw attention score."""
        logits, weights, scores = self.net(batch["features"], batch["mask"])
        probs = torch.softmax(logits.float(), dim=-1).cpu()
        out = []
        for i, case_id in enumerate(batch["case_ids"]):
            n = int(batch["mask"][i].sum())
            out.append({
                "case_id": case_id,
                "tile_index": batch["tile_index"][i].cpu().numpy(),
                "tile_file": batch["tile_file"][i].cpu().numpy(),
                "attention": weights[i, :n].detach().cpu().numpy(),
                "attention_score": scores[i, :n].detach().cpu().numpy(),
                "probabilities": probs[i].tolist(),
            })
        return out

    def export_state(self) -> dict[str, Any]:
        return {"n_classes": self.n_classes, **self.config}


def _class_index(target: Any, n_classes: int, case_id: Any) -> int:
    if isinstance(target, bool):
        return int(target)
    try:
        value = int(target)
    except (TypeError, ValueError):
        raise PathkitError(f"MIL: case {case_id!r} has target {target!r}, not a class index") from None
    if value != target or not 0 <= value < n_classes:
        raise PathkitError(f"MIL: case {case_id!r} has target {target!r}, outside classes 0..{n_classes - 1}")
    return value
