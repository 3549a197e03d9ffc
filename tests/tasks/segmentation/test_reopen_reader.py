"""The segmentation task reopens a slide (for the overlay thumbnail, and for the tissue mask of a
manifest that keeps none) with the reader its tile manifest records, not by automatic choice."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")


def test_the_slide_is_reopened_with_the_manifests_reader(tmp_path, monkeypatch):
    import pathkit_core.features.store as store
    import pathkit_core.wsi.slide as slide_module
    from pathkit_core.wsi.tiling import TilingParams, tile_slide
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide
    from pathkit_tasks.segmentation import task

    path = write_synthetic_slide(tmp_path / "s.tiff", width=1024, height=768, mpp=0.5,
                                 tissue=[Blob(0.5, 0.5, 0.3, 0.3, texture="noise")], seed=1)
    params = TilingParams(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=512,
                          slide_reader="ome-tiff")  # automatic choice would take OpenSlide
    manifest = tile_slide(path, tmp_path / "tiles", params).manifest_path
    monkeypatch.setattr(store, "read_feature_meta", lambda _f: {"manifest_path": str(manifest), "slide_id": "s"})
    geo = task.slide_geometry(tmp_path / "s.safetensors")
    assert geo["slide_reader"] == "ome-tiff"

    real, readers = slide_module.open_slide, []

    def recording(*args, **kwargs):
        readers.append(kwargs.get("reader"))
        return real(*args, **kwargs)

    monkeypatch.setattr(slide_module, "open_slide", recording)
    thumb = task._overlay_thumbnail(geo)
    mask, _ = task._tissue({**geo, "tissue_mask": None})  # an older manifest: segmented again
    assert readers == ["ome-tiff", "ome-tiff"]
    assert thumb.rgb.shape[2] == 3 and mask.any()
