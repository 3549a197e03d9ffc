"""knn: k-nearest-neighbour vote over the training patches (UNI's protocol; THUNDER's choice of k)."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_PATCH_CLASSIFICATION

_log = logging.getLogger(__name__)

# THUNDER's candidates for k, chosen on validation macro F1 (docs/hepatobench.md, `knn`).
THUNDER_K = (1, 3, 5, 10, 20, 30, 40, 50)


class KNearestNeighbours(Generator):
    """Features centred by the train mean and L2-normalised; the k most cosine-similar training
    patches vote with equal weight (the class probabilities are the vote shares; ties go to the
    first class, as scikit-learn's KNeighborsClassifier). k = 20 (UNI); with `select_k`, k is the
    candidate with the best validation macro F1 (THUNDER; ties to the smaller k)."""

    name: ClassVar[str] = "knn"
    description: ClassVar[str] = "k-NN on centred, L2-normalised patch features (UNI k=20; THUNDER k on validation)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_PATCH_CLASSIFICATION,)
    default_hparams: ClassVar[dict[str, Any]] = {"k": 20, "select_k": False, "k_candidates": list(THUNDER_K),
                                                 "centre": True, "query_chunk": 1024, "n_classes": None}
    default_train: ClassVar[dict[str, Any]] = {"batch_size": 4096}
    default_max_tiles: ClassVar[int | None] = None
    needs_fit: ClassVar[bool] = False

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch

        from pathkit_generators._patch import (
            PatchHead,
            centre_normalise,
            item_features,
            item_targets,
            n_classes,
            training_set,
        )

        hp = self.hparams(spec.hparams)
        feats, labels = training_set(spec, self.name)
        k_classes = n_classes(spec, labels, self.name)
        mean = feats.mean(dim=0, keepdim=True) if hp["centre"] else torch.zeros(1, feats.shape[1])
        chunk = max(1, int(hp["query_chunk"]))

        class FittedKNN(PatchHead):
            name = "knn"

            def __init__(self) -> None:
                super().__init__()
                # buffers, so that the index moves with the model to the prediction device
                self.register_buffer("mean", mean)
                self.register_buffer("bank", centre_normalise(feats, mean))
                self.register_buffer("labels", labels)
                self.k = int(hp["k"])
                self.chosen: dict[str, Any] = {"k": self.k}

            def neighbour_labels(self, query: torch.Tensor, k: int) -> torch.Tensor:
                """(Q, k) labels of each query's k most similar training patches, most similar first."""
                out = []
                for start in range(0, query.shape[0], chunk):
                    sims = centre_normalise(query[start:start + chunk], self.mean) @ self.bank.T
                    out.append(self.labels[sims.topk(min(k, self.bank.shape[0]), dim=1).indices])
                return torch.cat(out) if out else torch.empty(0, k, dtype=torch.long, device=query.device)

            @staticmethod
            def vote_shares(neighbours: torch.Tensor) -> torch.Tensor:
                counts = torch.zeros(neighbours.shape[0], k_classes, device=neighbours.device)
                counts.scatter_add_(1, neighbours, torch.ones_like(neighbours, dtype=counts.dtype))
                return counts / neighbours.shape[1]

            def probabilities(self, features: torch.Tensor) -> torch.Tensor:
                return self.vote_shares(self.neighbour_labels(features, self.k))

            def export_state(self) -> dict[str, Any]:
                return dict(self.chosen)

        model = FittedKNN()
        if hp["select_k"]:
            if not len(spec.val_items):
                raise PathkitError(f"{self.name}: select_k chooses k on the validation split, which is empty")
            from sklearn.metrics import f1_score

            candidates = sorted({int(c) for c in hp["k_candidates"]})
            val_labels = item_targets(spec.val_items, self.name)
            neighbours = model.neighbour_labels(item_features(spec.val_items, self.name), max(candidates))
            scores = {c: float(f1_score(val_labels, model.vote_shares(neighbours[:, :c]).argmax(dim=1),
                                        labels=list(range(k_classes)), average="macro", zero_division=0))
                      for c in candidates}
            model.k = max(candidates, key=lambda c: (scores[c], -c))
            model.chosen = {"k": model.k, "val_macro_F1": {str(c): s for c, s in scores.items()}}
            _log.info("knn: k = %d chosen on validation macro F1 (%s)", model.k, scores)
        if model.k < 1:
            raise PathkitError(f"{self.name}: k must be at least 1, got {model.k}")
        smallest = int(torch.bincount(labels, minlength=k_classes)[torch.bincount(labels, minlength=k_classes) > 0]
                       .min())
        if model.k > 2 * smallest:
            _log.warning("knn: k = %d is more than twice the %d training patches of the smallest class; its "
                         "patches can hardly win a vote (select_k=true chooses k on validation)", model.k, smallest)
        return model


@hookimpl
def register_generators(register):
    register(KNearestNeighbours)
