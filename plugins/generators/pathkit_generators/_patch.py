"""What the patch-classification heads share: items as one feature matrix, the class count,
centring by the train mean with L2 normalisation, and a module that predicts class probabilities.

Imported only from the heads' `build`, so torch loads when a model is made, not on `pathkit --help`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from pathkit_core.contracts import GeneratorSpec, ItemsWithFeatureMatrix, ItemsWithTargets, PathkitError


def item_features(items: Sequence[dict[str, Any]], name: str) -> torch.Tensor:
    """(N, D) float32 features of whole-image items (each a one-row bag)."""
    if isinstance(items, ItemsWithFeatureMatrix):
        return items.feature_matrix().float()
    rows = []
    for item in items:
        feats = item["features"]
        if feats.ndim != 2 or feats.shape[0] != 1:
            raise PathkitError(f"{name}: case {item['case_id']!r} has {tuple(feats.shape)} features; this head "
                               "takes one vector per patch (whole-image cases)")
        rows.append(feats.float())
    return torch.cat(rows) if rows else torch.empty(0, 0)


def item_targets(items: Sequence[dict[str, Any]], name: str) -> torch.Tensor:
    """(N,) class indices of items that carry their targets (train and validation)."""
    values = list(items.targets.values()) if isinstance(items, ItemsWithTargets) else [item["target"] for item in items]
    if any(v is None for v in values):
        raise PathkitError(f"{name}: a training or validation item carries no class")
    return torch.as_tensor([int(v) for v in values], dtype=torch.long)


def n_classes(spec: GeneratorSpec, labels: torch.Tensor | None, name: str) -> int:
    """K: the dataset's declared classes, else the hparam, else the largest training label + 1."""
    k = len(spec.class_names) or int(spec.hparams.get("n_classes") or 0)
    if not k and labels is not None and labels.numel():
        k = int(labels.max()) + 1
    if k < 2:
        raise PathkitError(f"{name}: a classifier needs at least two classes (got {k}); the dataset declares none")
    return k


def training_set(spec: GeneratorSpec, name: str, *, with_val: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(features, labels) of the train items (and the validation items when `with_val`)."""
    parts = [spec.train_items, *([spec.val_items] if with_val and len(spec.val_items) else [])]
    if not len(spec.train_items):
        raise PathkitError(f"{name}: no training patches (this head is built from the train split)")
    feats = [item_features(p, name) for p in parts]
    labels = [item_targets(p, name) for p in parts]
    if len(parts) == 1:  # no copy of a feature matrix that is already one
        return feats[0], labels[0]
    return torch.cat(feats), torch.cat(labels)


def centre_normalise(features: torch.Tensor, mean: torch.Tensor | None) -> torch.Tensor:
    """Features minus the train mean (when given), scaled to unit L2 norm (UNI's kNN/SimpleShot)."""
    x = features if mean is None else features - mean
    return torch.nn.functional.normalize(x, dim=1)


class PatchHead(torch.nn.Module):
    """A TaskModel over one feature vector per patch: collate stacks the vectors, `predict`
    returns {"probabilities", "label"} per patch from `probabilities(features)`. A head built
    ready to predict (needs no fit) has no training step."""

    name = "patch-head"

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        features = item_features(items, self.name)
        targets = [item["target"] for item in items]
        target = None if any(t is None for t in targets) else torch.as_tensor([int(t) for t in targets])
        return {"case_id": [item["case_id"] for item in items], "features": features, "target": target}

    def probabilities(self, features: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        raise PathkitError(f"{self.name} is built from the training set and is not trained by steps")

    def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        probs = self.probabilities(batch["features"].float()).float().cpu()
        labels = probs.argmax(dim=1)  # the first of tied classes
        return [{"probabilities": p.tolist(), "label": int(k)} for p, k in zip(probs, labels, strict=True)]

    def export_state(self) -> dict[str, Any]:
        return {}
