"""H-optimus-1 (Bioptimus): DINOv2 ViT-g/14 with 4 registers, 1536-d class token, fp16."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import ViTTileEncoder

HOPTIMUS_MEAN = (0.707223, 0.578729, 0.703617)
HOPTIMUS_STD = (0.211883, 0.230117, 0.177517)


class HOptimus1Encoder(ViTTileEncoder):
    """H-optimus-1. Architecture and preprocessing: REFERENCES.md encoder table, bioptimus/H-optimus-1."""

    name: ClassVar[str] = "hoptimus1"
    description: ClassVar[str] = "H-optimus-1 (Bioptimus), 1.1B-parameter ViT-g/14, 1536-d; gated"
    embed_dim: ClassVar[int] = 1536
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=224, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    timm_name: ClassVar[str] = "vit_giant_patch14_reg4_dinov2"
    resize_px: ClassVar[int] = 224
    crop_px: ClassVar[int | None] = None
    interpolation: ClassVar[str] = "bilinear"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="bioptimus/H-optimus-1",
        filename="pytorch_model.bin",
        sha256=None,
        license="Bioptimus H-optimus-1 licence (non-commercial use; see the model card for the terms)",
        citation="Bioptimus. H-optimus-1 (2025). https://huggingface.co/bioptimus/H-optimus-1",
        mean=HOPTIMUS_MEAN,
        std=HOPTIMUS_STD,
        input_size=224,
        gated=True,
    )

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        init_values=1e-5,
        global_pool="token",
        num_classes=0,
    )


@hookimpl
def register_encoders(register):
    register(HOptimus1Encoder)
