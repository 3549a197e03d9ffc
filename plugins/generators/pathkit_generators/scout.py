"""`scout`: SCOUT (Singh et al., 2026), the concept-conditioned multimodal report generator plugin.

The model (`_scout_net.ScoutModel`) is built lazily so that `pathkit --help` stays fast. Defaults
follow one PathBench revision entirely: `scout_config.yaml` of surykntsingh/PathBench main at
a110a98 (last changed in a199389), with the values its code reads from it: d_model 768, FFN 768,
4 heads, 3 layers, dropout 0.2 in the transformer and the adapters (`dropout_mlp`), tile dropout
0.4 (`drop_prob_lm`), gate entropy weight 0.07 (`g_lambda`), beam 6 in groups of 3 with
temperature 0.7 from the second step, every tile of the slide (its SCOUT loader cuts none);
FiLM hidden 1024, dropout 0.2, alpha 0.4 (the code's defaults). Slide and concept inputs come from providers
chosen by name (`slide_provider`, `concept_provider`; `_scout_providers`); the offline defaults
compute them from the tile features. See docs/report-generation.md ("SCOUT").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec, PathkitError
from pathkit_generators._text.generator import COMMON_HPARAMS, ReportGenerator, transformer_args

# The slide and concept providers a configuration may name; `_scout_providers` holds their
# factories under the same names. Nothing outside these names is ever imported.
SLIDE_PROVIDERS = ("mean", "attention")
CONCEPT_PROVIDERS = ("prototypes", "file")


class Scout(ReportGenerator):
    """Tile stream FiLM-conditioned on slide and concept vectors; decoder gates three memories per head."""

    name = "scout"
    description = "SCOUT: tile/slide/concept adapters, FiLM-conditioned encoder, per-head gated three-memory decoder"
    default_hparams = {
        **COMMON_HPARAMS,
        "beam_size": 6,
        "group_size": 3,
        "d_model": 768,
        "d_ff": 768,
        "num_heads": 4,
        "num_layers": 3,
        "dropout": 0.2,
        "adapter_dropout": 0.2,
        "drop_prob_lm": 0.4,
        "film_hidden": 1024,
        "film_dropout": 0.2,
        "film_alpha": 0.4,
        "gate_entropy_weight": 0.07,
        "slide_provider": "mean",  # "mean" | "attention" (registered names only)
        "concept_provider": "prototypes",  # "prototypes" | "file" (registered names only)
        "num_concepts": 66,  # prototypes (PathBench's GECKO concept count)
        "concept_file": None,  # safetensors with `concepts` (C x D) for concept_provider="file"
    }
    # PathBench's SCOUT data module reads every tile (its other models keep the first 10,000);
    # the pipeline's bag cut (RunSpec.max_tiles="auto") defers to this.
    default_max_tiles = None

    def hparams(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The hyperparameters, with the provider names checked before any work is done."""
        hp = super().hparams(overrides)
        for key, known in (("slide_provider", SLIDE_PROVIDERS), ("concept_provider", CONCEPT_PROVIDERS)):
            if hp[key] not in known:
                raise PathkitError(f"generator {self.name!r}: {key} {hp[key]!r} is not a registered provider; "
                                   f"choose one of {', '.join(known)}")
        return hp

    def make_model(self, spec: GeneratorSpec, tokenizer: Any, hp: Mapping[str, Any], decoding: Any) -> Any:
        from pathkit_generators._scout_net import ScoutModel

        try:
            return ScoutModel(
                tokenizer, decoding, feature_dim=spec.feature_dim, **transformer_args(hp),
                adapter_dropout=float(hp["adapter_dropout"]), film_hidden=int(hp["film_hidden"]),
                film_dropout=float(hp["film_dropout"]), film_alpha=float(hp["film_alpha"]),
                gate_entropy_weight=float(hp["gate_entropy_weight"]),
                slide_provider=str(hp["slide_provider"]), concept_provider=str(hp["concept_provider"]),
                provider_hparams=hp, provider_states=(spec.state or {}).get("providers"),
            )
        except ValueError as exc:
            raise PathkitError(f"generator {self.name!r}: {exc}") from exc


@hookimpl
def register_generators(register):
    register(Scout)
