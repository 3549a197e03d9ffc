"""`bigen`: BiGen (Zhang et al., MICCAI 2025), the retrieval-augmented report generator plugin.

The model (`_bigen_net.BiGenModel`) and its knowledge bank (`_knowledge_bank`) are built lazily so
that `pathkit --help` stays fast. Defaults follow PathBench's BiGen configuration (d_model 512,
FFN 512, 4 heads, 3 decoder layers, dropout 0.1, tile dropout 0.5; retrieval: top 40% of tiles,
regions of 10, top-3 sentences; one shared encoder layer applied 3 times; beam 3); the text
embedder is the CONCH text tower when its files are on this machine, otherwise the offline
hashed n-gram embedder. See docs/report-generation.md ("BiGen").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec, PathkitError
from pathkit_generators._text.generator import COMMON_HPARAMS, TRANSFORMER_HPARAMS, ReportGenerator, transformer_args

BANK_DIR_ENV = "PATHKIT_BANK_DIR"


class BiGen(ReportGenerator):
    """Visual and text latents through one shared layer, with sentences retrieved from the train reports."""

    name = "bigen"
    description = "BiGen: knowledge-bank retrieval + bi-modal latent tokens with a shared layer, transformer decoder"
    default_hparams = {
        **COMMON_HPARAMS,
        **TRANSFORMER_HPARAMS,
        "iterations": 3,
        "top_fraction": 0.4,
        "region_size": 10,
        "top_k": 3,
        "text_embedder": "auto",  # "auto" | "conch" | "hashed-ngram"
        "text_embedder_weights": None,  # CONCH v1 checkpoint (else $PATHKIT_WEIGHTS_DIR/conch/, HF cache)
        "text_embedder_tokenizer": None,  # conch_byte_level_bpe_uncased.json (else beside the checkpoint)
        "embedding_dim": 512,  # the offline embedder's size (CONCH's is 512)
        "bank_dir": None,  # cache folder of banks by hash (else $PATHKIT_BANK_DIR, else only in the model)
        "query_space": "learned",  # "learned" | "identity"
        "align_weight": 1.0,
        "align_temperature": 0.07,
    }

    def make_model(self, spec: GeneratorSpec, tokenizer: Any, hp: Mapping[str, Any], decoding: Any) -> Any:
        from pathkit_generators._bigen_net import BiGenModel

        bank, bank_state = None, (spec.state or {}).get("knowledge_bank")
        if not bank_state:
            bank = self.knowledge_bank(spec, hp)
        try:
            return BiGenModel(
                tokenizer, decoding, feature_dim=spec.feature_dim, bank=bank, bank_state=bank_state,
                **transformer_args(hp), iterations=int(hp["iterations"]),
                top_fraction=float(hp["top_fraction"]), region_size=int(hp["region_size"]),
                top_k=int(hp["top_k"]), query_space=str(hp["query_space"]),
                align_weight=float(hp["align_weight"]), align_temperature=float(hp["align_temperature"]),
            )
        except ValueError as exc:
            raise PathkitError(f"generator {self.name!r}: {exc}") from exc

    @staticmethod
    def knowledge_bank(spec: GeneratorSpec, hp: Mapping[str, Any]) -> Any:
        """The knowledge bank of the train split's reports (cached by hash when a bank folder is set)."""
        import torch

        from pathkit_generators._knowledge_bank import build_knowledge_bank, resolve_text_embedder

        reports = [t for t in spec.train_targets if isinstance(t, str)]
        if len(reports) != len(spec.train_targets) or not reports:
            raise PathkitError("BiGen builds its knowledge bank from the train split's report texts; "
                               "every training target must be a report")
        embedder = resolve_text_embedder(
            str(hp["text_embedder"]), weights=hp.get("text_embedder_weights"),
            tokenizer=hp.get("text_embedder_tokenizer"), dim=int(hp["embedding_dim"]),
            device="cuda" if torch.cuda.is_available() else "cpu",
        )
        cache_dir = hp.get("bank_dir") or os.environ.get(BANK_DIR_ENV) or None
        return build_knowledge_bank(reports, embedder, cache_dir=cache_dir)


@hookimpl
def register_generators(register):
    register(BiGen)
