"""tiny-vit: a two-layer ViT with fixed random weights. NOT a pathology model: tests and the demo only."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD, ViTTileEncoder


class TinyViTEncoder(ViTTileEncoder):
    """A small timm ViT (64 px input, 8 px patches, width 64, 2 layers) initialised from seed 0.

    Its features carry no pathology knowledge; they are deterministic, so tests and the
    embedded demo exercise the real extraction path end to end in seconds.
    """

    name: ClassVar[str] = "tiny-vit"
    description: ClassVar[str] = "NOT a pathology model: tiny ViT with fixed random weights (tests, demo)"
    embed_dim: ClassVar[int] = 64
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=128, mpp=1.0)
    precision: ClassVar[str] = "fp32"
    is_pathology_model: ClassVar[bool] = False
    timm_name: ClassVar[str] = "vit_tiny_patch16_224"
    resize_px: ClassVar[int] = 64
    crop_px: ClassVar[int | None] = None
    interpolation: ClassVar[str] = "bilinear"
    random_init_seed: ClassVar[int] = 0
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id=None,
        filename=None,
        license="none needed: weights are generated locally from a fixed seed",
        citation="not a published model",
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=64,
    )

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=64,
        patch_size=8,
        embed_dim=64,
        depth=2,
        num_heads=2,
        mlp_ratio=2.0,
        num_classes=0,
    )


class TinyViTWideEncoder(TinyViTEncoder):
    """A second demo encoder (width 96, seed 1) with tiny-vit's tile spec, so that one tiling
    serves both and the encoder x generator matrix can be exercised on the demo in minutes."""

    name: ClassVar[str] = "tiny-vit-wide"
    description: ClassVar[str] = "NOT a pathology model: wider tiny ViT with fixed random weights (matrix demo)"
    embed_dim: ClassVar[int] = 96
    random_init_seed: ClassVar[int] = 1

    @classmethod
    def base_architecture(cls) -> dict[str, Any]:
        return {**super().base_architecture(), "embed_dim": 96, "num_heads": 3}


@hookimpl
def register_encoders(register):
    register(TinyViTEncoder)
    register(TinyViTWideEncoder)
