"""Fixtures of the feature tests: a tiny deterministic test encoder and tiled synthetic slides."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from pathkit_core.contracts import Encoder, TileSpec

TEST_TILE = TileSpec(tile_px=64, mpp=2.0)


class PixelStatsEncoder(Encoder):
    """Test encoder: 4 x 4 average-pooled colours through a fixed random linear map (16-d)."""

    name: ClassVar[str] = "pixel-stats"
    description: ClassVar[str] = "test encoder"
    embed_dim: ClassVar[int] = 16
    tile_spec: ClassVar[TileSpec] = TEST_TILE
    precision: ClassVar[str] = "fp32"
    is_pathology_model: ClassVar[bool] = False

    def load(self, device="cpu", weights_path=None, **kwargs):
        import torch
        from torch import nn

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(7)
            model = nn.Sequential(nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(48, self.embed_dim))
        return model.to(device).eval()

    def transform(self, tiles):
        import torch

        batch = torch.as_tensor(tiles)
        if batch.ndim == 3:
            batch = batch[None]
        return batch.permute(0, 3, 1, 2).float().div(255.0).sub(0.5).contiguous()


class NaNOnDarkEncoder(PixelStatsEncoder):
    """Test encoder that breaks (NaN) on tiles whose mean red value is below 0.55 (dark tissue)."""

    name: ClassVar[str] = "nan-on-dark"

    def load(self, device="cpu", weights_path=None, **kwargs):
        import torch
        from torch import nn

        base = super().load(device)

        class Broken(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.base = base

            def forward(self, x):
                out = self.base(x)
                dark = (x[:, 0].mean(dim=(1, 2)) + 0.5) < 0.55
                return torch.where(dark[:, None], torch.full_like(out, float("nan")), out)

        return Broken().eval()


@pytest.fixture(scope="session")
def tiled_slides(tmp_path_factory) -> dict[str, Path]:
    """Two small synthetic slides (pink tissue / dark tissue) and their tile manifests."""
    from pathkit_core.wsi.tiling import TilingParams, tile_slides
    from pathkit_sdk.synthetic import HAEMATOXYLIN, Blob, write_synthetic_slide

    root = tmp_path_factory.mktemp("slides")
    pink = write_synthetic_slide(root / "slides" / "pink-01.tiff", width=1536, height=1536, mpp=0.5, seed=1)
    dark = write_synthetic_slide(
        root / "slides" / "dark-02.tiff", width=1536, height=1280, mpp=0.5, seed=2,
        tissue=[Blob(0.5, 0.5, 0.35, 0.35, colour=HAEMATOXYLIN, texture="noise")],
    )
    tiles = root / "tiles"
    params = TilingParams(target_mpp=TEST_TILE.mpp, tile_px=TEST_TILE.tile_px, min_tissue_area_mm2=0.0)
    results = tile_slides([pink, dark], tiles, params, progress=False)
    assert all(r.status == "ok" and r.n_tiles > 3 for r in results), results
    return {"root": root, "pink": pink, "dark": dark, "tiles": tiles}
