"""Virchow2 (Paige): ViT-H/14 with 4 registers and SwiGLU; class token + mean patch token, 2560-d."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD, ViTTileEncoder


class Virchow2Encoder(ViTTileEncoder):
    """Virchow2. Architecture and embedding: REFERENCES.md encoder table, paige-ai/Virchow2 model card."""

    name: ClassVar[str] = "virchow2"
    description: ClassVar[str] = "Virchow2 (Paige), 632M-parameter ViT-H/14, 2560-d (class + mean patch); gated"
    embed_dim: ClassVar[int] = 2560
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=224, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    timm_name: ClassVar[str] = "vit_huge_patch14_224"
    pooling: ClassVar[str] = "cls+patch-mean"
    resize_px: ClassVar[int] = 224
    crop_px: ClassVar[int | None] = None
    interpolation: ClassVar[str] = "bicubic"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="paige-ai/Virchow2",
        filename="pytorch_model.bin",
        sha256=None,
        license="CC-BY-NC-ND-4.0 (non-commercial; access requests reviewed by Paige)",
        citation=(
            "Zimmermann, E. et al. Virchow2: Scaling self-supervised mixed magnification models "
            "in pathology. arXiv:2408.00738 (2024)."
        ),
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=224,
        gated=True,
    )

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        init_values=1e-5,
        reg_tokens=4,
        mlp_ratio=5.3375,
        global_pool="",
        num_classes=0,
        mlp_layer="@timm.layers.SwiGLUPacked",
        act_layer="@torch.nn.SiLU",
    )


@hookimpl
def register_encoders(register):
    register(Virchow2Encoder)
