"""Task `retrieval` and the `feature-retrieval` generator: the nearest train cases by cosine
similarity of mean-pooled features, classes encoded in the features (known answer)."""

from __future__ import annotations

import pytest
import torch

from pathkit_core.contracts import Case, GeneratorSpec, PathkitError
from pathkit_tasks.retrieval.task import RetrievalTask


class _Dataset:
    def class_names(self):
        return ("a", "b", "c")


def _items(n, seed):
    g = torch.Generator().manual_seed(seed)
    items = []
    for i in range(n):
        label = i % 3
        feats = torch.randn(6, 5, generator=g) * 0.3
        feats[:, label] += 2.0  # the class is the direction of the features
        items.append({"case_id": f"SYN-{seed}-{i}", "features": feats, "target": label})
    return items


def test_retriever_ranks_by_cosine_similarity_and_finds_the_class():
    from pathkit_generators.retriever import FeatureRetriever
    from pathkit_metrics.retrieval import RetrievalMetric

    train, test = _items(30, 1), _items(15, 2)
    model = FeatureRetriever().build(GeneratorSpec(task="retrieval", feature_dim=5, train_items=train,
                                                   hparams=FeatureRetriever.default_hparams))
    preds = model.predict(model.collate([{**i, "target": None} for i in test]))
    first = preds[0]
    keys = torch.nn.functional.normalize(torch.stack([i["features"].mean(0) for i in train]), dim=1)
    query = torch.nn.functional.normalize(test[0]["features"].mean(0), dim=0)
    order = torch.argsort(keys @ query, descending=True)[:10].tolist()
    assert first["neighbours"] == [train[j]["case_id"] for j in order]
    assert first["similarity"] == sorted(first["similarity"], reverse=True)
    summary = RetrievalMetric().compute(preds, [i["target"] for i in test],
                                        context={"options": {"n_resamples": 0}}).summary
    assert summary["top1_acc"] == 1.0 and summary["mAP@5"] == 1.0  # the majority baseline: 1/3 and below


def test_task_forms_and_baseline():
    task, ds = RetrievalTask(), _Dataset()
    assert task.model_target(Case("q", "q", "b"), ds) == 1
    assert "not one of" in task.check_target(Case("q", "q", "d"), ds)
    assert task.check_prediction({"retrieved": [0, 2]}, Case("q", "q", None), ds) is None
    assert "not a class index" in task.check_prediction({"retrieved": [0, 3]}, Case("q", "q", None), ds)
    base = task.baseline_predictions("majority-class", [0, 1, 1], [Case("q", "q", None)], ds)
    assert base["q"]["retrieved"][:3] == [1, 1, 1]


def test_retriever_refuses_an_unknown_similarity():
    from pathkit_generators.retriever import FeatureRetriever

    with pytest.raises(PathkitError, match="similarity='dot'"):
        FeatureRetriever().build(GeneratorSpec(task="retrieval", feature_dim=5, train_items=_items(3, 0),
                                               hparams={**FeatureRetriever.default_hparams, "similarity": "dot"}))


def test_retriever_takes_one_row_per_patch():
    # patch-retrieval: an image case is a one-row bag (the run's ImageItems), its row the embedding
    from pathkit_generators.retriever import FeatureRetriever

    train = [{**i, "features": i["features"].mean(0, keepdim=True)} for i in _items(30, 1)]
    test = [{**i, "features": i["features"].mean(0, keepdim=True)} for i in _items(9, 2)]
    model = FeatureRetriever().build(GeneratorSpec(task="retrieval", feature_dim=5, train_items=train,
                                                   hparams=FeatureRetriever.default_hparams))
    preds = model.predict(model.collate([{**i, "target": None} for i in test]))
    assert [p["retrieved"][0] for p in preds] == [i["target"] for i in test]


def test_patch_retrieval_reads_the_patch_folder_layout_for_the_retrieval_task():
    from pathkit_datasets.patch_folder import PatchFolderDataset
    from pathkit_datasets.slides_retrieval import PatchRetrieval

    assert issubclass(PatchRetrieval, PatchFolderDataset) and PatchRetrieval.task == "retrieval"
    assert "images" in RetrievalTask.inputs
