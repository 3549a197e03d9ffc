"""Virchow (v1, Paige): ViT-H/14 with SwiGLU, no registers; class token + mean patch token, 2560-d."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD
from pathkit_encoders.virchow2 import Virchow2Encoder


class VirchowEncoder(Virchow2Encoder):
    """Virchow v1: Virchow2's architecture, embedding and preprocessing without the 4 register
    tokens (paige-ai/Virchow model card: timm `vit_huge_patch14_224`, `init_values=1e-5`,
    `mlp_ratio=5.3375`, SwiGLUPacked + SiLU, `global_pool=""`; GOLDMARK's `_load_virchow` pools
    the class token with the mean of the patch tokens, no registers)."""

    name: ClassVar[str] = "virchow"
    description: ClassVar[str] = "Virchow v1 (Paige), 632M-parameter ViT-H/14, 2560-d (class + mean patch); gated"
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
    arch_kwargs: ClassVar[dict[str, Any]] = {k: v for k, v in Virchow2Encoder.arch_kwargs.items()
                                             if k != "reg_tokens"}


@hookimpl
def register_encoders(register):
    register(VirchowEncoder)
