"""CONCH (v1, Mahmood Lab) vision encoder with its contrastive projection: 512-d image-text space.

PathoArgus (section 5) uses CONCH patch features and scores question relevance against text;
that needs the features in CONCH's joint image-text space, i.e. after `proj_contrast`
(`encode_image(proj_contrast=True)` in the public code). Common extractors (CLAM, TRIDENT, STAMP)
save `proj_contrast=False` features instead: also 512-d, but outside the joint space. This
encoder's record says `joint_space = "conch-v1"`, which the feature files it writes carry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders.conch15 import _NOT_VISION, Conch15Encoder

if TYPE_CHECKING:
    from torch import nn

# CONCH v1 normalises with OpenAI CLIP's statistics (`open_clip_custom.constants`, set in `create_model`).
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
# Parts of the vision tower that are not the contrastive image embedding (the captioning pooler).
_NOT_CONTRAST = ("attn_pool_caption.", "ln_caption.", "head.")


class ConchEncoder(Conch15Encoder):
    """CONCH v1 (`conch_ViT-B-16.json`): ViT-B/16 trunk at 448 px (timm defaults: width 768, 12
    layers, 12 heads, qkv bias, no layer scale), contrastive attentional pooler (1 query, 512-d,
    8 heads), LayerNorm(512), projection 512 x 512. The checkpoint is the full CoCa model
    (`MahmoodLab/CONCH`, `pytorch_model.bin`); its `visual.` part is loaded, the text tower and
    the captioning pooler are dropped. Preprocessing: resize 448 (bicubic), centre crop 448,
    OpenAI CLIP mean / std (`image_transform`). Loading (prefixes, dropped parts, grid resampling)
    is CONCH v1.5's (`Conch15Encoder`), with the captioning pooler dropped too."""

    name: ClassVar[str] = "conch"
    description: ClassVar[str] = ("CONCH v1 (Mahmood Lab) ViT-B/16 + contrastive pooler and projection, 512-d "
                                  "image-text space; gated")
    embed_dim: ClassVar[int] = 512
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=512, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    joint_space: ClassVar[str | None] = "conch-v1"
    timm_name: ClassVar[str] = "vit_base_patch16_224"
    pooling: ClassVar[str] = "attentional-pooler+projection"
    resize_px: ClassVar[int] = 448
    crop_px: ClassVar[int | None] = 448
    interpolation: ClassVar[str] = "bicubic"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="MahmoodLab/CONCH",
        filename="pytorch_model.bin",
        sha256=None,
        license="CC-BY-NC-ND-4.0 (non-commercial academic research; access requests reviewed by the authors)",
        citation=(
            "Lu, M.Y. et al. A visual-language foundation model for computational pathology. "
            "Nature Medicine 30, 863-874 (2024)."
        ),
        mean=OPENAI_MEAN,
        std=OPENAI_STD,
        input_size=448,
        gated=True,
    )
    pooler_defaults: ClassVar[dict[str, int]] = {"contrast_dim": 512, "pooler_heads": 8}

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=448,
        patch_size=16,
        embed_dim=768,
        depth=12,
        num_heads=12,
        mlp_ratio=4.0,
        num_classes=0,
    )

    output_key: ClassVar[str] = "contrast_dim"
    not_embedding: ClassVar[tuple[str, ...]] = (*_NOT_VISION, *_NOT_CONTRAST)

    def tower(self, trunk: nn.Module, pooler: dict[str, Any]) -> nn.Module:
        from pathkit_encoders._modules import ConchV1VisionTower

        return ConchV1VisionTower(trunk, embed_dim=pooler["contrast_dim"], pooler_heads=pooler["pooler_heads"])


@hookimpl
def register_encoders(register):
    register(ConchEncoder)
