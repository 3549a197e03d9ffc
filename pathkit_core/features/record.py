"""One slide's features as read from any supported file (`FeatureFile`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# `FeatureFile.coords` unit: level-0 pixels of the slide (top-left corner of each tile).
COORDS_LEVEL0_PX = "level0_px"


@dataclass
class FeatureFile:
    """Features of one slide. `coords` are level-0 pixels (`coords_unit` "level0_px"); None
    when the file carries none or only micrometres without an mpp to convert them (the h5
    reader itself may return micrometres, `coords_unit` "um")."""

    path: Path
    features: torch.Tensor
    coords: torch.Tensor | None
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def slide_id(self) -> str:
        return self.meta.get("slide_id") or self.path.name.split(".")[0]

    @property
    def encoder(self) -> str:
        return self.meta.get("encoder", "")

    @property
    def n_tiles(self) -> int:
        return int(self.features.shape[0])

    @property
    def embed_dim(self) -> int:
        return int(self.features.shape[1])

    @property
    def coords_unit(self) -> str:
        return self.meta.get("coords_unit", COORDS_LEVEL0_PX if self.coords is not None else "none")

    @property
    def qc(self) -> dict[str, Any]:
        raw = self.meta.get("qc")
        return json.loads(raw) if raw else {}
