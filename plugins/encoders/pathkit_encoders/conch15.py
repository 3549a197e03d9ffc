"""CONCH v1.5 (Mahmood Lab) vision encoder: ViT-L/16 trunk + attentional pooler, 768-d, 448 px input."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD, ViTTileEncoder, build_on

if TYPE_CHECKING:
    import torch
    from torch import nn

# Prefixes of the full CoCa checkpoint that are not part of the contrastive vision embedding.
_NOT_VISION = ("text.", "attn_pool_caption.", "ln_caption.", "logit_scale", "text_decoder.")


class Conch15Encoder(ViTTileEncoder):
    """CONCH v1.5 vision tower (REFERENCES.md; key layout of `pytorch_model_vision.bin`).

    Trunk: ViT-L/16 (1024 wide, 24 layers, 16 heads, layer scale, qkv bias) with a 224 px
    (14 x 14) position grid resampled to the 448 px input; pooler: 1 learned query, d_model
    768, context 1024, 8 heads; then LayerNorm(768). Checkpoint position embeddings of another
    grid are first resampled to 14 x 14 (bilinear, no antialias), as the reference loader does.
    """

    name: ClassVar[str] = "conch15"
    description: ClassVar[str] = "CONCH v1.5 (Mahmood Lab) vision encoder, ViT-L/16 + attentional pooler, 768-d; gated"
    embed_dim: ClassVar[int] = 768
    tile_spec: ClassVar[TileSpec] = TileSpec(tile_px=512, mpp=0.5)
    precision: ClassVar[str] = "fp16"
    timm_name: ClassVar[str] = "vit_large_patch16_224"
    pooling: ClassVar[str] = "attentional-pooler"
    resize_px: ClassVar[int] = 448
    crop_px: ClassVar[int | None] = 448
    interpolation: ClassVar[str] = "bilinear"
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="MahmoodLab/conchv1_5",
        filename="pytorch_model_vision.bin",
        sha256=None,
        license="CC-BY-NC-ND-4.0 (non-commercial academic research; access requests reviewed by the authors)",
        citation=(
            "Lu, M.Y. et al. A visual-language foundation model for computational pathology. "
            "Nature Medicine 30, 863-874 (2024); CONCH v1.5 released with Ding, T. et al. "
            "Multimodal whole slide foundation model for pathology (TITAN), arXiv:2411.19666 (2024)."
        ),
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=448,
        gated=True,
    )
    pooler_defaults: ClassVar[dict[str, int]] = {"pooler_dim": 768, "pooler_heads": 8}

    arch_kwargs: ClassVar[dict[str, Any]] = dict(
        img_size=224,
        patch_size=16,
        embed_dim=1024,
        depth=24,
        num_heads=16,
        mlp_ratio=4.0,
        qkv_bias=True,
        init_values=1.0,
        num_classes=0,
    )

    # which pooler argument is the embedding width, and the checkpoint parts that are not the
    # contrastive image embedding (shared with CONCH v1, a subclass)
    output_key: ClassVar[str] = "pooler_dim"
    not_embedding: ClassVar[tuple[str, ...]] = _NOT_VISION

    @property
    def feature_dim(self) -> int:
        return int(self.split_architecture()[1][self.output_key])

    def tower(self, trunk: nn.Module, pooler: dict[str, Any]) -> nn.Module:
        from pathkit_encoders._modules import ConchVisionTower

        return ConchVisionTower(trunk, pooler_dim=pooler["pooler_dim"], pooler_heads=pooler["pooler_heads"])

    def build_backbone(self, device: str = "cpu") -> nn.Module:
        import timm

        trunk_args, pooler = self.split_architecture()
        with build_on(device):
            return self.tower(timm.create_model(self.timm_name, pretrained=False, **trunk_args), pooler)

    def wrap(self, backbone: nn.Module) -> nn.Module:
        return backbone

    def adapt_state_dict(
        self, state_dict: dict[str, torch.Tensor], backbone: nn.Module
    ) -> dict[str, torch.Tensor]:
        """Accept the vision-only file and the full CoCa checkpoint (`visual.` prefix; a
        DataParallel `module.` prefix removed); a position grid of another size is resampled
        (bilinear, no antialias) as the public loaders do."""
        if state_dict and all(k.startswith("module.") for k in state_dict):
            state_dict = {k[len("module."):]: v for k, v in state_dict.items()}
        if any(k.startswith("visual.") for k in state_dict):
            state_dict = {k[len("visual."):]: v for k, v in state_dict.items() if k.startswith("visual.")}
        state_dict = {k: v for k, v in state_dict.items() if not k.startswith(self.not_embedding)}
        key = "trunk.pos_embed"
        target = backbone.trunk.pos_embed
        if key in state_dict and tuple(state_dict[key].shape) != tuple(target.shape):
            from timm.layers import resample_abs_pos_embed

            grid = backbone.trunk.patch_embed.grid_size
            source = state_dict[key]
            if source.ndim == 3 and source.shape[-1] == target.shape[-1]:
                state_dict[key] = resample_abs_pos_embed(
                    source.float(),
                    new_size=list(grid),
                    num_prefix_tokens=1,
                    interpolation="bilinear",
                    antialias=False,
                    verbose=False,
                ).to(source.dtype)
        return state_dict


@hookimpl
def register_encoders(register):
    register(Conch15Encoder)
