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
from pathkit_encoders._adapters import COCA_NOT_CONTRAST, COCA_NOT_VISION, coca_vision_tower, strip_data_parallel

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
    random_init_seed=0,
)

# A second demo encoder (width 96, seed 1) with tiny-vit's tile spec, so that one tiling serves
# both and the encoder x generator matrix can be exercised on the demo in minutes.
TINY_VIT_WIDE = TINY_VIT.replace(
    name="tiny-vit-wide",
    description="NOT a pathology model: wider tiny ViT with fixed random weights (matrix demo)",
    embed_dim=96, arch={**TINY_VIT.arch, "embed_dim": 96, "num_heads": 3}, random_init_seed=1,
)

ROWS: Mapping[str, EncoderSpec] = MappingProxyType({spec.name: spec for spec in (
    UNI2H, CONCH15, HOPTIMUS1, VIRCHOW2, GIGAPATH, UNI, HOPTIMUS0, VIRCHOW, EAGLE, CONCH, TINY_VIT, TINY_VIT_WIDE,
)})
