"""A cohort of small synthetic slides tiled at tiny-vit's tile spec, for the multi-process tests."""

from __future__ import annotations

from pathlib import Path


def tiled_cohort(root: Path, n_slides: int, *, size_px: int = 640) -> Path:
    """`n_slides` synthetic slides of `size_px`^2 at 0.5 um/px under `root/slides`, tiled for
    tiny-vit (128 px at 1 um/px) into `root/tiles`; returns the tiles folder."""
    from pathkit_core.wsi.tiling import TilingParams, tile_slides
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    slides = []
    for i in range(n_slides):
        blob = Blob(0.5, 0.5, 0.42, 0.42, texture="noise" if i % 2 else "nuclei")
        slides.append(write_synthetic_slide(root / "slides" / f"case-{i:03d}.tiff", width=size_px,
                                            height=size_px, mpp=0.5, seed=i, tissue=[blob]))
    tiles = root / "tiles"
    params = TilingParams(target_mpp=1.0, tile_px=128, min_tissue_area_mm2=0.0, thumbnail_px=256)
    results = tile_slides(slides, tiles, params, progress=False)
    bad = [r for r in results if r.status != "ok" or r.n_tiles == 0]
    assert not bad, bad
    return tiles
