"""feature-retrieval: test cases queried against the train cases by the similarity of their mean-
pooled features, or of a slide encoder's embeddings (`slide_encoder` hparam; docs/encoders.md)
(Patho-Bench's `Retriever`; docs/retrieval.md). Nothing is trained."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec, PathkitError, TaskModel
from pathkit_generators._slide_vectors import SLIDE_ENCODER_HPARAMS, SlideVectorHead
from pathkit_tasks import TASK_RETRIEVAL

SIMILARITIES = ("cosine", "l2")


class FeatureRetriever(SlideVectorHead):
    """Keys: the train cases, each the mean of its tile features (a slide embedding by mean
    pooling; a patch is its one row). A query's keys are ranked by cosine similarity (or by negative
    Euclidean distance, `similarity="l2"`, Patho-Bench's default), after subtracting the train mean
    when `centre`; the `depth` most similar are returned with their classes, ids and scores."""

    name: ClassVar[str] = "feature-retrieval"
    description: ClassVar[str] = "rank the train cases by cosine (or L2) similarity of mean-pooled features"
    tasks: ClassVar[tuple[str, ...]] = (TASK_RETRIEVAL,)
    default_hparams: ClassVar[dict[str, Any]] = {"similarity": "cosine", "centre": False, "depth": 10,
                                                 **SLIDE_ENCODER_HPARAMS}

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch

        from pathkit_generators._slide_vectors import slide_vectors

        hp = self.hparams(spec.hparams)
        if hp["similarity"] not in SIMILARITIES:
            raise PathkitError(f"{self.name}: similarity={hp['similarity']!r}; choose {' or '.join(SIMILARITIES)}")
        if not len(spec.train_items):
            raise PathkitError(f"{self.name}: no train cases to retrieve from")
        vectors = slide_vectors(hp, spec.train_items)
        keys = vectors(spec.train_items)
        labels = torch.as_tensor([int(i["target"]) for i in spec.train_items])
        key_ids = [str(i["case_id"]) for i in spec.train_items]
        mean = keys.mean(dim=0, keepdim=True) if hp["centre"] else torch.zeros(1, keys.shape[1])
        cosine = hp["similarity"] == "cosine"
        depth = min(int(hp["depth"]), len(key_ids))

        def prepare(x: torch.Tensor) -> torch.Tensor:
            x = x - mean
            return torch.nn.functional.normalize(x, dim=1) if cosine or hp["centre"] else x

        bank = prepare(keys)

        class FittedRetriever(torch.nn.Module):
            def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
                return {"case_ids": [i["case_id"] for i in items], "features": vectors(items)}

            def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
                queries = prepare(batch["features"].cpu())
                scores = queries @ bank.T if cosine else -torch.cdist(queries, bank)
                top, index = torch.topk(scores, depth, dim=1)
                return [{"retrieved": labels[row].tolist(), "neighbours": [key_ids[j] for j in row.tolist()],
                         "similarity": [round(float(s), 6) for s in sims]}
                        for row, sims in zip(index, top, strict=True)]

            def export_state(self) -> dict[str, Any]:
                return {"keys": len(key_ids), **hp}

        return FittedRetriever()


@hookimpl
def register_generators(register):
    register(FeatureRetriever)
