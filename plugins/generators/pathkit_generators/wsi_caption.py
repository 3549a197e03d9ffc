"""`wsi-caption`: WSI-Caption / MI-Gen (Chen et al., MICCAI 2024) report generator plugin.

The model (`_wsi_caption_net.WSICaptionModel`) is built lazily so that `pathkit --help` stays fast.
Defaults are PathBench's WSI-Caption configuration (d_model 512, 4 heads, FFN 512, 3 encoder
and 3 decoder layers, dropout 0.1, tile dropout 0.5; beam 3 with previous-token blocking and
`<unk>` suppressed); see docs/report-generation.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec
from pathkit_generators._text.generator import COMMON_HPARAMS, TRANSFORMER_HPARAMS, ReportGenerator, transformer_args


class WSICaption(ReportGenerator):
    """Multiple-instance report generator with position-aware modules over a square tile grid."""

    name = "wsi-caption"
    description = "WSI-Caption / MI-Gen: transformer + position-aware module encoder, transformer decoder"
    default_hparams = {
        **COMMON_HPARAMS,
        **TRANSFORMER_HPARAMS,
    }

    def make_model(self, spec: GeneratorSpec, tokenizer: Any, hp: Mapping[str, Any], decoding: Any) -> Any:
        from pathkit_generators._wsi_caption_net import WSICaptionModel

        return WSICaptionModel(
            tokenizer, decoding, feature_dim=spec.feature_dim, **transformer_args(hp))


@hookimpl
def register_generators(register):
    register(WSICaption)
