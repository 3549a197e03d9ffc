"""Model items: feature bags (one lazily loaded item per case, the first N tiles kept) and
whole-image feature vectors (one row of an image-feature store per case)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError


@dataclass(frozen=True)
class BagSpec:
    """A case's feature files and target, without loading anything."""

    case_id: str
    feature_files: tuple[Path, ...]
    target: Any
    meta: Mapping[str, Any] = field(default_factory=dict)


# Feature-file metadata that tells where a tile lies and how big it is (segmentation stitching).
GEOMETRY_KEYS = ("slide_id", "mpp", "target_mpp", "tile_px", "tile_px_level0")


class BagDataset:
    """A torch-compatible map-style dataset of {"case_id", "features", "coords", "target", "meta",
    "tile_index", "tile_file", "geometry"} items (see `TaskModel` in pathkit_core.contracts).

    Features are read from disk on access, so memory holds one batch of bags, not the cohort.
    A case with several slides gets their tiles concatenated in slide order. `max_tiles`
    keeps the first N tiles (PathBench cuts features to the first 10,000).
    """

    def __init__(self, specs: Sequence[BagSpec], *, max_tiles: int | None = None) -> None:
        self.specs = list(specs)
        self.max_tiles = max_tiles
        seen: set[str] = set()
        for spec in self.specs:
            if spec.case_id in seen:
                raise PathkitError(f"case id {spec.case_id!r} appears twice in one bag set")
            seen.add(spec.case_id)

    @property
    def case_ids(self) -> list[str]:
        return [s.case_id for s in self.specs]

    @property
    def targets(self) -> dict[str, Any]:
        return {s.case_id: s.target for s in self.specs}

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, index: int) -> dict[str, Any]:
        import torch

        from pathkit_core.features.store import load_feature_file

        spec = self.specs[index]
        feats, coords, rows, files, geometry = [], [], [], [], []
        for ordinal, path in enumerate(spec.feature_files):
            loaded = load_feature_file(Path(path))
            f, c = loaded.features, loaded.coords
            geometry.append({k: loaded.meta[k] for k in GEOMETRY_KEYS if loaded.meta.get(k)})
            feats.append(torch.as_tensor(f))
            coords.append(torch.as_tensor(c) if c is not None else torch.zeros(len(f), 2, dtype=torch.int32))
            rows.append(torch.arange(len(f)))
            files.append(torch.full((len(f),), ordinal, dtype=torch.int64))
        if not feats:
            raise PathkitError(f"case {spec.case_id!r} has no feature files")
        features = torch.cat(feats).to(torch.float32)
        coord = torch.cat(coords).to(torch.int64)
        # Row of each kept tile in its own feature file (= its tile-manifest row) and which file:
        # what attention maps need to land on the right tiles after a cut.
        tile_index, tile_file = torch.cat(rows), torch.cat(files)
        if self.max_tiles is not None and len(features) > self.max_tiles:
            keep = torch.arange(self.max_tiles)
            features, coord, tile_index, tile_file = features[keep], coord[keep], tile_index[keep], tile_file[keep]
        return {"case_id": spec.case_id, "features": features, "coords": coord, "target": spec.target,
                "meta": spec.meta, "tile_index": tile_index, "tile_file": tile_file, "geometry": geometry}


class ImageItems:
    """Items of whole-image cases: each a (1, D) "bag" holding its image's feature vector, so
    any bag model also takes them; vectors come from an image-feature store (read once)."""

    def __init__(self, rows: Sequence[tuple[str, Any, Any, Mapping[str, Any]]]) -> None:
        self.rows = list(rows)  # (case_id, ImageFeatureRow, target, meta)
        if len(set(self.case_ids)) != len(self.rows):
            raise PathkitError("a case id appears twice in one image set")

    @property
    def case_ids(self) -> list[str]:
        return [r[0] for r in self.rows]

    @property
    def targets(self) -> dict[str, Any]:
        return {r[0]: r[2] for r in self.rows}

    def __len__(self) -> int:
        return len(self.rows)

    def feature_matrix(self) -> Any:
        """Every item's vector as one (N, D) tensor in item order, each shard read once (what
        heads that index the whole training set, kNN or prototypes, need at once)."""
        import torch

        from pathkit_core.features.images import load_shard

        if not self.rows:
            return torch.empty(0, 0, dtype=torch.float32)
        by_shard: dict[Any, list[int]] = {}
        for position, (_, row, _, _) in enumerate(self.rows):
            by_shard.setdefault(row.path, []).append(position)
        first = torch.as_tensor(self.rows[0][1].vector())
        out = torch.empty(len(self.rows), first.numel(), dtype=torch.float32)
        for positions in by_shard.values():
            shard = load_shard(self.rows[positions[0]][1].path)["features"]
            index = torch.as_tensor([self.rows[p][1].index for p in positions])
            out[torch.as_tensor(positions)] = shard[index].to(out.dtype)
        return out

    def __getitem__(self, index: int) -> dict[str, Any]:
        import torch

        case_id, row, target, meta = self.rows[index]
        vector = torch.as_tensor(row.vector()).to(torch.float32).reshape(1, -1)
        return {"case_id": case_id, "features": vector, "coords": torch.zeros(1, 2, dtype=torch.int64),
                "target": target, "meta": meta, "tile_index": torch.zeros(1, dtype=torch.int64),
                "tile_file": torch.zeros(1, dtype=torch.int64), "geometry": []}
