"""A tiny word-level tokenizer with CONCH's special tokens, saved under CONCH's tokenizer file name."""

from __future__ import annotations

from pathlib import Path


def write_conch_tokenizer(folder: Path, words: list[str], unk_token: str) -> Path:
    """`folder/conch_byte_level_bpe_uncased.json`: token i is `words[i]` (lower-cased, split at white
    space), each text wrapped in <start_of_text> (id 1) and <end_of_text> (id 2) as CONCH's is."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=unk_token))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="<start_of_text> $A <end_of_text>", special_tokens=[("<start_of_text>", 1), ("<end_of_text>", 2)])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "conch_byte_level_bpe_uncased.json"
    tok.save(str(path))
    return path
