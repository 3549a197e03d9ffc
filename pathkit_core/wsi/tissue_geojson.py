"""The tissue mask as a GeoJSON a person can correct: written beside each manifest, read back with
`--tissue-geojson DIR` instead of the segmenter (docs/wsi.md, "Tissue masks a person can correct")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.sources import file_identity
from pathkit_core.wsi.masks import geojson_features, rasterise, read_geojson, vectorise, write_geojson

if TYPE_CHECKING:
    import numpy as np

    from pathkit_core.wsi.masks import MaskFrame

TISSUE_CLASS = "Tissue"
TISSUE_COLOUR = (20, 180, 60)
SUFFIXES = (".tissue.geojson", ".geojson")


def tissue_geojson_path(out_dir: str | Path, slide_id: str) -> Path:
    """Where `pathkit tile` writes a slide's tissue contours."""
    return Path(out_dir) / f"{slide_id}{SUFFIXES[0]}"


def find_tissue_geojson(folder: str | Path | None, slide_id: str) -> Path | None:
    """The edited mask of `slide_id` in `folder` (`<id>.tissue.geojson`, else `<id>.geojson`), or None."""
    if not folder:
        return None
    root = Path(folder)
    if not root.is_dir():
        raise PathkitError(f"{root}: the tissue GeoJSON folder does not exist")
    return next((root / f"{slide_id}{s}" for s in SUFFIXES if (root / f"{slide_id}{s}").is_file()), None)


def geojson_identity(path: Path | None) -> str | None:
    """The content identity of a mask file (None when the segmenter made the mask)."""
    if path is None:
        return None
    return file_identity(path)


def mask_from_geojson(path: Path, frame: MaskFrame) -> tuple[np.ndarray, dict[str, Any]]:
    """The tissue mask on `frame` rasterised from the area features of `path` (any classification:
    a person may have renamed the class), with what the manifest records of it."""
    regions = read_geojson(path)
    tissue = rasterise(regions.geometry, frame).astype(bool)
    info = {"geojson": str(path.resolve()), "geojson_identity": geojson_identity(path),
            "repaired": list(regions.repaired)}
    return tissue, info


def write_tissue_geojson(path: Path, tissue: np.ndarray, frame: MaskFrame) -> Path:
    """The contours of `tissue` (one Polygon per 4-connected region, holes kept) as QuPath annotations;
    it rasterises back to `tissue` exactly, so an unedited file gives the same tiles."""
    return write_geojson(path, geojson_features(vectorise(tissue, frame), TISSUE_CLASS, TISSUE_COLOUR))
