"""`mean-pool-regressor`: the mean tile feature of a slide through a linear layer, trained with MSE."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError
from pathkit_example_plugin.regression import TASK_SLIDE_REGRESSION


class MeanPoolRegressor(Generator):
    """Mean-pooled tile features -> LayerNorm -> Linear(D, 1); one number per slide."""

    name: ClassVar[str] = "mean-pool-regressor"
    description: ClassVar[str] = "mean tile feature, layer norm, linear: a number per slide (MSE)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_REGRESSION,)
    default_hparams: ClassVar[dict[str, Any]] = {"dropout": 0.0}
    # TrainConfig fields (pathkit_core.training.trainer): a small head learns in tens of epochs
    default_train: ClassVar[dict[str, Any]] = {"max_epochs": 80, "lr": 1e-2, "weight_decay": 1e-4,
                                               "batch_size": 8, "early_stop_patience": 20,
                                               "plateau_patience": 10}
    default_max_tiles: ClassVar[int | None] = None

    def build(self, spec: GeneratorSpec):
        import torch
        from torch import nn

        if spec.feature_dim <= 0:
            raise PathkitError(f"{self.name}: feature_dim must be positive, got {spec.feature_dim}")
        hp = self.hparams(spec.hparams)

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.head = nn.Sequential(nn.LayerNorm(spec.feature_dim), nn.Dropout(float(hp["dropout"])),
                                          nn.Linear(spec.feature_dim, 1))

            def collate(self, items):
                # items: {"case_id", "features" (N, D), "coords", "target", "meta", ...}
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
    register(MeanPoolRegressor)
