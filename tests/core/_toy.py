"""Test helpers shared by the pipeline tests: an inline plugin of given components, toy features
with a known answer, the encoder that stands for them, a model over mean tile features, a toy
accuracy metric and a report word count."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pathkit_core import hookimpl
from pathkit_core.contracts import Encoder, Metric, MetricResult, TileSpec
from pathkit_tasks import TASK_REPORT, TASK_SLIDE_CLASSIFICATION


def _registers(kind: str):
    """The hook implementation that registers a `ComponentPlugin`'s components of `kind`."""

    @hookimpl
    def hook(self, register):
        for component in self.components:
            if component.kind == kind:
                register(component)

    return hook


class ComponentPlugin:
    """An inline plugin that registers each given component class through the hook of its kind."""

    def __init__(self, *components: type) -> None:
        self.components = components

    register_tasks = _registers("task")
    register_datasets = _registers("dataset")
    register_encoders = _registers("encoder")
    register_generators = _registers("generator")
    register_metrics = _registers("metric")
    register_selectors = _registers("selector")


def write_toy_features(root: Path, n_cases: int, n_tiles: int, dim: int, prefix: str) -> Path:
    """`<prefix><i:02d>.safetensors` feature files whose class is the sign of feature 0, in `root`
    (made if missing)."""
    import torch

    from pathkit_core.features.store import write_features

    root.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for i in range(n_cases):
        feats = torch.randn(n_tiles, dim, generator=g)
        feats[:, 0] = (1.0 if i % 2 else -1.0) + 0.1 * feats[:, 0]
        coords = torch.arange(n_tiles * 2, dtype=torch.int32).reshape(n_tiles, 2)
        write_features(root / f"{prefix}{i:02d}.safetensors", feats, coords, {"slide_id": f"{prefix}{i:02d}"})
    return root


class Precomputed(Encoder):
    """Stands for the encoder of feature files written beforehand (`write_toy_features`); never run."""

    name = "precomputed"
    embed_dim = 8
    tile_spec = TileSpec(224, 0.5)


def mean_feature_model(head, *, probabilities: bool):
    """A task model of the mean tile feature of each case through `head` (two logits), trained by
    cross-entropy on class indices; it predicts class indices, or {"probabilities": [...]}."""
    import torch

    class MeanFeatureModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = head

        def collate(self, items):
            return {"x": torch.stack([i["features"].mean(0) for i in items]),
                    "y": torch.tensor([-100 if i["target"] is None else int(i["target"]) for i in items])}

        def training_step(self, batch):
            return torch.nn.functional.cross_entropy(self.head(batch["x"]), batch["y"])

        def predict(self, batch):
            logits = self.head(batch["x"])
            if probabilities:
                return [{"probabilities": p.tolist()} for p in torch.softmax(logits, -1)]
            return logits.argmax(-1).tolist()

        def export_state(self):
            return {}

    return MeanFeatureModel()


class ToyAccuracy(Metric):
    """Accuracy of classification outputs ({"label", "class"}) against class indices; keeps the
    last context it saw."""

    name = "toy-accuracy"
    tasks = (TASK_SLIDE_CLASSIFICATION,)
    context: dict = {}

    def compute(self, predictions, references, *, ids=None, context=None):
        hits = [float(p["label"] == r) for p, r in zip(predictions, references, strict=True)]
        ToyAccuracy.context = dict(context or {})
        return MetricResult({"accuracy": sum(hits) / len(hits)}, pl.DataFrame({"id": ids, "hit": hits}))


class WordCount(Metric):
    """Report words: the mean number of words of the predicted reports (times the `scale` option,
    default 1), and each case's count."""

    name = "word-count"
    tasks = (TASK_REPORT,)

    def compute(self, predictions, references, *, ids=None, context=None):
        counts = [float(len(p.split())) for p in predictions]
        scale = float((context or {}).get("options", {}).get("scale", 1))
        return MetricResult({"words": scale * sum(counts) / len(counts)}, pl.DataFrame({"id": ids, "words": counts}))
