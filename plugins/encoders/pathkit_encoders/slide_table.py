"""The slide encoders as data: one `SlideSpec` row each, built by `_slide.TableSlideEncoder`.

A row names the module ("@module.Class" and its keyword arguments, the published architecture),
the patch encoder whose features it reads, the tiles those were extracted from, the weights
record and the published parameter count. Sources: docs/encoders.md, "Slide encoders" (TRIDENT's
slide-encoder loader, MIL-Lab, MADELEINE's and CHIEF's public code). Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pathkit_core.contracts import PretrainedWeights, TileSpec
from pathkit_encoders._adapters import prism_image_resampler, strip_data_parallel, titan_vision_encoder
from pathkit_encoders.table import GIGAPATH, IMAGENET_MEAN, IMAGENET_STD, MAHMOOD_LICENCE, VIRCHOW2


@dataclasses.dataclass(frozen=True)
class SlideSpec:
    name: str
    description: str
    module: str
    arch: Mapping[str, Any]
    patch_encoder: str | None
    patch_dim: int | None
    embed_dim: int
    tile_spec: TileSpec | None
    weights: PretrainedWeights | None
    parameters: int
    precision: str = "fp32"
    feature_key: str | None = None
    checkpoint_wrappers: tuple[str, ...] = ()
    adapt_state_dict: Callable[..., Any] | None = None
    random_init_seed: int = 0
    reads_tile_size: bool = False  # the module is given the tiles' level-0 size (`tile_px_level0`)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arch", MappingProxyType(dict(self.arch)))


def _weights(hub: str | None, filename: str, licence: str, citation: str, gated: bool) -> PretrainedWeights:
    return PretrainedWeights(hf_hub_id=hub, filename=filename, sha256=None, license=licence, citation=citation,
                             mean=IMAGENET_MEAN, std=IMAGENET_STD, gated=gated)


# FEATHER (MIL-Lab `abmil.base` trained pan-cancer on CONCH v1.5 features, TRIDENT's `feather`):
# 512-px tiles at 20x; 843,501 parameters with the 108-class head of the release.
FEATHER = SlideSpec(
    name="feather",
    description="FEATHER (Mahmood Lab), gated attention MIL over CONCH v1.5 features, 512-d; gated",
    module="@pathkit_encoders._slide_modules.FeatherABMIL",
    arch=dict(in_dim=768, embed_dim=512, attn_dim=384, num_classes=108),
    patch_encoder="conch15", patch_dim=768, embed_dim=512, tile_spec=TileSpec(512, 0.5),
    weights=_weights("MahmoodLab/abmil.base.conch_v15.pc108-24k", "model.safetensors", MAHMOOD_LICENCE,
                     ("Shao, D. et al. Do multiple instance learning models transfer? ICML (2025) (FEATHER, "
                      "MIL-Lab)."), gated=True),
    parameters=843_501, feature_key="embed_dim",
)

# MADELEINE (Jaume et al.): multi-head (4) gated ABMIL over CONCH v1 features, 512-d, the H&E
# branch (`encode_he`); 256-px tiles at 10x (its patching).
MADELEINE = SlideSpec(
    name="madeleine",
    description="MADELEINE (Mahmood Lab), 4-head gated attention MIL over CONCH v1 features, 512-d; gated",
    module="@pathkit_encoders._slide_modules.Madeleine",
    arch=dict(in_dim=512, hidden=512, heads=4),
    patch_encoder="conch", patch_dim=512, embed_dim=512, tile_spec=TileSpec(256, 1.0),
    weights=_weights("MahmoodLab/madeleine", "model.pt", MAHMOOD_LICENCE,
                     ("Jaume, G. et al. Multistain pretraining for slide representation learning in pathology. "
                      "ECCV (2024)."), gated=True),
    parameters=4_996_740, feature_key="hidden", adapt_state_dict=strip_data_parallel,
)

# CHIEF (Wang et al., Nature 2024): CLAM-style gated attention over CTransPath features,
# `WSI_feature` 512-d; 256-px tiles at 10x; weights on the authors' drive only (local file).
CHIEF = SlideSpec(
    name="chief",
    description="CHIEF (Harvard), gated attention over CTransPath features, 512-d WSI feature; local weights",
    module="@pathkit_encoders._slide_modules.Chief",
    arch=dict(in_dim=768, hidden=512, attn_dim=256, n_classes=2),
    patch_encoder="ctranspath", patch_dim=768, embed_dim=512, tile_spec=TileSpec(256, 1.0),
    weights=_weights(None, "CHIEF_pretraining.pth",
                     "AGPL/GPL-3.0 code, non-commercial academic use (github.com/hms-dbmi/CHIEF)",
                     ("Wang, X. et al. A pathology foundation model for cancer diagnosis and prognosis prediction. "
                      "Nature 634, 970-978 (2024)."), gated=False),
    parameters=1_185_032, feature_key="hidden",
)

# TITAN (Ding et al., Nature Medicine 2025; MahmoodLab/TITAN `TitanVisionConfig` and
# `vision_transformer.py`): ViT (768 wide, 6 layers, 12 heads) over the grid of CONCH v1.5 features
# of 512-px tiles at 20x, 2D ALiBi, parallel attentional pools; the embedding is the contrastive
# pool's token (`encode_slide_from_patch_features`, 768-d). 48,539,904 parameters ("49M").
TITAN = SlideSpec(
    name="titan",
    description="TITAN (Mahmood Lab), 2D-ALiBi ViT over the CONCH v1.5 feature grid, 768-d; gated",
    module="@pathkit_encoders._titan.TitanSlideViT",
    arch=dict(in_dim=768, embed_dim=768, depth=6, num_heads=12, mlp_ratio=4.0, pool_queries=128, pool_heads=8),
    patch_encoder="conch15", patch_dim=768, embed_dim=768, tile_spec=TileSpec(512, 0.5),
    weights=_weights("MahmoodLab/TITAN", "model.safetensors", MAHMOOD_LICENCE,
                     ("Ding, T. et al. A multimodal whole-slide foundation model for pathology. "
                      "Nature Medicine (2025)."), gated=True),
    parameters=48_539_904, feature_key="embed_dim", adapt_state_dict=titan_vision_encoder, reads_tile_size=True,
)

# Prov-GigaPath's slide encoder (Xu et al., Nature 2024; `gigapath_slide_enc12l768d` over
# `LongNet_12_layers_768_dim`): 12 LongNet layers, 768 wide, 16 heads, FFN 3072, dilations
# 1..16 over segments 1024..1048576, fixed 2D sine-cosine positions; class token, 768-d.
# Over the 1536-d Prov-GigaPath tile features of 256-px tiles at 20x. 86,330,880 parameters.
GIGAPATH_SLIDE = SlideSpec(
    name="gigapath-slide",
    description="Prov-GigaPath slide encoder (Microsoft/Providence), LongNet over GigaPath tile features, 768-d; gated",
    module="@pathkit_encoders._longnet.GigaPathSlideEncoder",
    arch=dict(in_dim=1536, embed_dim=768, depth=12, num_heads=16, ffn_dim=3072),
    patch_encoder="gigapath", patch_dim=1536, embed_dim=768, tile_spec=TileSpec(256, 0.5),
    weights=_weights("prov-gigapath/prov-gigapath", "slide_encoder.pth", GIGAPATH.weights.license,
                     ("Xu, H. et al. A whole-slide foundation model for digital pathology from real-world data. "
                      "Nature 630, 181-188 (2024)."), gated=True),
    parameters=86_330_880, feature_key="embed_dim", checkpoint_wrappers=("model",),
)

# PRISM (Shaikovski et al. 2024; paige-ai/Prism `PerceiverConfig`, `perceiver.py`): Perceiver
# with 512 + 1 latents of width 1280 over the 2560-d Virchow (v1) tile embeddings of 224-px tiles at
# 20x; 8 layers sharing cross-attention from the second and the 6-block transformer of the first;
# the embedding is the LayerNormed first latent, 1280-d. 99,037,440 parameters ("99M").
PRISM = SlideSpec(
    name="prism",
    description="PRISM (Paige), Perceiver over Virchow tile embeddings, 1280-d; gated",
    module="@pathkit_encoders._perceiver.PrismPerceiver",
    arch=dict(in_dim=2560, latent_dim=1280, latent_seq=512, mhsa_heads=8, perceiver_depth=8, transformer_depth=6),
    patch_encoder="virchow", patch_dim=2560, embed_dim=1280, tile_spec=TileSpec(224, 0.5),
    weights=_weights("paige-ai/Prism", "model.safetensors", VIRCHOW2.weights.license,
                     ("Shaikovski, G. et al. PRISM: A multi-modal generative foundation model for slide-level "
                      "histopathology. arXiv:2405.10254 (2024)."), gated=True),
    parameters=99_037_440, feature_key="latent_dim", adapt_state_dict=prism_image_resampler,
)

# tiny-titan: NOT a pathology model. A TITAN-family slide encoder (1 layer, 32 wide, 2 heads) over
# tiny-vit features with weights from seed 0, so that tests and demo suites run a real slide
# encoder (grid, ALiBi, attentional pool) in seconds.
TINY_TITAN = SlideSpec(
    name="tiny-titan",
    description="NOT a pathology model: 1-layer TITAN-style slide encoder over tiny-vit features, seeded weights",
    module="@pathkit_encoders._titan.TitanSlideViT",
    arch=dict(in_dim=64, embed_dim=32, depth=1, num_heads=2, mlp_ratio=2.0, pool_queries=4, pool_heads=2),
    patch_encoder="tiny-vit", patch_dim=64, embed_dim=32, tile_spec=TileSpec(128, 1.0), weights=None,
    parameters=20_608, feature_key="embed_dim", reads_tile_size=True,
)

SLIDE_ROWS: Mapping[str, SlideSpec] = MappingProxyType(
    {s.name: s for s in (FEATHER, MADELEINE, CHIEF, TITAN, GIGAPATH_SLIDE, PRISM, TINY_TITAN)})


def mean_row(encoder: str, dim: int) -> SlideSpec:
    """`mean-<encoder>`: the mean of that patch encoder's features, any tiles, no parameters."""
    return SlideSpec(
        name=f"mean-{encoder}", description=f"mean of the {encoder} patch features (slide-level baseline)",
        module="@pathkit_encoders._slide_modules.MeanPool", arch={}, patch_encoder=encoder, patch_dim=dim,
        embed_dim=dim, tile_spec=None, weights=None, parameters=0,
    )
