"""coral: a rank-consistent ordinal head (CORAL, Cao, Mirjalili & Raschka 2020) over mean-pooled
features, for the `ordinal` task (docs/ordinal.md)."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_ORDINAL


class CoralHead(Generator):
    """A slide's (or patch's) features are mean-pooled, optionally passed through one hidden layer,
    and mapped to one score g; K - 1 biases b_k give P(grade > k) = sigmoid(g + b_k). The loss is
    the sum over k of the binary cross-entropies of the K - 1 "grade > k" tasks (CORAL, eq. 4, equal
    task weights); the predicted grade is the number of k with P(grade > k) > 0.5 (eq. 5). The class
    probabilities written are the differences of the cumulative probabilities, made non-increasing
    first (they sum to 1)."""

    name: ClassVar[str] = "coral"
    description: ClassVar[str] = "CORAL rank-consistent ordinal head on mean-pooled features"
    tasks: ClassVar[tuple[str, ...]] = (TASK_ORDINAL,)
    default_hparams: ClassVar[dict[str, Any]] = {"hidden": 0, "dropout": 0.1}
    default_train: ClassVar[dict[str, Any]] = {"max_epochs": 100, "lr": 1e-3, "weight_decay": 1e-4,
                                               "batch_size": 16, "early_stop_patience": 20, "selection_mode": "min"}
    default_max_tiles: ClassVar[int | None] = None

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._coral import CoralModel

        hp = self.hparams(spec.hparams)
        k = len(spec.class_names) or int((spec.state or {}).get("n_classes") or 0)
        if k < 2:
            raise PathkitError(f"{self.name}: an ordinal head needs two or more ordered classes (got {k})")
        if spec.feature_dim <= 0:
            raise PathkitError(f"{self.name}: feature_dim must be positive, got {spec.feature_dim}")
        return CoralModel(spec.feature_dim, k, hidden=int(hp["hidden"]), dropout=float(hp["dropout"]))


@hookimpl
def register_generators(register):
    register(CoralHead)
