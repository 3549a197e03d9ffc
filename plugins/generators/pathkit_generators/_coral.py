"""The CORAL model (`coral`): mean-pooled features in, K - 1 cumulative logits out."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pathkit_core.contracts import PathkitError


def cumulative_targets(labels: torch.Tensor, k: int) -> torch.Tensor:
    """(N, K - 1) 0/1 targets of the tasks "grade > j" for j = 0 .. K - 2."""
    return (labels[:, None] > torch.arange(k - 1, device=labels.device)[None, :]).float()


def class_probabilities(cumulative: torch.Tensor) -> torch.Tensor:
    """(N, K) class probabilities from (N, K - 1) P(grade > j), made non-increasing in j first."""
    monotone = torch.cummin(cumulative, dim=1).values
    ones = torch.ones_like(monotone[:, :1])
    upper = torch.cat([ones, monotone], dim=1)
    lower = torch.cat([monotone, torch.zeros_like(ones)], dim=1)
    return upper - lower


class CoralModel(nn.Module):
    def __init__(self, feature_dim: int, n_classes: int, *, hidden: int, dropout: float) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = feature_dim
        if hidden > 0:
            layers += [nn.Linear(feature_dim, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        layers.append(nn.Linear(width, 1, bias=False))  # the shared weight vector of the K - 1 tasks
        self.score = nn.Sequential(*layers)
        self.biases = nn.Parameter(torch.linspace(1.0, -1.0, n_classes - 1))
        self.feature_dim = feature_dim
        self.n_classes = n_classes
        self.config = {"n_classes": n_classes, "hidden": hidden, "dropout": dropout}

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        pooled, labels = [], []
        for item in items:
            feats = torch.as_tensor(item["features"]).float()
            if feats.ndim != 2 or feats.shape[0] == 0 or feats.shape[1] != self.feature_dim:
                raise PathkitError(f"coral: case {item['case_id']!r} has features of shape {tuple(feats.shape)}; "
                                   f"the model takes (tiles, {self.feature_dim})")
            pooled.append(feats.mean(dim=0))
            target = item.get("target")
            labels.append(-1 if target is None else int(target))
        return {"case_ids": [str(i["case_id"]) for i in items], "features": torch.stack(pooled),
                "labels": torch.tensor(labels, dtype=torch.long)}

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        return self.score(features) + self.biases[None, :]

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        labels = batch["labels"]
        if (labels < 0).any():
            raise PathkitError("coral: a training batch holds a case without its grade")
        logits = self.logits(batch["features"])
        targets = cumulative_targets(labels.to(logits.device), self.n_classes)
        return nn.functional.binary_cross_entropy_with_logits(logits, targets, reduction="none").sum(1).mean()

    def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        cumulative = torch.sigmoid(self.logits(batch["features"]).float()).cpu()
        grades = (cumulative > 0.5).sum(dim=1)
        probs = class_probabilities(cumulative)
        return [{"label": int(g), "probabilities": p.tolist()} for g, p in zip(grades, probs, strict=True)]

    def export_state(self) -> dict[str, Any]:
        return dict(self.config)
