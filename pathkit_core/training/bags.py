"""Feature bags for training: one lazily loaded item per case, with the first N tiles kept."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError


@dataclass(frozen=True)
class BagSpec:
    """A case's feature files and target, without loading anything."""

    case_id: str
    feature_files: tuple[Path, ...]
    target: Any


def _default_loader(path: Path) -> tuple[Any, Any]:
    from pathkit_core.features.store import load_feature_file

    loaded = load_feature_file(path)
    return loaded.features, loaded.coords


class BagDataset:
    """A torch-compatible map-style dataset of {"case_id", "features", "coords", "target"} items.

    Features are read from disk on access, so memory holds one batch of bags, not the cohort.
    A case with several slides gets their tiles concatenated in slide order. `max_tiles`
    keeps the first N tiles (PathBench cuts features to the first 10,000), or with
    `sample_tiles` a seeded random subset (the MIL option of GOLDMARK-style training).
    """

    def __init__(
        self,
        specs: Sequence[BagSpec],
        *,
        max_tiles: int | None = None,
        sample_tiles: bool = False,
        seed: int = 0,
        loader: Callable[[Path], tuple[Any, Any]] | None = None,
        dtype: str = "float32",
    ) -> None:
        self.specs = list(specs)
        self.max_tiles = max_tiles
        self.sample_tiles = sample_tiles
        self.seed = seed
        self.loader = loader or _default_loader
        self.dtype = dtype
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

        spec = self.specs[index]
        feats, coords, rows, files = [], [], [], []
        for ordinal, path in enumerate(spec.feature_files):
            f, c = self.loader(Path(path))
            feats.append(torch.as_tensor(f))
            coords.append(torch.as_tensor(c) if c is not None else torch.zeros(len(f), 2, dtype=torch.int32))
            rows.append(torch.arange(len(f)))
            files.append(torch.full((len(f),), ordinal, dtype=torch.int64))
        if not feats:
            raise PathkitError(f"case {spec.case_id!r} has no feature files")
        features = torch.cat(feats).to(getattr(torch, self.dtype))
        coord = torch.cat(coords).to(torch.int64)
        # Row of each kept tile in its own feature file (= its tile-manifest row) and which file:
        # what attention maps need to land on the right tiles after a cut or a sample.
        tile_index, tile_file = torch.cat(rows), torch.cat(files)
        if self.max_tiles is not None and len(features) > self.max_tiles:
            if self.sample_tiles:
                g = torch.Generator().manual_seed(self.seed + index)
                keep = torch.randperm(len(features), generator=g)[: self.max_tiles].sort().values
            else:
                keep = torch.arange(self.max_tiles)
            features, coord, tile_index, tile_file = features[keep], coord[keep], tile_index[keep], tile_file[keep]
        return {"case_id": spec.case_id, "features": features, "coords": coord, "target": spec.target,
                "tile_index": tile_index, "tile_file": tile_file}
