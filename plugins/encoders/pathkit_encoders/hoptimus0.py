"""H-optimus-0 (Bioptimus): DINOv2 ViT-g/14 with 4 registers, 1536-d class token, fp16."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PretrainedWeights
from pathkit_encoders.hoptimus1 import HOptimus1Encoder


class HOptimus0Encoder(HOptimus1Encoder):
    """H-optimus-0: H-optimus-1's architecture, tile spec and preprocessing (TRIDENT,
    bioptimus/H-optimus-0); it differs in its checkpoint, licence and fixed input size."""

    name: ClassVar[str] = "hoptimus0"
    description: ClassVar[str] = "H-optimus-0 (Bioptimus), 1.1B-parameter ViT-g/14, 1536-d"
    weights: ClassVar[PretrainedWeights] = dataclasses.replace(
        HOptimus1Encoder.weights,
        hf_hub_id="bioptimus/H-optimus-0",
        license="Apache-2.0 (see the model card)",
        citation="Saillard, C. et al. H-optimus-0 (2024). https://github.com/bioptimus/releases",
        gated=False,
    )


@hookimpl
def register_encoders(register):
    register(HOptimus0Encoder)
