"""What the survival heads share: (time, event) of training targets and mean-pooled slide embeddings.

Imported only from the heads' `build`, so torch loads when a model is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pathkit_core.contracts import PathkitError


def time_event(targets: Sequence[Any], name: str) -> tuple[np.ndarray, np.ndarray]:
    """(time, event) arrays of `{"time", "event"}` targets; a PathkitError for any other form."""
    from pathkit_tasks.survival.target import parse_target

    out = []
    for t in targets:
        try:
            out.append(parse_target(t))
        except ValueError as exc:
            raise PathkitError(f"{name}: training target: {exc}") from None
    if not out:
        raise PathkitError(f"{name}: no training cases with a survival target")
    array = np.asarray(out, dtype=np.float64)
    return array[:, 0], array[:, 1].astype(np.int64)


def mean_pooled(items: Sequence[dict[str, Any]]) -> np.ndarray:
    """(cases, D) mean of each item's tile features (a slide embedding by mean pooling)."""
    rows = [torch.as_tensor(item["features"]).float().mean(dim=0) for item in items]
    if not rows:
        return np.zeros((0, 0))
    return torch.stack(rows).numpy().astype(np.float64)
