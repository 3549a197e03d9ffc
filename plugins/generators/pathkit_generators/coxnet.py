"""coxnet: an elastic-net Cox model on mean-pooled slide embeddings (scikit-survival), or on a slide
encoder's (`slide_encoder` hparam; docs/encoders.md), its penalty chosen on the validation split
along the regularisation path (docs/survival.md)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec, PathkitError, TaskModel
from pathkit_generators._slide_vectors import SLIDE_ENCODER_HPARAMS, SlideVectorHead
from pathkit_tasks import TASK_SURVIVAL


class CoxNet(SlideVectorHead):
    """Slide embedding = mean of its tile features, standardised by the train mean and SD; scikit-
    survival's `CoxnetSurvivalAnalysis` fits the path of `n_alphas` penalties (from the largest that
    zeroes every coefficient down to `alpha_min_ratio` of it) with `l1_ratio`; the penalty with the
    best validation Harrell's C is kept (the smallest penalty when there is no validation split).
    The risk is the linear predictor."""

    name: ClassVar[str] = "coxnet"
    description: ClassVar[str] = "elastic-net Cox (scikit-survival) on mean-pooled slide embeddings, penalty swept"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SURVIVAL,)
    default_hparams: ClassVar[dict[str, Any]] = {"l1_ratio": 0.5, "n_alphas": 50, "alpha_min_ratio": 0.01,
                                                 "max_iter": 100000, **SLIDE_ENCODER_HPARAMS}

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import numpy as np
        import torch

        from pathkit_generators._slide_vectors import slide_vectors
        from pathkit_generators._survival import time_event

        hp = self.hparams(spec.hparams)
        if not len(spec.train_items):
            raise PathkitError(f"{self.name}: no training cases (this head is fitted on the train split)")
        vectors = slide_vectors(hp, spec.train_items)
        x = vectors(spec.train_items).numpy().astype(np.float64)
        time, event = time_event([item["target"] for item in spec.train_items], self.name)
        if event.sum() == 0:
            raise PathkitError(f"{self.name}: no training case had the event (every one is censored); a Cox model "
                               "needs events")
        mean, sd = x.mean(axis=0), x.std(axis=0)
        sd[sd == 0] = 1.0
        model, alpha, val_c = fit_path((x - mean) / sd, time, event, spec.val_items, mean, sd, hp, vectors)
        coef = np.asarray(model.coef_[:, list(model.alphas_).index(alpha)], dtype=np.float64)
        weights = torch.as_tensor(coef / sd, dtype=torch.float32)
        offset = float(-(mean / sd) @ coef)
        state = {"alpha": float(alpha), "validation_c_index": val_c, "nonzero": int((coef != 0).sum())}

        class FittedCoxNet(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.register_buffer("weights", weights)

            def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
                return {"case_ids": [i["case_id"] for i in items], "features": vectors(items)}

            def predict(self, batch: dict[str, Any]) -> list[dict[str, float]]:
                risk = batch["features"].to(self.weights.device) @ self.weights + offset
                return [{"risk": float(r)} for r in risk.cpu()]

            def export_state(self) -> dict[str, Any]:
                return dict(state)

        return FittedCoxNet()


def fit_path(x: Any, time: Any, event: Any, val_items: Any, mean: Any, sd: Any,
             hp: dict[str, Any], vectors: Any = None) -> tuple[Any, float, float]:
    """(fitted path, chosen alpha, its validation Harrell's C or NaN); `vectors` maps items to
    their slide vectors (default: the mean of their tile features)."""
    import numpy as np
    from sksurv.linear_model import CoxnetSurvivalAnalysis
    from sksurv.metrics import concordance_index_censored
    from sksurv.util import Surv

    from pathkit_generators._survival import mean_pooled, time_event

    model = CoxnetSurvivalAnalysis(l1_ratio=float(hp["l1_ratio"]), n_alphas=int(hp["n_alphas"]),
                                   alpha_min_ratio=float(hp["alpha_min_ratio"]), max_iter=int(hp["max_iter"]))
    model.fit(x, Surv.from_arrays(event=event.astype(bool), time=time))
    alphas = list(model.alphas_)
    if not len(val_items):
        return model, alphas[-1], math.nan
    vx = ((vectors(val_items).numpy().astype(np.float64) if vectors else mean_pooled(val_items)) - mean) / sd
    vt, ve = time_event([item["target"] for item in val_items], "coxnet")
    if ve.sum() == 0:
        return model, alphas[-1], math.nan
    scores = []
    for k in range(len(alphas)):
        risk = vx @ model.coef_[:, k]
        scores.append(concordance_index_censored(ve.astype(bool), vt, risk)[0])
    best = max(range(len(alphas)), key=lambda k: (scores[k], k))  # ties: the smaller penalty
    return model, alphas[best], float(scores[best])


@hookimpl
def register_generators(register):
    register(CoxNet)
