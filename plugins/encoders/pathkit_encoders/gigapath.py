"""Prov-GigaPath tile encoder: DINOv2 ViT-g with 16 px patches, 40 layers, 1536-d class token."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD, ViTTileEncoder


class GigaPathEncoder(ViTTileEncoder):
    """Prov-GigaPath tile encoder. Architecture: REFERENCES.md, prov-gigapath/prov-gigapath config."""

    name: ClassVar[str] = "gigapath"
    description: ClassVar[str] = (
        "Prov-GigaPath tile encoder (Microsoft/Providence), 1.1B-parameter ViT-g/16, 1536-d; gated"
    )
    embed_dim: ClassVar[int] = 1536
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=256, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    timm_name: ClassVar[str] = "vit_giant_patch14_dinov2"
    resize_px: ClassVar[int] = 256
    crop_px: ClassVar[int | None] = 224
    interpolation: ClassVar[str] = "bicubic"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="prov-gigapath/prov-gigapath",
        filename="pytorch_model.bin",
        sha256=None,
        license="Apache-2.0 with the access conditions of the model card (research use)",
        citation=(
            "Xu, H. et al. A whole-slide foundation model for digital pathology from real-world "
            "data. Nature 630, 181-188 (2024)."
        ),
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=224,
        gated=True,
    )

    # timm's vit_giant_patch14_dinov2 keeps its SwiGLUPacked MLP and layer scale
    # (init 1e-5); 16 px patches and mlp_ratio 5.33334 give GigaPath's 1.13B parameters.
    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        in_chans=3,
        patch_size=16,
        embed_dim=1536,
        depth=40,
        num_heads=24,
        mlp_ratio=5.33334,
        num_classes=0,
    )


@hookimpl
def register_encoders(register):
    register(GigaPathEncoder)
