"""A tiny regression TaskModel with dropout, for trainer tests (importable by subprocess scripts)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class TinyRegressor(nn.Module):
    """Predicts a number from the mean tile feature; dropout makes RNG state matter on resume."""

    def __init__(self, dim: int = 4, dropout: float = 0.3) -> None:
        super().__init__()
        self.hidden = nn.Linear(dim, 8)
        self.out = nn.Linear(8, 1)
        self.drop = nn.Dropout(dropout)
        self.trained_on: list[str] = []  # case ids seen by training steps (distributed test)

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {"x": torch.stack([torch.as_tensor(it["features"]).float().mean(0) for it in items]),
                "y": torch.tensor([float(it["target"]) for it in items]),
                "case_ids": [it["case_id"] for it in items]}

    def forward_values(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(torch.relu(self.hidden(x)))).squeeze(-1)

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        if self.training:
            self.trained_on.extend(batch["case_ids"])
        return ((self.forward_values(batch["x"]) - batch["y"]) ** 2).mean()

    def predict(self, batch: dict[str, Any]) -> list[float]:
        return [round(float(v), 6) for v in self.forward_values(batch["x"])]

    def export_state(self) -> dict[str, Any]:
        return {"dim": self.hidden.in_features}


def make_items(n: int, seed: int, dim: int = 4) -> list[dict[str, Any]]:
    """Cases whose target is the sum of the mean tile feature."""
    gen = torch.Generator().manual_seed(seed)
    items = []
    for i in range(n):
        features = torch.randn(5, dim, generator=gen)
        items.append({"case_id": f"c{seed}-{i}", "features": features, "coords": None,
                      "target": float(features.mean(0).sum())})
    return items
