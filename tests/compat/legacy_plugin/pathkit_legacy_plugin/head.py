"""`legacy-mean-head`: the mean tile feature of a slide through a linear layer, trained with MSE."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec
from pathkit_legacy_plugin.score import TASK_SLIDE_SCORE


class MeanHead(Generator):
    """Mean-pooled tile features -> LayerNorm -> Linear(D, 1)."""

    name: ClassVar[str] = "legacy-mean-head"
    description: ClassVar[str] = "mean tile feature, layer norm, linear (MSE)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_SCORE,)
    default_train: ClassVar[dict[str, Any]] = {"max_epochs": 20, "lr": 1e-2, "batch_size": 4,
                                               "early_stop_patience": 10, "plateau_patience": 5}
    default_max_tiles: ClassVar[int | None] = None

    def build(self, spec: GeneratorSpec):
        import torch
        from torch import nn

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.head = nn.Sequential(nn.LayerNorm(spec.feature_dim), nn.Linear(spec.feature_dim, 1))

            def collate(self, items):
                pooled = torch.stack([item["features"].float().mean(0) for item in items])
                targets = torch.tensor([float(item["target"]) if item["target"] is not None else float("nan")
                                        for item in items])
                return {"x": pooled, "y": targets}

            def training_step(self, batch):
                return nn.functional.mse_loss(self.head(batch["x"]).squeeze(-1), batch["y"])

            def predict(self, batch):
                return [{"value": float(v)} for v in self.head(batch["x"]).squeeze(-1).cpu()]

            def export_state(self):
                return {}

        return Model()


@hookimpl
def register_generators(register):
    register(MeanHead)
