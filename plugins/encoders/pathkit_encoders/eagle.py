"""EAGLE (Campanella et al.): Prov-GigaPath's tile encoder fine-tuned for EGFR in lung adenocarcinoma.

GOLDMARK calls it `gigapath_ft` (paper Table 2: "EAGLE (a fine-tuned version of prov-gigapath)").
The architecture is Prov-GigaPath's (ViT-g/16, 40 layers, 1536-d class token) and so is the
preprocessing (resize 256 bicubic, centre crop 224). The weights are not on a public hub: they
are read from a local file only (`--weights`, or `$PATHKIT_WEIGHTS_DIR/eagle/`). GOLDMARK's
loader (`_load_gigapath_ft`) reads a training payload whose tile model sits under `tile_model`,
with DataParallel's `module.` prefix on its keys; both are unwrapped here, and the remaining
keys must fit the architecture exactly (GOLDMARK loads with `strict=False`; pathkit refuses a
checkpoint with missing or unexpected keys).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights
from pathkit_encoders._vit import IMAGENET_MEAN, IMAGENET_STD
from pathkit_encoders.gigapath import GigaPathEncoder

if TYPE_CHECKING:
    import torch
    from torch import nn


class EagleEncoder(GigaPathEncoder):
    """EAGLE tile encoder: the exact Prov-GigaPath architecture with fine-tuned weights."""

    name: ClassVar[str] = "eagle"
    description: ClassVar[str] = (
        "EAGLE (MSK), Prov-GigaPath ViT-g/16 fine-tuned for LUAD EGFR, 1.1B parameters, 1536-d; local weights only"
    )
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id=None,
        filename="gigapath_ft_checkpoint.pth",
        sha256=None,
        license="not publicly released: the weights are the authors' (request them from MSK); the backbone is "
                "Prov-GigaPath (Apache-2.0 with its model card's conditions)",
        citation=(
            "Campanella, G. et al. Real-world deployment of a fine-tuned pathology foundation model for lung "
            "cancer biomarker detection. arXiv:2408.08862 (2024)."
        ),
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        input_size=224,
        gated=False,  # not on a hub at all: see the licence text
    )
    # GOLDMARK's training payload: {"tile_model": state dict, ...numpy training metadata}
    checkpoint_wrappers: ClassVar[tuple[str, ...]] = ("tile_model",)

    def adapt_state_dict(
        self, state_dict: dict[str, torch.Tensor], backbone: nn.Module
    ) -> dict[str, torch.Tensor]:
        """DataParallel's `module.` prefix removed (GOLDMARK's `_fix_state_dict`)."""
        if state_dict and all(k.startswith("module.") for k in state_dict):
            return {k[len("module."):]: v for k, v in state_dict.items()}
        return state_dict


@hookimpl
def register_encoders(register):
    register(EagleEncoder)
