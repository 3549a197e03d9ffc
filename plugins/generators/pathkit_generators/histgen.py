"""`histgen`: HistGen (Guo et al., MICCAI 2024) report generator plugin.

The model (`_histgen_net.HistGenModel`) is built lazily so that `pathkit --help` stays fast.
Defaults are PathBench's HistGen configuration (d_vf 1024, d_model 512, 4 heads, FFN 512,
3 decoder layers, top-k 32, 512 prototypes, a 2048-slot memory, regions of 256; beam 3);
see docs/report-generation.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec
from pathkit_generators._text.generator import COMMON_HPARAMS, TRANSFORMER_HPARAMS, ReportGenerator, transformer_args


class HistGen(ReportGenerator):
    """Local-global hierarchical encoder with a cross-modal memory shared by image and text."""

    name = "histgen"
    description = "HistGen: cross-modal memory + region/slide hierarchical encoder, transformer decoder"
    default_hparams = {
        **COMMON_HPARAMS,
        "d_vf": 1024,
        **TRANSFORMER_HPARAMS,
        "topk": 32,
        "prototype_num": 512,
        "cmm_size": 2048,
        "region_size": 256,
    }

    def make_model(self, spec: GeneratorSpec, tokenizer: Any, hp: Mapping[str, Any], decoding: Any) -> Any:
        from pathkit_generators._histgen_net import HistGenModel

        return HistGenModel(
            tokenizer, decoding, feature_dim=spec.feature_dim, d_vf=int(hp["d_vf"]), **transformer_args(hp),
            topk=int(hp["topk"]),
            prototype_num=int(hp["prototype_num"]), cmm_size=int(hp["cmm_size"]),
            region_size=int(hp["region_size"]),
        )


@hookimpl
def register_generators(register):
    register(HistGen)
