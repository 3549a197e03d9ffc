"""UNI2-h (Mahmood Lab): ViT-H/14-style giant ViT with 8 registers and SwiGLU, 1536-d, bf16."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD, ViTTileEncoder


class Uni2hEncoder(ViTTileEncoder):
    """UNI2-h. Architecture, preprocessing and precision: REFERENCES.md encoder table, MahmoodLab/UNI2-h."""

    name: ClassVar[str] = "uni2h"
    description: ClassVar[str] = "UNI2-h (Mahmood Lab), 681M-parameter ViT, 1536-d class token; gated"
    embed_dim: ClassVar[int] = 1536
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=256, mpp=0.5)
    precision: ClassVar[str] = "bf16"
    timm_name: ClassVar[str] = "vit_giant_patch14_224"
    resize_px: ClassVar[int] = 224
    crop_px: ClassVar[int | None] = 224
    interpolation: ClassVar[str] = "bilinear"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="MahmoodLab/UNI2-h",
        filename="pytorch_model.bin",
        sha256=None,
        license="CC-BY-NC-ND-4.0 (non-commercial academic research; access requests reviewed by the authors)",
        citation=(
            "Chen, R.J. et al. Towards a general-purpose foundation model for computational "
            "pathology. Nature Medicine 30, 850-862 (2024). UNI2-h model card, MahmoodLab/UNI2-h."
        ),
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=224,
        gated=True,
    )

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        patch_size=14,
        depth=24,
        num_heads=24,
        init_values=1e-5,
        embed_dim=1536,
        mlp_ratio=2.66667 * 2,
        num_classes=0,
        no_embed_class=True,
        mlp_layer="@timm.layers.SwiGLUPacked",
        act_layer="@torch.nn.SiLU",
        reg_tokens=8,
    )


@hookimpl
def register_encoders(register):
    register(Uni2hEncoder)
