"""The Generator plugin base of the report generators (light: torch is imported only in `build`).

A concrete generator subclasses `ReportGenerator`, sets `name`, `default_hparams` (including
`COMMON_HPARAMS`) and implements `make_model`. `build` makes the tokenizer from the train split's
reports only (or restores the saved one when a checkpoint is rebuilt) and the beam-search
settings, then calls `make_model`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError
from pathkit_tasks import TASK_REPORT

if TYPE_CHECKING:
    from pathkit_generators._text.beam import BeamSearchConfig
    from pathkit_generators._text.model import ReportModel
    from pathkit_generators._text.tokenizer import ReportTokenizer

log = logging.getLogger(__name__)

# Decoding and vocabulary options every report generator accepts (PathBench defaults).
COMMON_HPARAMS: dict[str, Any] = {
    "beam_size": 3,
    "group_size": 1,
    "diversity_lambda": 0.5,
    "block_previous": True,
    "suppress_unk": True,
    "length_penalty": "",
    # PathBench's configs pass temperature 0.7, which its beam search applies to the model's
    # log-probabilities after every step but the first (docs/report-generation.md)
    "temperature": 0.7,
    "temperature_from_step": 1,
    "pick": "first-group",
    "max_tokens": None,  # None: the dataset's (REG 320, TCGA 600, HistAI 600)
    "cleaning": None,  # None: the dataset's ("none" for REG, "pathbench" for TCGA/HistAI)
    "min_count": 1,  # PathBench's vocabulary threshold
}

# The encoder-decoder transformer's sizes every report generator here builds on (R2Gen's, which
# HistGen, WSI-Caption and BiGen keep; SCOUT overrides some): docs/report-generation.md.
TRANSFORMER_HPARAMS: dict[str, Any] = {
    "d_model": 512,
    "d_ff": 512,
    "num_heads": 4,
    "num_layers": 3,
    "dropout": 0.1,
    "drop_prob_lm": 0.5,
}


def transformer_args(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The model keyword arguments of `TRANSFORMER_HPARAMS`, typed, from the resolved hparams `hp`."""
    return {"d_model": int(hp["d_model"]), "d_ff": int(hp["d_ff"]), "num_heads": int(hp["num_heads"]),
            "num_layers": int(hp["num_layers"]), "dropout": float(hp["dropout"]),
            "drop_prob_lm": float(hp["drop_prob_lm"])}


class ReportGenerator(Generator):
    """Generator plugin base for report models: tokenizer from the train split, then `make_model`."""

    tasks: ClassVar[tuple[str, ...]] = (TASK_REPORT,)
    # validation/test decoding batches cases (identical predictions, fewer model calls); the
    # training batch stays PathBench's 1
    default_train: ClassVar[dict[str, Any]] = {"eval_batch_size": 8}

    def make_model(self, spec: GeneratorSpec, tokenizer: ReportTokenizer, hp: Mapping[str, Any],
                   decoding: BeamSearchConfig) -> ReportModel:
        raise NotImplementedError

    def build(self, spec: GeneratorSpec) -> ReportModel:
        from pathkit_generators._text.beam import BeamSearchConfig

        if spec.task != TASK_REPORT:
            raise PathkitError(f"generator {self.name!r} generates reports, not {spec.task!r} targets")
        if spec.feature_dim <= 0:
            raise PathkitError(f"generator {self.name!r} needs the tile feature dimension (got {spec.feature_dim})")
        hp = self.hparams(spec.hparams)
        tokenizer = self.tokenizer_for(spec, hp)
        try:
            decoding = BeamSearchConfig(
                beam_size=int(hp["beam_size"]), group_size=int(hp["group_size"]),
                diversity_lambda=float(hp["diversity_lambda"]), block_previous=bool(hp["block_previous"]),
                suppress_unk=bool(hp["suppress_unk"]), length_penalty=str(hp["length_penalty"] or ""),
                max_len=tokenizer.max_tokens - 1, pick=str(hp["pick"]),
                temperature=float(hp["temperature"]), temperature_from_step=int(hp["temperature_from_step"]),
            )
        except ValueError as exc:
            raise PathkitError(f"generator {self.name!r}: {exc}") from exc
        return self.make_model(spec, tokenizer, hp, decoding)

    @staticmethod
    def tokenizer_for(spec: GeneratorSpec, hp: Mapping[str, Any]) -> ReportTokenizer:
        """The saved tokenizer when rebuilding a checkpoint, else one built from the train reports."""
        from pathkit_generators._text.tokenizer import ReportTokenizer, report_settings

        saved = (spec.state or {}).get("tokenizer")
        if saved:
            return ReportTokenizer.from_state(saved)
        reports = [t for t in spec.train_targets if isinstance(t, str)]
        if len(reports) != len(spec.train_targets):
            raise PathkitError("every training target of a report generator must be report text")
        cleaning, max_tokens = report_settings(spec.dataset, spec.report_cleaning, spec.max_report_tokens)
        if hp.get("cleaning") is not None:
            cleaning = str(hp["cleaning"])
        if hp.get("max_tokens") is not None:
            max_tokens = int(hp["max_tokens"])
        tokenizer = ReportTokenizer.build(reports, cleaning=cleaning, max_tokens=max_tokens,
                                          min_count=int(hp.get("min_count", 1)))
        cut, total = tokenizer.count_truncated(reports)
        if cut:
            log.warning("%d of %d training reports are longer than %d tokens and are truncated "
                        "(the end token is kept)", cut, total, tokenizer.max_tokens)
        return tokenizer
