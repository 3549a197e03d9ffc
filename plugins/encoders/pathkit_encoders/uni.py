"""UNI (v1, Mahmood Lab): ViT-L/16 with layer scale, 1024-d class token."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD, ViTTileEncoder


class UniEncoder(ViTTileEncoder):
    """UNI v1. Architecture and preprocessing: MahmoodLab/UNI model card and the TRIDENT loader."""

    name: ClassVar[str] = "uni"
    description: ClassVar[str] = "UNI v1 (Mahmood Lab), 303M-parameter ViT-L/16, 1024-d class token; gated"
    embed_dim: ClassVar[int] = 1024
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=256, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    timm_name: ClassVar[str] = "vit_large_patch16_224"
    resize_px: ClassVar[int] = 224
    crop_px: ClassVar[int | None] = 224
    interpolation: ClassVar[str] = "bilinear"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="MahmoodLab/UNI",
        filename="pytorch_model.bin",
        sha256=None,
        license="CC-BY-NC-ND-4.0 (non-commercial academic research; access requests reviewed by the authors)",
        citation=(
            "Chen, R.J. et al. Towards a general-purpose foundation model for computational "
            "pathology. Nature Medicine 30, 850-862 (2024)."
        ),
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=224,
        gated=True,
    )

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        patch_size=16,
        init_values=1e-5,
        num_classes=0,
    )


@hookimpl
def register_encoders(register):
    register(UniEncoder)
