"""GOLDMARK-style torch feature files: `{"features": tensor, "coords": tensor}` or a bare tensor,
read weights-only (pickled code is refused)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pathkit_core.contracts import PathkitError
from pathkit_core.features.record import FeatureFile

TORCH_SUFFIXES = (".pt", ".pth")


def read_torch_features(path: Path) -> FeatureFile:
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - pickled code is refused by weights_only
        raise PathkitError(f"{path} cannot be read as a weights-only torch file: {exc}") from None
    coords = None
    if isinstance(obj, torch.Tensor):
        feats = obj
    elif isinstance(obj, Mapping):
        key = next((k for k in ("features", "feats") if k in obj), None)
        if key is None or not isinstance(obj[key], torch.Tensor):
            raise PathkitError(f"{path} holds no 'features' tensor (keys: {sorted(map(str, obj))})")
        feats = obj[key]
        raw = obj.get("coords")
        if isinstance(raw, torch.Tensor):
            coords = raw
    else:
        raise PathkitError(f"{path} holds a {type(obj).__name__}, not a features tensor")
    if feats.ndim == 3 and feats.shape[0] == 1:
        feats = feats[0]
    if feats.ndim != 2:
        raise PathkitError(f"{path}: features must be 2-D (tiles x dim), got shape {tuple(feats.shape)}")
    if coords is not None:
        if coords.ndim != 2 or coords.shape[0] != feats.shape[0] or coords.shape[1] < 2:
            raise PathkitError(f"{path}: coords of shape {tuple(coords.shape)} do not match {feats.shape[0]} tiles")
        coords = coords[:, :2].to(torch.int32)
    meta = {"source": "torch", "slide_id": path.name.split(".")[0]}
    if coords is None:
        meta["coords_unit"] = "none"
    return FeatureFile(path=path, features=feats, coords=coords, meta=meta)
