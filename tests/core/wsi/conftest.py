"""Fixtures of the whole-slide tests: small synthetic slides written once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

# Two blobs of known geometry on a 3072 x 2048 slide at 0.5 um/px (1.536 x 1.024 mm).
WIDTH, HEIGHT, MPP = 3072, 2048, 0.5


def tissue_blobs():
    from pathkit_sdk.synthetic import Blob

    return [
        Blob(0.3, 0.5, 0.18, 0.3, texture="noise"),
        Blob(0.72, 0.5, 0.14, 0.22, colour=(180, 110, 175), texture="nuclei"),
    ]


@pytest.fixture(scope="session")
def synthetic_slides(tmp_path_factory) -> dict[str, Path]:
    from pathkit_sdk.synthetic import PenStroke, write_synthetic_slide

    root = tmp_path_factory.mktemp("wsi_slides")
    out = {
        "tissue": write_synthetic_slide(root / "tissue.tiff", width=WIDTH, height=HEIGHT, mpp=MPP,
                                        tissue=tissue_blobs(), seed=1),
        "aperio": write_synthetic_slide(root / "aperio.svs", width=2048, height=1536, mpp=0.25,
                                        tissue=tissue_blobs(), aperio=True, seed=2),
        "nompp": write_synthetic_slide(root / "nompp.tiff", width=1024, height=1024, mpp=None, seed=3),
        "glass": write_synthetic_slide(root / "glass.tiff", width=1536, height=1024, mpp=MPP, tissue=[]),
        "pen": write_synthetic_slide(
            root / "pen.tiff", width=WIDTH, height=HEIGHT, mpp=MPP, tissue=tissue_blobs(), seed=4,
            pen=[PenStroke(((0.05, 0.1), (0.95, 0.9)), "blue", 120.0),
                 PenStroke(((0.05, 0.9), (0.5, 0.2)), "green", 120.0)],
        ),
    }
    return out


@pytest.fixture
def fast_params():
    """Tiling at 2 um/px, 64-px tiles (128 um), no slide-level area minimum, a 1024-px thumbnail:
    quick on small slides."""
    from pathkit_core.wsi.tiling import TilingParams

    return TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=1024)
