"""Test helpers shared by the pipeline tests: an inline plugin of given components, toy features
with a known answer, and a toy accuracy metric."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pathkit_core import hookimpl
from pathkit_core.contracts import Metric, MetricResult
from pathkit_tasks import TASK_SLIDE_CLASSIFICATION


class ComponentPlugin:
    """An inline plugin that registers each given component class through the hook of its kind."""

    def __init__(self, *components: type) -> None:
        self.components = components

    def _each(self, register, kind: str) -> None:
        for component in self.components:
            if component.kind == kind:
                register(component)

    @hookimpl
    def register_tasks(self, register):
        self._each(register, "task")

    @hookimpl
    def register_datasets(self, register):
        self._each(register, "dataset")

    @hookimpl
    def register_encoders(self, register):
        self._each(register, "encoder")

    @hookimpl
    def register_generators(self, register):
        self._each(register, "generator")

    @hookimpl
    def register_metrics(self, register):
        self._each(register, "metric")

    @hookimpl
    def register_selectors(self, register):
        self._each(register, "selector")


def write_toy_features(root: Path, n_cases: int, n_tiles: int, dim: int, prefix: str) -> Path:
    """`<prefix><i:02d>.safetensors` feature files whose class is the sign of feature 0."""
    import torch

    from pathkit_core.features.store import write_features

    g = torch.Generator().manual_seed(0)
    for i in range(n_cases):
        feats = torch.randn(n_tiles, dim, generator=g)
        feats[:, 0] = (1.0 if i % 2 else -1.0) + 0.1 * feats[:, 0]
        coords = torch.arange(n_tiles * 2, dtype=torch.int32).reshape(n_tiles, 2)
        write_features(root / f"{prefix}{i:02d}.safetensors", feats, coords, {"slide_id": f"{prefix}{i:02d}"})
    return root


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
