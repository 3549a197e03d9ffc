"""H-optimus-0 (Bioptimus): DINOv2 ViT-g/14 with 4 registers, 1536-d class token, fp16."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import ViTTileEncoder
from pathkit_encoders.hoptimus1 import HOPTIMUS_MEAN, HOPTIMUS_STD


class HOptimus0Encoder(ViTTileEncoder):
    """H-optimus-0. Same architecture and preprocessing as H-optimus-1 (TRIDENT, bioptimus/H-optimus-0)."""

    name: ClassVar[str] = "hoptimus0"
    description: ClassVar[str] = "H-optimus-0 (Bioptimus), 1.1B-parameter ViT-g/14, 1536-d"
    embed_dim: ClassVar[int] = 1536
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=224, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    timm_name: ClassVar[str] = "vit_giant_patch14_reg4_dinov2"
    resize_px: ClassVar[int] = 224
    crop_px: ClassVar[int | None] = None
    interpolation: ClassVar[str] = "bilinear"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="bioptimus/H-optimus-0",
        filename="pytorch_model.bin",
        sha256=None,
        license="Apache-2.0 (see the model card)",
        citation="Saillard, C. et al. H-optimus-0 (2024). https://github.com/bioptimus/releases",
        mean=HOPTIMUS_MEAN,
        std=HOPTIMUS_STD,
        input_size=224,
        gated=False,
    )

    # The public loaders build H-optimus-0 with a fixed input size (dynamic_img_size=False).
    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        init_values=1e-5,
        global_pool="token",
        num_classes=0,
        dynamic_img_size=False,
    )


@hookimpl
def register_encoders(register):
    register(HOptimus0Encoder)
