"""logistic-regression: UNI's linear-probe protocol, multinomial logistic regression by L-BFGS."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import TASK_PATCH_CLASSIFICATION, Generator, GeneratorSpec, PathkitError, TaskModel


class LogisticRegressionProbe(Generator):
    """scikit-learn's L-BFGS logistic regression with C = D*K/100 (D feature dimension, K classes
    in the training labels) and max_iter 1000, fitted on train + validation as UNI's
    `eval_linear_probe` does by default (`combine_trainval`). Fitted when the model is built: the
    core training loop is not used (docs/hepatobench.md)."""

    name: ClassVar[str] = "logistic-regression"
    description: ClassVar[str] = "L-BFGS logistic regression on frozen patch features (UNI: C = D*K/100)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_PATCH_CLASSIFICATION,)
    default_hparams: ClassVar[dict[str, Any]] = {"C": None, "max_iter": 1000, "combine_trainval": True,
                                                 "n_classes": None}
    default_train: ClassVar[dict[str, Any]] = {"batch_size": 4096}
    default_max_tiles: ClassVar[int | None] = None
    needs_fit: ClassVar[bool] = False

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import numpy as np
        import torch
        from sklearn.linear_model import LogisticRegression

        from pathkit_generators._patch import PatchHead, n_classes, training_set

        hp = self.hparams(spec.hparams)
        feats, labels = training_set(spec, self.name, with_val=bool(hp["combine_trainval"]))
        k = n_classes(spec, labels, self.name)
        seen = sorted(set(labels.tolist()))
        if len(seen) < 2:
            raise PathkitError(f"{self.name}: every training patch has class {seen[0]}; a classifier needs two")
        c = float(hp["C"]) if hp["C"] is not None else feats.shape[1] * len(seen) / 100.0
        model = LogisticRegression(C=c, max_iter=int(hp["max_iter"]), solver="lbfgs", random_state=0)
        model.fit(feats.numpy(), labels.numpy())
        coef, intercept = np.asarray(model.coef_), np.asarray(model.intercept_)
        if coef.shape[0] == 1:  # scikit-learn's binary form: one logit for the second class
            coef, intercept = np.vstack([np.zeros_like(coef), coef]), np.concatenate([[0.0], intercept])
        weight = torch.zeros(k, feats.shape[1])
        bias = torch.full((k,), -torch.inf)  # a class without training patches is never predicted
        rows = torch.as_tensor([int(c_) for c_ in model.classes_])
        weight[rows] = torch.as_tensor(coef, dtype=torch.float32)
        bias[rows] = torch.as_tensor(intercept, dtype=torch.float32)
        fitted = {"C": c, "n_iter": int(np.max(model.n_iter_)), "classes_seen": len(seen)}

        class FittedLogisticRegression(PatchHead):
            name = "logistic-regression"

            def __init__(self) -> None:
                super().__init__()
                self.register_buffer("weight", weight)
                self.register_buffer("bias", bias)

            def probabilities(self, features: torch.Tensor) -> torch.Tensor:
                return (features @ self.weight.T + self.bias).softmax(dim=1)

            def export_state(self) -> dict[str, Any]:
                return dict(fitted)

        return FittedLogisticRegression()


@hookimpl
def register_generators(register):
    register(LogisticRegressionProbe)
