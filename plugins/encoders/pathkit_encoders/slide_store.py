"""Slide embeddings in the feature store, beside the patch features they come from.

Layout: `<out_dir>/<slide-encoder>/<slide_id>.safetensors` holding `embedding` (embed_dim,
float32), with metadata naming the patch feature file, its `content_sha256`, the slide encoder's
identity (architecture and weights) and `slide_embedding_key`, the hash of both: a slide whose
patch features or slide encoder changed is embedded again, any other is read back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError, slide_id_problem
from pathkit_core.workspace import confined, content_hash

SLIDE_EMBEDDING_FORMAT = "pathkit-slide-embedding/1"


@dataclasses.dataclass
class SlideEmbedding:
    slide_id: str
    path: Path
    status: str  # "computed" or "reused"
    key: str


def slide_embedding_key(patch_features_sha256: str, slide_encoder_identity: str) -> str:
    return content_hash({"patch_features": patch_features_sha256, "slide_encoder": slide_encoder_identity}, 32)


def check_features(slide_encoder: Any, path: Path, meta: dict[str, str]) -> None:
    """A one-line refusal naming the file when its patch features cannot feed `slide_encoder`."""
    def number(key: str) -> float | None:
        return float(meta[key]) if meta.get(key) else None

    tile_px = number("tile_px")
    problem = slide_encoder.feature_problem(meta.get("encoder", ""), int(meta.get("embed_dim", "0")),
                                            int(tile_px) if tile_px is not None else None, number("target_mpp"))
    if problem:
        raise PathkitError(f"{path}: {problem}")


def _slide_id(path: Path, meta: dict[str, Any]) -> str:
    """The slide id a feature file's metadata names (else its file name's stem), when it can name
    the embedding's file (the rule of feature stores): it comes from a file, so it never chooses
    where the embedding is written."""
    slide_id = meta.get("slide_id") or path.name.split(".")[0]
    if problem := slide_id_problem(slide_id):
        raise PathkitError(f"{path}: its metadata names {problem}")
    return slide_id


def embed_slides(slide_encoder: Any, feature_files: Sequence[str | Path], out_dir: str | Path, *,
                 device: str = "cpu", weights_path: str | Path | None = None) -> list[SlideEmbedding]:
    """Each feature file's slide embedding, computed unless the store holds it under the same key.
    Every file is checked before any slide is embedded."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    from pathkit_core.features.store import check_encoder_name, read_feature_meta, read_features
    from pathkit_core.workspace import atomic_path

    metas = [(Path(p), read_feature_meta(p)) for p in feature_files]
    for path, meta in metas:
        check_features(slide_encoder, path, meta)
        _slide_id(path, meta)
    model = slide_encoder.load(device, weights_path)
    identity = slide_encoder.identity()
    folder = Path(out_dir) / check_encoder_name(slide_encoder.name)
    results = []
    for path, meta in metas:
        slide_id = _slide_id(path, meta)
        key = slide_embedding_key(meta["content_sha256"], identity)
        target = confined(folder, f"{slide_id}.safetensors", what=f"{path}: slide id")
        if target.exists():
            with safe_open(str(target), "pt") as f:
                if (f.metadata() or {}).get("slide_embedding_key") == key:
                    results.append(SlideEmbedding(slide_id, target, "reused", key))
                    continue
        record = read_features(path)
        level0 = meta.get("tile_px_level0")
        embedding = slide_encoder.embed(model, record.features.to(device), record.coords,
                                        float(level0) if level0 else None)
        meta_out = {"format": SLIDE_EMBEDDING_FORMAT, "slide_id": slide_id, "slide_encoder": slide_encoder.name,
                    "slide_encoder_identity": identity, "patch_encoder": meta.get("encoder", ""),
                    "patch_features": str(path), "patch_features_sha256": meta["content_sha256"],
                    "slide_embedding_key": key}
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as tmp:
            save_file({"embedding": embedding.detach().cpu().contiguous()}, str(tmp), metadata=meta_out)
        results.append(SlideEmbedding(slide_id, target, "computed", key))
    return results


def bag_features_sha256(features: Any, coords: Any, tile_file: Any = None) -> str:
    """The sha256 of a bag's features (as float32), coordinates (as int64) and, for a case of
    several slides, which slide each tile is of: the patch-feature part of the key of a bag's
    embedding (a case's tiles as the run's items hold them)."""
    import hashlib

    import torch

    digest = hashlib.sha256()
    for tensor, dtype in ((features, torch.float32), (coords, torch.int64), (tile_file, torch.int64)):
        if tensor is not None:
            digest.update(tensor.detach().to("cpu", dtype).contiguous().numpy().tobytes())
    return digest.hexdigest()


def _stored(target: Path | None, key: str) -> Any:
    from safetensors import safe_open

    if target is None or not target.exists():
        return None
    with safe_open(str(target), "pt") as f:
        if (f.metadata() or {}).get("slide_embedding_key") != key:
            return None
        return f.get_tensor("embedding")


def _embed_case(slide_encoder: Any, model: Any, item: dict[str, Any]) -> Any:
    """A case's embedding: its slide's, or for a case of several slides (a patient's: the bag
    concatenates their tiles, `tile_file` says whose) the mean of each slide's embedding, so that
    tiles of different slides never share one slide's grid or positions."""
    import torch

    geometry = list(item.get("geometry") or ())
    files = item.get("tile_file")
    parts = [(item["features"], item["coords"], 0)] if files is None or len(torch.unique(files)) < 2 else [
        (item["features"][files == k], item["coords"][files == k], int(k)) for k in torch.unique(files)]
    out = []
    for feats, coords, k in parts:
        level0 = geometry[k].get("tile_px_level0") if k < len(geometry) else None
        out.append(slide_encoder.embed(model, feats, coords, float(level0) if level0 else None).cpu())
    return torch.stack(out).mean(dim=0)


def embed_items(slide_encoder: Any, model: Any, items: Any, out_dir: str | Path | None) -> tuple[Any, list[str]]:
    """(embeddings (n, E), "computed" / "reused" per item) of model items (dicts with "case_id",
    "features", "coords", "geometry"), kept under `<out_dir>/<slide-encoder>/<case_id>.safetensors`
    keyed by the bag's features and the slide encoder's identity (`out_dir` None: not kept)."""
    import torch
    from safetensors.torch import save_file

    from pathkit_core.features.store import check_encoder_name
    from pathkit_core.workspace import atomic_path

    identity = slide_encoder.identity()
    folder = Path(out_dir) / check_encoder_name(slide_encoder.name) if out_dir is not None else None
    rows, statuses = [], []
    for item in items:
        feats, coords = item["features"], item["coords"]
        key = slide_embedding_key(bag_features_sha256(feats, coords, item.get("tile_file")), identity)
        target = folder / f"{item['case_id']}.safetensors" if folder is not None else None
        embedding = _stored(target, key)
        statuses.append("reused" if embedding is not None else "computed")
        if embedding is None:
            embedding = _embed_case(slide_encoder, model, item)
            if target is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                with atomic_path(target) as tmp:
                    save_file({"embedding": embedding.contiguous()}, str(tmp), metadata={
                        "format": SLIDE_EMBEDDING_FORMAT, "case_id": str(item["case_id"]),
                        "slide_encoder": slide_encoder.name, "slide_encoder_identity": identity,
                        "slide_embedding_key": key})
        rows.append(embedding.float())
    return (torch.stack(rows) if rows else torch.empty(0, slide_encoder.embed_dim)), statuses


def read_slide_embedding(path: str | Path) -> Any:
    from safetensors.torch import load_file

    return load_file(str(path))["embedding"]
