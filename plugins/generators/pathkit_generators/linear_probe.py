"""linear-probe: a linear head on frozen patch features, trained by steps as eva's protocol."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_PATCH_CLASSIFICATION

# eva's offline patch classification (kaiko-ai/eva; docs/hepatobench.md):
# AdamW lr 3e-4, weight decay 0, batch 256, 12,500 steps, early stop after 7 validation checks
# without a better validation balanced accuracy (the dataset's selection metric), best checkpoint,
# constant learning rate. eva checks once per epoch, about 235 steps on HepatoBench's ~60k training
# patches; pathkit checks every 250 steps whatever the training-set size, so that a small patch set
# (one step per epoch) is not stopped after 7 steps.
EVA_TRAIN: dict[str, Any] = {
    "max_steps": 12_500,
    "val_every_steps": 250,
    "lr": 3e-4,
    "weight_decay": 0.0,
    "batch_size": 256,
    "eval_batch_size": 4096,
    "early_stop_patience": 7,
    "plateau_on": "none",
    "selection_mode": "max",
}


class LinearProbe(Generator):
    """One Linear(D, K) layer over each patch's frozen feature vector, cross-entropy loss."""

    name: ClassVar[str] = "linear-probe"
    description: ClassVar[str] = "linear head on frozen patch features (eva: AdamW 3e-4, 12,500 steps, early stop)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_PATCH_CLASSIFICATION,)
    default_hparams: ClassVar[dict[str, Any]] = {"n_classes": None}
    default_train: ClassVar[dict[str, Any]] = dict(EVA_TRAIN)
    default_max_tiles: ClassVar[int | None] = None

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch

        from pathkit_generators._patch import PatchHead, n_classes

        if spec.feature_dim <= 0:
            raise PathkitError(f"{self.name}: feature_dim must be positive, got {spec.feature_dim}")
        k = int(dict(spec.state or {}).get("n_classes") or n_classes(spec, _labels(spec), self.name))

        class LinearHead(PatchHead):
            name = "linear-probe"

            def __init__(self) -> None:
                super().__init__()
                self.linear = torch.nn.Linear(spec.feature_dim, k)

            def probabilities(self, features: torch.Tensor) -> torch.Tensor:
                return self.linear(features).softmax(dim=1)

            def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
                if batch["target"] is None:
                    raise PathkitError("linear-probe: a training batch carries no classes")
                return torch.nn.functional.cross_entropy(self.linear(batch["features"]), batch["target"])

            def export_state(self) -> dict[str, Any]:
                return {"n_classes": k}

        return LinearHead()


def _labels(spec: GeneratorSpec) -> Any:
    import torch

    labels = [int(t) for t in spec.train_targets if t is not None]
    return torch.as_tensor(labels) if labels else None


@hookimpl
def register_generators(register):
    register(LinearProbe)
