"""The encoder table: one `EncoderSpec` row per tile encoder, over the shared builder in `_vit.py`.

A variant is a row, in the manner of timm's pretrained cfgs: the architecture (a timm model name
and explicit keyword arguments, never an `hf-hub:` name, which would fetch a config from the
network), the module built around the trunk, the pooling, the weights record (hub id, file,
sha256, licence, citation, mean / std, input size, gated), the preprocessing, the tile spec and
the precision. Adding an encoder is adding a row here and registering it (docs/encoders.md,
"Adding an encoder"). Sources of each fact: the model cards, the public TRIDENT loader and the
papers, named per row and gathered in the encoder table of docs/encoders.md.

Nothing here imports torch or timm: layer classes and modules are written "@module.Name" and
imported only when a model is built, so that listing encoders stays light.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pathkit_core.contracts import PathkitError, PretrainedWeights, TileSpec
from pathkit_encoders._adapters import (
    COCA_NOT_CONTRAST,
    COCA_NOT_VISION,
    coca_vision_tower,
    dino_teacher,
    dinov2_native,
    hf_clip_vision,
    hf_vit,
    strip_data_parallel,
    swin_old_layout,
    torchvision_resnet_trunk,
)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# CONCH v1 normalises with OpenAI CLIP's statistics (`open_clip_custom.constants`, set in `create_model`).
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
HOPTIMUS_MEAN = (0.707223, 0.578729, 0.703617)
HOPTIMUS_STD = (0.211883, 0.230117, 0.177517)

MAHMOOD_LICENCE = "CC-BY-NC-ND-4.0 (non-commercial academic research; access requests reviewed by the authors)"
UNI_PAPER = ("Chen, R.J. et al. Towards a general-purpose foundation model for computational "
             "pathology. Nature Medicine 30, 850-862 (2024).")
CONCH_PAPER = ("Lu, M.Y. et al. A visual-language foundation model for computational pathology. "
               "Nature Medicine 30, 863-874 (2024)")

# How the embedding is read from a timm backbone without a tower: its own output ("model") or
# the module wrapped around it.
WRAPPERS: Mapping[str, str | None] = MappingProxyType({
    "model": None,
    "cls+patch-mean": "@pathkit_encoders._modules.ClassAndPatchMean",  # Virchow
    "feature-map-mean": "@pathkit_encoders._modules.FeatureMapMean",  # truncated ResNet-50
})


@dataclasses.dataclass(frozen=True)
class EncoderSpec:
    """One tile encoder as data. The fields named like the `Encoder` contract's attributes (name,
    description, embed_dim, tile_spec, precision, weights, interpolation, resize_px, crop_px,
    joint_space, is_pathology_model, random_init_seed) become those attributes.

    `arch` holds the timm keyword arguments of the published architecture; a `tower`
    ("@module.Class") is built around the timm trunk as `Tower(trunk, **pooler)`, its state dict
    being the checkpoint (CONCH); without one, `pooling` names the wrapper of `WRAPPERS`.
    `feature_key` is the architecture argument that is the feature width (an override of it
    changes `feature_dim`). `checkpoint_wrappers` are payload keys holding the state dict (EAGLE's
    `tile_model`), `adapt_state_dict(state, backbone)` maps the checkpoint's keys onto the
    backbone's (`_adapters.py`). `interpolation`, `resize_px` and `crop_px` are stated in every
    row: the transform resizes the shorter side to `resize_px` and centre-crops to `crop_px`.
    """

    name: str
    description: str
    embed_dim: int
    tile_spec: TileSpec
    precision: str
    weights: PretrainedWeights
    interpolation: str
    resize_px: int
    crop_px: int | None
    timm_name: str
    arch: Mapping[str, Any]
    pooling: str = "model"
    tower: str | None = None
    pooler: Mapping[str, int] = dataclasses.field(default_factory=dict)
    feature_key: str = "embed_dim"
    joint_space: str | None = None
    is_pathology_model: bool = True
    random_init_seed: int = 0
    checkpoint_wrappers: tuple[str, ...] = ()
    adapt_state_dict: Callable[..., Any] | None = None
    parameters: int | None = None
    load_on: str = "meta"

    def __post_init__(self) -> None:
        # read-only mappings: rows are shared constants
        object.__setattr__(self, "arch", MappingProxyType(dict(self.arch)))
        object.__setattr__(self, "pooler", MappingProxyType(dict(self.pooler)))
        if self.tower is None and self.pooling not in WRAPPERS:
            raise PathkitError(f"encoder row {self.name!r}: pooling {self.pooling!r} is not one of "
                               f"{', '.join(WRAPPERS)} and no tower builds it")
        if self.interpolation not in ("bicubic", "bilinear"):
            raise PathkitError(f"encoder row {self.name!r}: interpolation {self.interpolation!r} is not "
                               "bicubic or bilinear")

    def replace(self, **changes: Any) -> EncoderSpec:
        """A variant of this row (timm's cfg inheritance): the fields given changed."""
        return dataclasses.replace(self, **changes)


SWIGLU = {"mlp_layer": "@timm.layers.SwiGLUPacked", "act_layer": "@torch.nn.SiLU"}

# UNI2-h: MahmoodLab/UNI2-h model card (docs/encoders.md, encoder table).
UNI2H = EncoderSpec(
    name="uni2h",
    description="UNI2-h (Mahmood Lab), 681M-parameter ViT, 1536-d class token; gated",
    embed_dim=1536, tile_spec=TileSpec(tile_px=256, mpp=0.5), precision="bf16",
    weights=PretrainedWeights(
        hf_hub_id="MahmoodLab/UNI2-h", filename="pytorch_model.bin", sha256=None, license=MAHMOOD_LICENCE,
        citation=f"{UNI_PAPER} UNI2-h model card, MahmoodLab/UNI2-h.",
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224, gated=True,
    ),
    interpolation="bilinear", resize_px=224, crop_px=224,
    timm_name="vit_giant_patch14_224",
    arch=dict(img_size=224, patch_size=14, depth=24, num_heads=24, init_values=1e-5, embed_dim=1536,
              mlp_ratio=2.66667 * 2, num_classes=0, no_embed_class=True, **SWIGLU, reg_tokens=8),
    parameters=681_394_176,
)

# CONCH v1.5 vision tower (MahmoodLab/conchv1_5 model card; key layout of `pytorch_model_vision.bin`): ViT-L/16
# trunk (1024 wide, 24 layers, 16 heads, layer scale, qkv bias) with a 224 px (14 x 14) position
# grid resampled to the 448 px input; pooler: 1 learned query, d_model 768, context 1024, 8 heads;
# then LayerNorm(768). The embedding is the pooled token before the text projection.
CONCH15 = EncoderSpec(
    name="conch15",
    description="CONCH v1.5 (Mahmood Lab) vision encoder, ViT-L/16 + attentional pooler, 768-d; gated",
    embed_dim=768, tile_spec=TileSpec(tile_px=512, mpp=0.5), precision="fp16",
    weights=PretrainedWeights(
        hf_hub_id="MahmoodLab/conchv1_5", filename="pytorch_model_vision.bin", sha256=None, license=MAHMOOD_LICENCE,
        citation=(f"{CONCH_PAPER}; CONCH v1.5 released with Ding, T. et al. Multimodal whole slide "
                  "foundation model for pathology (TITAN), arXiv:2411.19666 (2024)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=448, gated=True,
    ),
    interpolation="bilinear", resize_px=448, crop_px=448,
    timm_name="vit_large_patch16_224",
    arch=dict(img_size=224, patch_size=16, embed_dim=1024, depth=24, num_heads=16, mlp_ratio=4.0, qkv_bias=True,
              init_values=1.0, num_classes=0),
    pooling="attentional-pooler", tower="@pathkit_encoders._modules.ConchVisionTower",
    pooler={"pooler_dim": 768, "pooler_heads": 8}, feature_key="pooler_dim",
    adapt_state_dict=functools.partial(coca_vision_tower, drop=COCA_NOT_VISION),
    parameters=306_109_184,
)

# H-optimus-1: bioptimus/H-optimus-1 model card (docs/encoders.md, encoder table).
HOPTIMUS1 = EncoderSpec(
    name="hoptimus1",
    description="H-optimus-1 (Bioptimus), 1.1B-parameter ViT-g/14, 1536-d; gated",
    embed_dim=1536, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp16",
    weights=PretrainedWeights(
        hf_hub_id="bioptimus/H-optimus-1", filename="pytorch_model.bin", sha256=None,
        license="Bioptimus H-optimus-1 licence (non-commercial use; see the model card for the terms)",
        citation="Bioptimus. H-optimus-1 (2025). https://huggingface.co/bioptimus/H-optimus-1",
        mean=HOPTIMUS_MEAN, std=HOPTIMUS_STD, input_size=224, gated=True,
    ),
    interpolation="bilinear", resize_px=224, crop_px=None,
    timm_name="vit_giant_patch14_reg4_dinov2",
    arch=dict(img_size=224, init_values=1e-5, global_pool="token", num_classes=0),
    parameters=1_134_774_272,
)

# H-optimus-0: H-optimus-1's architecture, tile spec and preprocessing (TRIDENT,
# bioptimus/H-optimus-0); it differs in its checkpoint and licence.
HOPTIMUS0 = HOPTIMUS1.replace(
    name="hoptimus0",
    description="H-optimus-0 (Bioptimus), 1.1B-parameter ViT-g/14, 1536-d",
    weights=dataclasses.replace(
        HOPTIMUS1.weights, hf_hub_id="bioptimus/H-optimus-0", license="Apache-2.0 (see the model card)",
        citation="Saillard, C. et al. H-optimus-0 (2024). https://github.com/bioptimus/releases", gated=False,
    ),
)

# Virchow2: paige-ai/Virchow2 model card (docs/encoders.md, encoder table): the embedding is
# concat(class token, mean of the patch tokens after the 4 registers).
VIRCHOW2 = EncoderSpec(
    name="virchow2",
    description="Virchow2 (Paige), 632M-parameter ViT-H/14, 2560-d (class + mean patch); gated",
    embed_dim=2560, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp16",
    weights=PretrainedWeights(
        hf_hub_id="paige-ai/Virchow2", filename="pytorch_model.bin", sha256=None,
        license="CC-BY-NC-ND-4.0 (non-commercial; access requests reviewed by Paige)",
        citation=("Zimmermann, E. et al. Virchow2: Scaling self-supervised mixed magnification models "
                  "in pathology. arXiv:2408.00738 (2024)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224, gated=True,
    ),
    interpolation="bicubic", resize_px=224, crop_px=None,
    timm_name="vit_huge_patch14_224",
    arch=dict(img_size=224, init_values=1e-5, reg_tokens=4, mlp_ratio=5.3375, global_pool="", num_classes=0,
              **SWIGLU),
    pooling="cls+patch-mean",
    parameters=631_239_424,
)

# Prov-GigaPath tile encoder: prov-gigapath/prov-gigapath config (docs/encoders.md). timm's
# vit_giant_patch14_dinov2 keeps its SwiGLUPacked MLP and layer scale (init 1e-5); 16 px patches
# and mlp_ratio 5.33334 give GigaPath's 1.13B parameters.
GIGAPATH = EncoderSpec(
    name="gigapath",
    description="Prov-GigaPath tile encoder (Microsoft/Providence), 1.1B-parameter ViT-g/16, 1536-d; gated",
    embed_dim=1536, tile_spec=TileSpec(tile_px=256, mpp=0.5), precision="fp16",
    weights=PretrainedWeights(
        hf_hub_id="prov-gigapath/prov-gigapath", filename="pytorch_model.bin", sha256=None,
        license="Apache-2.0 with the access conditions of the model card (research use)",
        citation=("Xu, H. et al. A whole-slide foundation model for digital pathology from real-world "
                  "data. Nature 630, 181-188 (2024)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224, gated=True,
    ),
    interpolation="bicubic", resize_px=256, crop_px=224,
    timm_name="vit_giant_patch14_dinov2",
    arch=dict(img_size=224, in_chans=3, patch_size=16, embed_dim=1536, depth=40, num_heads=24, mlp_ratio=5.33334,
              num_classes=0),
    parameters=1_134_953_984,
)

# UNI v1: MahmoodLab/UNI model card and the TRIDENT loader.
UNI = EncoderSpec(
    name="uni",
    description="UNI v1 (Mahmood Lab), 303M-parameter ViT-L/16, 1024-d class token; gated",
    embed_dim=1024, tile_spec=TileSpec(tile_px=256, mpp=0.5), precision="fp16",
    weights=PretrainedWeights(
        hf_hub_id="MahmoodLab/UNI", filename="pytorch_model.bin", sha256=None, license=MAHMOOD_LICENCE,
        citation=UNI_PAPER, mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224, gated=True,
    ),
    interpolation="bilinear", resize_px=224, crop_px=224,
    timm_name="vit_large_patch16_224",
    arch=dict(img_size=224, patch_size=16, init_values=1e-5, num_classes=0),
    parameters=303_350_784,
)

# Virchow v1: Virchow2's architecture, embedding and preprocessing without the 4 register tokens
# (paige-ai/Virchow model card: timm `vit_huge_patch14_224`, `init_values=1e-5`, `mlp_ratio=5.3375`,
# SwiGLUPacked + SiLU, `global_pool=""`; GOLDMARK's `_load_virchow` pools the class token with the
# mean of the patch tokens, no registers).
VIRCHOW = VIRCHOW2.replace(
    name="virchow",
    description="Virchow v1 (Paige), 632M-parameter ViT-H/14, 2560-d (class + mean patch); gated",
    weights=PretrainedWeights(
        hf_hub_id="paige-ai/Virchow", filename="pytorch_model.bin", sha256=None,
        license=("Apache-2.0 with the access conditions of the model card (non-commercial research; "
                 "access requests reviewed by Paige)"),
        citation=("Vorontsov, E. et al. A foundation model for clinical-grade computational pathology and "
                  "rare cancers detection. Nature Medicine 30, 2924-2935 (2024)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224, gated=True,
    ),
    arch={k: v for k, v in VIRCHOW2.arch.items() if k != "reg_tokens"},
    parameters=631_229_184,
)

# EAGLE (Campanella et al.), GOLDMARK's `gigapath_ft` (paper Table 2): Prov-GigaPath's
# architecture and preprocessing with weights fine-tuned for EGFR in lung adenocarcinoma, on no
# public hub (a local file only). GOLDMARK's loader (`_load_gigapath_ft`) reads a training payload
# whose tile model sits under `tile_model`, with DataParallel's `module.` prefix on its keys; both
# are unwrapped and the remaining keys must fit exactly (GOLDMARK loads with `strict=False`).
EAGLE = GIGAPATH.replace(
    name="eagle",
    description=("EAGLE (MSK), Prov-GigaPath ViT-g/16 fine-tuned for LUAD EGFR, 1.1B parameters, 1536-d; "
                 "local weights only"),
    weights=PretrainedWeights(
        hf_hub_id=None, filename="gigapath_ft_checkpoint.pth", sha256=None,
        license=("not publicly released: the weights are the authors' (request them from MSK); the backbone is "
                 "Prov-GigaPath (Apache-2.0 with its model card's conditions)"),
        citation=("Campanella, G. et al. Real-world deployment of a fine-tuned pathology foundation model for lung "
                  "cancer biomarker detection. arXiv:2408.08862 (2024)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224,
        gated=False,  # not on a hub at all: see the licence text
    ),
    checkpoint_wrappers=("tile_model",),
    adapt_state_dict=strip_data_parallel,
)

# CONCH v1 (`conch_ViT-B-16.json`) into the image-text space: ViT-B/16 trunk at 448 px (timm
# defaults: width 768, 12 layers, 12 heads, qkv bias, no layer scale), contrastive attentional
# pooler (1 query, 512-d, 8 heads), LayerNorm(512), projection 512 x 512 (`encode_image(
# proj_contrast=True)`, which PathoArgus's text relevance needs: `joint_space = "conch-v1"`; CLAM,
# TRIDENT and STAMP save `proj_contrast=False` features instead). The checkpoint is the full CoCa
# model (`MahmoodLab/CONCH`); its `visual.` part is loaded, the text tower and the captioning
# pooler dropped. Preprocessing: resize 448 (bicubic), centre crop 448, OpenAI CLIP mean / std.
CONCH = EncoderSpec(
    name="conch",
    description=("CONCH v1 (Mahmood Lab) ViT-B/16 + contrastive pooler and projection, 512-d "
                 "image-text space; gated"),
    embed_dim=512, tile_spec=TileSpec(tile_px=512, mpp=0.5), precision="fp16", joint_space="conch-v1",
    weights=PretrainedWeights(
        hf_hub_id="MahmoodLab/CONCH", filename="pytorch_model.bin", sha256=None, license=MAHMOOD_LICENCE,
        citation=f"{CONCH_PAPER}.", mean=OPENAI_MEAN, std=OPENAI_STD, input_size=448, gated=True,
    ),
    interpolation="bicubic", resize_px=448, crop_px=448,
    timm_name="vit_base_patch16_224",
    arch=dict(img_size=448, patch_size=16, embed_dim=768, depth=12, num_heads=12, mlp_ratio=4.0, num_classes=0),
    pooling="attentional-pooler+projection", tower="@pathkit_encoders._modules.ConchV1VisionTower",
    pooler={"contrast_dim": 512, "pooler_heads": 8}, feature_key="contrast_dim",
    adapt_state_dict=functools.partial(coca_vision_tower, drop=(*COCA_NOT_VISION, *COCA_NOT_CONTRAST)),
    parameters=87_829_248,
)

# tiny-vit: NOT a pathology model. A small timm ViT (64 px input, 8 px patches, width 64, 2
# layers) initialised from seed 0: deterministic features, so tests and the embedded demo exercise
# the real extraction path end to end in seconds.
TINY_VIT = EncoderSpec(
    name="tiny-vit",
    description="NOT a pathology model: tiny ViT with fixed random weights (tests, demo)",
    embed_dim=64, tile_spec=TileSpec(tile_px=128, mpp=1.0), precision="fp32", is_pathology_model=False,
    weights=PretrainedWeights(
        hf_hub_id=None, filename=None, license="none needed: weights are generated locally from a fixed seed",
        citation="not a published model", mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=64,
    ),
    interpolation="bilinear", resize_px=64, crop_px=None,
    timm_name="vit_tiny_patch16_224",
    arch=dict(img_size=64, patch_size=8, embed_dim=64, depth=2, num_heads=2, mlp_ratio=2.0, num_classes=0),
    random_init_seed=0, parameters=83_648,
)

# A second demo encoder (width 96, seed 1) with tiny-vit's tile spec, so that one tiling serves
# both and the encoder x generator matrix can be exercised on the demo in minutes.
TINY_VIT_WIDE = TINY_VIT.replace(
    name="tiny-vit-wide",
    description="NOT a pathology model: wider tiny ViT with fixed random weights (matrix demo)",
    embed_dim=96, arch={**TINY_VIT.arch, "embed_dim": 96, "num_heads": 3}, random_init_seed=1, parameters=174_624,
)


# --------------------------------------------------------------------------- the field's other encoders
# Sources per row: docs/encoders.md, "Every encoder" (the public TRIDENT and eva loaders, the model
# cards, the papers). Parameter counts are of the module pathkit builds, which is the published
# architecture; the rounded figure the authors give is quoted beside each.

KAIKO_MEAN = (0.5, 0.5, 0.5)
KAIKO_STD = (0.5, 0.5, 0.5)
# Lunit's benchmark-ssl-pathology statistics (its timm hub config and the Kang et al. release).
LUNIT_MEAN = (0.70322989, 0.53606487, 0.66096631)
LUNIT_STD = (0.21716536, 0.26081574, 0.20723464)
OWKIN_LICENCE = "Owkin non-commercial licence (see the model card)"
KAIKO_LICENCE = "kaiko.ai release terms (github.com/kaiko-ai/towards_large_pathology_fms; see the model card)"
KAIKO_PAPER = ("Aben, N. et al. Towards large-scale training of pathology foundation models. "
               "arXiv:2404.15217 (2024).")

# Phikon (Owkin): iBOT ViT-B/16 as a Hugging Face ViTModel (no pooler), layer_norm_eps 1e-12;
# 224 px tiles at 20x; class token (TRIDENT's Phikon loader). 86M in the paper.
PHIKON = EncoderSpec(
    name="phikon",
    description="Phikon (Owkin), iBOT ViT-B/16, 768-d class token",
    embed_dim=768, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id="owkin/phikon", filename="pytorch_model.bin", sha256=None, license=OWKIN_LICENCE,
        citation=("Filiot, A. et al. Scaling self-supervised learning for histopathology with masked image "
                  "modeling. medRxiv 2023.07.21.23292757 (2023)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224,
    ),
    interpolation="bilinear", resize_px=224, crop_px=None,
    timm_name="vit_base_patch16_224",
    arch=dict(img_size=224, patch_size=16, embed_dim=768, depth=12, num_heads=12, num_classes=0,
              norm_layer="@pathkit_encoders._modules.LayerNormEps12"),
    adapt_state_dict=hf_vit, parameters=85_798_656,
)

# Phikon-v2 (Owkin): DINOv2 ViT-L/16 without registers as a Hugging Face Dinov2Model (layer scale,
# LayerNorm eps 1e-6); 224 px at 20x; class token; resize 224 + centre crop 224 (TRIDENT).
PHIKON_V2 = EncoderSpec(
    name="phikon-v2",
    description="Phikon-v2 (Owkin), DINOv2 ViT-L/16, 1024-d class token",
    embed_dim=1024, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id="owkin/phikon-v2", filename="model.safetensors", sha256=None, license=OWKIN_LICENCE,
        citation=("Filiot, A., Jacob, P., Mac Kain, A. & Saillard, C. Phikon-v2, a large and public feature "
                  "extractor for biomarker prediction. arXiv:2409.09173 (2024)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224,
    ),
    interpolation="bilinear", resize_px=224, crop_px=224,
    timm_name="vit_large_patch16_224",
    arch=dict(img_size=224, patch_size=16, init_values=1e-5, num_classes=0),
    adapt_state_dict=hf_vit, parameters=303_350_784,
)

# kaiko.ai's DINO / DINOv2 ViTs (timm checkpoints on the hub; TRIDENT's Kaiko loader): resize
# 224 + centre crop 224, bilinear, mean = std = 0.5, class token; 224 px tiles at 20x (their eva
# benchmark's field of view; training sampled several magnifications).
KAIKO_VITS16 = EncoderSpec(
    name="kaiko-vits16",
    description="kaiko.ai ViT-S/16 (DINO), 384-d class token",
    embed_dim=384, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id="1aurent/vit_small_patch16_224.kaiko_ai_towards_large_pathology_fms",
        filename="model.safetensors", sha256=None, license=KAIKO_LICENCE, citation=KAIKO_PAPER,
        mean=KAIKO_MEAN, std=KAIKO_STD, input_size=224,
    ),
    interpolation="bilinear", resize_px=224, crop_px=224,
    timm_name="vit_small_patch16_224",
    arch=dict(img_size=224, num_classes=0), parameters=21_665_664,
)
KAIKO_VITS8 = KAIKO_VITS16.replace(
    name="kaiko-vits8", description="kaiko.ai ViT-S/8 (DINO), 384-d class token",
    weights=dataclasses.replace(KAIKO_VITS16.weights,
                                hf_hub_id="1aurent/vit_small_patch8_224.kaiko_ai_towards_large_pathology_fms"),
    timm_name="vit_small_patch8_224", parameters=21_670_272,
)
KAIKO_VITB16 = KAIKO_VITS16.replace(
    name="kaiko-vitb16", description="kaiko.ai ViT-B/16 (DINO), 768-d class token", embed_dim=768,
    weights=dataclasses.replace(KAIKO_VITS16.weights,
                                hf_hub_id="1aurent/vit_base_patch16_224.kaiko_ai_towards_large_pathology_fms"),
    timm_name="vit_base_patch16_224", parameters=85_798_656,
)
KAIKO_VITB8 = KAIKO_VITS16.replace(
    name="kaiko-vitb8", description="kaiko.ai ViT-B/8 (DINO), 768-d class token", embed_dim=768,
    weights=dataclasses.replace(KAIKO_VITS16.weights,
                                hf_hub_id="1aurent/vit_base_patch8_224.kaiko_ai_towards_large_pathology_fms"),
    timm_name="vit_base_patch8_224", parameters=85_807_872,
)
# ViT-L/14 (DINOv2, 4 registers) built at its checkpoint's 518 px grid, fed 224 px inputs.
KAIKO_VITL14 = KAIKO_VITS16.replace(
    name="kaiko-vitl14", description="kaiko.ai ViT-L/14 (DINOv2, 4 registers), 1024-d class token", embed_dim=1024,
    weights=dataclasses.replace(
        KAIKO_VITS16.weights,
        hf_hub_id="1aurent/vit_large_patch14_reg4_dinov2.kaiko_ai_towards_large_pathology_fms"),
    timm_name="vit_large_patch14_reg4_dinov2", arch=dict(img_size=518, num_classes=0), parameters=304_370_688,
)

# Lunit DINO ViT-S/8 (Kang et al., CVPR 2023): timm vit_small_patch8_224, class token; 224 px at
# 20x; its own mean / std; resize 224 (bicubic, timm's data config for the hub checkpoint).
LUNIT_VITS8 = EncoderSpec(
    name="lunit-vits8",
    description="Lunit DINO ViT-S/8, 384-d class token",
    embed_dim=384, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id="1aurent/vit_small_patch8_224.lunit_dino", filename="model.safetensors", sha256=None,
        license="Lunit non-commercial terms (github.com/lunit-io/benchmark-ssl-pathology; see the model card)",
        citation=("Kang, M., Song, H., Park, S., Yoo, D. & Pereira, S. Benchmarking self-supervised learning on "
                  "diverse pathology datasets. CVPR (2023)."),
        mean=LUNIT_MEAN, std=LUNIT_STD, input_size=224,
    ),
    interpolation="bicubic", resize_px=224, crop_px=224,
    timm_name="vit_small_patch8_224",
    arch=dict(img_size=224, num_classes=0), parameters=21_670_272,
)

# GPFM (Ma et al.): DINOv2 ViT-L/14 at 224 px (eva's `hkust_gpfm`: timm vit_large_patch14_dinov2,
# init_values 1e-5, qkv bias), class token; the GitHub release `GPFM.pth` is a DINOv2 training
# payload (`dino_teacher`). 224 px at 20x.
GPFM = EncoderSpec(
    name="gpfm",
    description="GPFM (HKUST), distilled DINOv2 ViT-L/14, 1024-d class token; local weights (GitHub release)",
    embed_dim=1024, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id=None, filename="GPFM.pth", sha256=None,
        license=("the authors' release terms (github.com/birkhoffkiki/GPFM, releases/ckpt); download it and "
                 "give its path"),
        citation=("Ma, J. et al. Towards a generalizable pathology foundation model via unified knowledge "
                  "distillation. arXiv:2407.18449 (2024)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224,
    ),
    interpolation="bilinear", resize_px=224, crop_px=224,
    timm_name="vit_large_patch14_dinov2",
    arch=dict(img_size=224, patch_size=14, init_values=1e-5, qkv_bias=True, num_classes=0),
    adapt_state_dict=dino_teacher, parameters=303_227_904,
)

# CTransPath (Wang et al. 2022): Swin-T/4 (window 7, 224 px) with its convolutional stem
# (TRIDENT's `ctranspath`: timm 0.5's swin_tiny_patch4_window7_224 with `embed_layer=ConvStem`,
# head removed), global average of the last stage, 768-d; the CHIEF release of the weights
# (`CHIEF_CTransPath.pth`, under `model`). Tiles: CHIEF's 256 px at 10x, resized to 224
# (bilinear, ImageNet statistics, TRIDENT). 28M in the paper.
CTRANSPATH = EncoderSpec(
    name="ctranspath",
    description="CTransPath, Swin-T with a convolutional stem, 768-d; local weights",
    embed_dim=768, tile_spec=TileSpec(tile_px=256, mpp=1.0), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id=None, filename="CHIEF_CTransPath.pth", sha256=None,
        license=("GPL-3.0 code, academic non-commercial weights (published with CHIEF and in the gated "
                 "MahmoodLab/hest-bench dataset, fm_v1/ctranspath)"),
        citation=("Wang, X. et al. Transformer-based unsupervised contrastive learning for histopathological image "
                  "classification. Medical Image Analysis 81, 102559 (2022)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224,
    ),
    interpolation="bilinear", resize_px=224, crop_px=None,
    timm_name="swin_tiny_patch4_window7_224",
    arch=dict(img_size=224, num_classes=0, embed_layer="@pathkit_encoders._modules.ConvStem"),
    feature_key="num_features", checkpoint_wrappers=("model",), adapt_state_dict=swin_old_layout,
    parameters=27_520_038, load_on="cpu",
)

# PLIP and QuiltNet: fine-tuned OpenAI CLIP ViT-B/32 image towers (quick GELU, pre-norm), the
# class token after ln_post projected to the 512-d image-text space (`get_image_features`). PLIP's
# checkpoint is a Hugging Face CLIPModel, QuiltNet's an open_clip one. Neither states a
# magnification (Twitter / YouTube images); pathkit uses 224 px at 20x. OpenAI CLIP
# preprocessing: resize 224 (bicubic), centre crop 224.
PLIP = EncoderSpec(
    name="plip",
    description="PLIP (Huang et al.), CLIP ViT-B/32 image tower + projection, 512-d image-text space",
    embed_dim=512, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id="vinid/plip", filename="pytorch_model.bin", sha256=None,
        license="research use only (the model card's terms)",
        citation=("Huang, Z. et al. A visual-language foundation model for pathology image analysis using medical "
                  "Twitter. Nature Medicine 29, 2307-2316 (2023)."),
        mean=OPENAI_MEAN, std=OPENAI_STD, input_size=224,
    ),
    interpolation="bicubic", resize_px=224, crop_px=224,
    timm_name="vit_base_patch32_clip_quickgelu_224",
    arch=dict(img_size=224, num_classes=0),
    tower="@pathkit_encoders._modules.ClipVisionTower", pooler={"proj_dim": 512}, feature_key="proj_dim",
    adapt_state_dict=hf_clip_vision, parameters=87_849_216,
)
QUILT = PLIP.replace(
    name="quilt",
    description="QuiltNet (Ikezogwo et al.), CLIP ViT-B/32 image tower + projection, 512-d image-text space",
    weights=dataclasses.replace(
        PLIP.weights, hf_hub_id="wisdomik/QuiltNet-B-32", filename="open_clip_pytorch_model.bin",
        license="MIT (see the model card)",
        citation=("Ikezogwo, W. et al. Quilt-1M: One million image-text pairs for histopathology. NeurIPS "
                  "Datasets and Benchmarks (2023)."),
    ),
)

# The ImageNet ResNet-50 truncated after stage 3 (CLAM's and TRIDENT's baseline): conv1 ... layer3,
# spatial mean of the 1024-channel map; torchvision's IMAGENET1K_V1 weights (timm's
# resnet50.tv_in1k); 256 px tiles at 20x, resize 224 + centre crop 224, bilinear (TRIDENT).
RESNET50_TRUNC = EncoderSpec(
    name="resnet50-trunc",
    description="NOT a pathology model: ImageNet ResNet-50 cut after stage 3, 1024-d (CLAM baseline)",
    embed_dim=1024, tile_spec=TileSpec(tile_px=256, mpp=0.5), precision="fp32", is_pathology_model=False,
    weights=PretrainedWeights(
        hf_hub_id="timm/resnet50.tv_in1k", filename="model.safetensors", sha256=None,
        license="BSD-3-Clause (torchvision's ImageNet weights, resnet50-19c8e357.pth)",
        citation=("He, K., Zhang, X., Ren, S. & Sun, J. Deep residual learning for image recognition. CVPR (2016); "
                  "truncation as in Lu, M.Y. et al. Data-efficient and weakly supervised computational pathology on "
                  "whole-slide images. Nature Biomedical Engineering 5, 555-570 (2021)."),
        mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=224,
    ),
    interpolation="bilinear", resize_px=224, crop_px=224,
    timm_name="resnet50",
    arch=dict(features_only=True, out_indices=(3,)), pooling="feature-map-mean", feature_key="num_features",
    adapt_state_dict=torchvision_resnet_trunk, parameters=8_543_296,
)

# Hibou-B (HistAI): `hibou.build_model` of github.com/HistAI/hibou builds the DINOv2 ViT-B/14
# (`vit_base`: width 768, 12 layers, 12 heads, mlp_ratio 4) at 224 px with 4 register tokens,
# layer scale 1e-5, the fused SwiGLU feed-forward (hidden 2048 = 2/3 of 3072, packed 768 -> 4096)
# and qkv / proj / ffn biases; its forward is the normed class token. timm's
# vit_base_patch14_reg4_dinov2 with SwiGLUPacked + SiLU and mlp_ratio 2.66667 * 2 is that module
# (timm's GluMlp gates the first half, as DINOv2's SwiGLU does). Preprocessing: TRIDENT's Hibou
# loader (resize 224 bicubic, no crop, Hibou's mean / std); 224 px tiles at 20x (TRIDENT). The
# weights: the GitHub release (DINOv2 layout, `dinov2_native`); the README's Drive link names no
# file, so pathkit looks for "hibou-b.pth" and `--weights PATH` gives any other name.
HIBOU_MEAN = (0.7068, 0.5755, 0.722)
HIBOU_STD = (0.195, 0.2316, 0.1816)
HIBOU_B = EncoderSpec(
    name="hibou-b",
    description="Hibou-B (HistAI), DINOv2 ViT-B/14 with 4 registers, 768-d class token; local weights (GitHub release)",
    embed_dim=768, tile_spec=TileSpec(tile_px=224, mpp=0.5), precision="fp32",
    weights=PretrainedWeights(
        hf_hub_id=None, filename="hibou-b.pth", sha256=None,
        license=("Apache-2.0 (github.com/HistAI/hibou; the weights are linked from its README); download them "
                 "and give their path"),
        citation=("Nechaev, D., Pchelnikov, A. & Ivanova, E. Hibou: A family of foundational vision transformers "
                  "for pathology. arXiv:2406.05074 (2024)."),
        mean=HIBOU_MEAN, std=HIBOU_STD, input_size=224,
    ),
    interpolation="bicubic", resize_px=224, crop_px=None,
    timm_name="vit_base_patch14_reg4_dinov2",
    arch=dict(img_size=224, init_values=1e-5, mlp_ratio=2.66667 * 2, num_classes=0, **SWIGLU),
    adapt_state_dict=dinov2_native, parameters=85_739_520,
)

ROWS: Mapping[str, EncoderSpec] = MappingProxyType({spec.name: spec for spec in (
    UNI2H, CONCH15, HOPTIMUS1, VIRCHOW2, GIGAPATH, UNI, HOPTIMUS0, VIRCHOW, EAGLE, CONCH, TINY_VIT, TINY_VIT_WIDE,
    PHIKON, PHIKON_V2, KAIKO_VITS16, KAIKO_VITS8, KAIKO_VITB16, KAIKO_VITB8, KAIKO_VITL14, LUNIT_VITS8, GPFM,
    CTRANSPATH, PLIP, QUILT, RESNET50_TRUNC, HIBOU_B,
)})
