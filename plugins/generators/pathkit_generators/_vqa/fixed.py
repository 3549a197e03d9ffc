"""The fixed VQA readers (no training): a seeded random choice and the majority answer position."""

from __future__ import annotations

from typing import Any

import torch

from pathkit_core.contracts import PathkitError
from pathkit_generators._hashing import stable_hash


class FixedReader(torch.nn.Module):
    """A TaskModel answering each question with `answer(item)`; it has no weights to train."""

    def collate(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return items

    def training_step(self, batch: Any) -> torch.Tensor:
        raise PathkitError(f"{type(self).__name__} is not trained")

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"answer": self.answer(item)} for item in batch]

    def answer(self, item: dict[str, Any]) -> int | None:
        raise NotImplementedError

    def export_state(self) -> dict[str, Any]:
        return {}


class RandomModel(FixedReader):
    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed

    def answer(self, item: dict[str, Any]) -> int | None:
        return stable_hash(f"{self.seed}:{item['case_id']}") % len(item["meta"]["choices"])


class PositionModel(FixedReader):
    def __init__(self, position: int) -> None:
        super().__init__()
        self.position = position

    def answer(self, item: dict[str, Any]) -> int | None:
        # a question with fewer choices than the majority position gets no answer (counted wrong)
        return self.position if self.position < len(item["meta"]["choices"]) else None

    def export_state(self) -> dict[str, Any]:
        return {"position": self.position}
