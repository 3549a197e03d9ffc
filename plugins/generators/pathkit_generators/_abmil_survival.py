"""What the attention-MIL survival heads (abmil-cox, abmil-nll) share: the task, the training
schedule, the tile cap and the check of the feature width (docs/survival.md)."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError
from pathkit_tasks import TASK_SURVIVAL


class AttentionSurvivalHead(Generator):
    """The gated-attention MIL network over at most `max_tiles` tiles a bag; subclasses name the
    loss and build the model."""

    tasks: ClassVar[tuple[str, ...]] = (TASK_SURVIVAL,)
    default_train: ClassVar[dict[str, Any]] = {"max_epochs": 40, "lr": 2e-4, "weight_decay": 1e-4,
                                               "batch_size": 32, "early_stop_patience": 10, "selection_mode": "min"}
    default_max_tiles: ClassVar[int | None] = 4096

    def checked_hparams(self, spec: GeneratorSpec) -> dict[str, Any]:
        """The hparams of `spec`; a non-positive feature width is refused."""
        hp = self.hparams(spec.hparams)
        if spec.feature_dim <= 0:
            raise PathkitError(f"{self.name}: feature_dim must be positive, got {spec.feature_dim}")
        return hp
