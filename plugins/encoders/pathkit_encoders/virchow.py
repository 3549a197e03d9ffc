"""Virchow (v1, Paige): ViT-H/14 with SwiGLU, no registers; class token + mean patch token, 2560-d."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD, ViTTileEncoder


class VirchowEncoder(ViTTileEncoder):
    """Virchow v1. Architecture: the paige-ai/Virchow model card (timm `vit_huge_patch14_224`,
    `init_values=1e-5`, `mlp_ratio=5.3375`, SwiGLUPacked + SiLU, `global_pool=""`) and GOLDMARK's
    loader (`_load_virchow`: the same embedding as Virchow2 with no register tokens)."""

    name: ClassVar[str] = "virchow"
    description: ClassVar[str] = "Virchow v1 (Paige), 632M-parameter ViT-H/14, 2560-d (class + mean patch); gated"
    embed_dim: ClassVar[int] = 2560
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=224, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    timm_name: ClassVar[str] = "vit_huge_patch14_224"
    pooling: ClassVar[str] = "cls+patch-mean"
    resize_px: ClassVar[int] = 224
    crop_px: ClassVar[int | None] = None
    interpolation: ClassVar[str] = "bicubic"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="paige-ai/Virchow",
        filename="pytorch_model.bin",
        sha256=None,
        license="Apache-2.0 with the access conditions of the model card (non-commercial research; "
                "access requests reviewed by Paige)",
        citation=(
            "Vorontsov, E. et al. A foundation model for clinical-grade computational pathology and "
            "rare cancers detection. Nature Medicine 30, 2924-2935 (2024)."
        ),
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=224,
        gated=True,
    )

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        init_values=1e-5,
        mlp_ratio=5.3375,
        global_pool="",
        num_classes=0,
        mlp_layer="@timm.layers.SwiGLUPacked",
        act_layer="@torch.nn.SiLU",
    )


@hookimpl
def register_encoders(register):
    register(VirchowEncoder)
