"""Shared text machinery of the report generators: tokenizer, transformer decoder, beam search.

Modules (torch is imported only by the last four, so plugin modules stay light):

- `tokenizer`: `ReportTokenizer` (vocabulary from the train split only, dataset cleaning,
  truncation counting, JSON state saved beside checkpoints), `report_settings(dataset)`.
- `generator`: `ReportGenerator`, the Generator plugin base (`COMMON_HPARAMS` for decoding),
  whose `build` makes the tokenizer and the `BeamSearchConfig` and calls `make_model`.
- `attention`: `MultiHeadAttention` on `scaled_dot_product_attention` (with
  `chunked_attention` for long sequences in CPU training with dropout, where PyTorch has no
  fused kernel); `attention_implementation("naive")` switches to materialised attention.
- `decoder`: `TransformerDecoder` (teacher forcing, cached incremental `step`),
  `PreNormEncoderLayer`, `PositionalEncoding`, `xavier_init`.
- `beam`: `beam_search` (batched; groups, previous-token blocking, `<unk>` suppression,
  length penalty) and `exhaustive_search` (an exact reference for tests).
- `model`: `ReportModel`, the TaskModel base: collate, masked-NLL `training_step`, beam-search
  `predict`, `export_state`; subclasses implement `encode_slide`.

A new generator (BiGen, SCOUT, ...) subclasses `model.ReportModel` (implement `encode_slide`, or
`encode` for batch-level encoders) and `generator.ReportGenerator` (implement `make_model`).
"""

from pathkit_generators._text.generator import COMMON_HPARAMS, ReportGenerator
from pathkit_generators._text.tokenizer import ReportTokenizer, report_settings

__all__ = ["COMMON_HPARAMS", "ReportGenerator", "ReportTokenizer", "report_settings"]
