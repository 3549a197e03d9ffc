"""Report tokenizer: a word-level vocabulary built from the train split only, saved with checkpoints.

Tokens follow PathBench's tokenizer (docs/report-generation.md, "Tokenizer"): the cleaned text is
split into runs of whitespace, runs of word characters, and single punctuation marks, so that
joining the tokens gives the text back exactly (REG reports keep their line breaks). Differences
from PathBench, on purpose:

- the vocabulary comes from the train split only (PathBench reads every split: a test leak);
- `<pad>`, `<bos>`, `<eos>` and `<unk>` are distinct ids 0-3 (PathBench uses 0 for pad, start
  and end alike);
- a report longer than `max_tokens` (start and end included) keeps its end token after the cut,
  and every cut is counted (`truncated`) and logged.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_tasks.report.text import CLEANING_STYLES, clean_report

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
TOKEN_PATTERN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
STATE_VERSION = 1

# Per-dataset report settings when the dataset plugin declares none (paper Table 1 datasets:
# PathBench's max_seq_length per dataset; docs/report-generation.md, "Shared decoder and beam search").
DEFAULT_MAX_TOKENS = 320
KNOWN_REPORT_SETTINGS: dict[str, tuple[str, int]] = {
    "reg2025": ("none", 320),
    "tcga-pathtext": ("pathbench", 600),
    "histai": ("pathbench", 600),
}


@dataclass(frozen=True)
class Encoded:
    """Token ids of one report (with start and end) and whether it was cut to fit."""

    ids: list[int]
    truncated: bool


def split_tokens(text: str) -> list[str]:
    """Whitespace runs, word runs and punctuation marks; `"".join(split_tokens(t)) == t`."""
    return TOKEN_PATTERN.findall(text)


def report_settings(dataset: str | None, cleaning: str | None = None,
                    max_tokens: int | None = None) -> tuple[str, int]:
    """(cleaning style, max tokens) for a dataset: those it declares (`Dataset.report_cleaning`
    and `max_report_tokens`, handed over in the `GeneratorSpec`), else the PathBench values of the
    paper's datasets by name, else no cleaning and 320 tokens."""
    known = KNOWN_REPORT_SETTINGS.get(dataset or "")
    if cleaning is None and known:
        cleaning = known[0]
    if max_tokens is None and known:
        max_tokens = known[1]
    return cleaning or "none", int(max_tokens or DEFAULT_MAX_TOKENS)


class ReportTokenizer:
    """Maps report text to token ids and back.

    Build it with `ReportTokenizer.build(train_reports, ...)`; persist it with `state_dict()`
    and `ReportTokenizer.from_state(...)` (a JSON-able dict saved beside the checkpoint).
    """

    def __init__(self, vocab: Sequence[str], *, cleaning: str = "none",
                 max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        if tuple(vocab[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise PathkitError(f"a report vocabulary must start with {SPECIAL_TOKENS}")
        if cleaning not in CLEANING_STYLES:
            raise PathkitError(f"unknown report cleaning {cleaning!r}; known: {', '.join(CLEANING_STYLES)}")
        if max_tokens < 3:
            raise PathkitError(f"max_tokens must be at least 3 (start, one token, end), not {max_tokens}")
        self.vocab: list[str] = list(vocab)
        self.token_to_id: dict[str, int] = {t: i for i, t in enumerate(self.vocab)}
        if len(self.token_to_id) != len(self.vocab):
            raise PathkitError("a report vocabulary has duplicate tokens")
        self.cleaning = cleaning
        self.max_tokens = int(max_tokens)
        self.truncated = 0  # reports cut to max_tokens since the tokenizer was made
        self.encoded = 0

    # ------------------------------------------------------------------ construction

    @classmethod
    def build(cls, reports: Iterable[str], *, cleaning: str = "none",
              max_tokens: int = DEFAULT_MAX_TOKENS, min_count: int = 1) -> ReportTokenizer:
        """A tokenizer whose vocabulary is every token seen at least `min_count` times in
        `reports` (give the train split's reports only), sorted, after the special tokens."""
        counts: Counter[str] = Counter()
        n = 0
        for report in reports:
            counts.update(split_tokens(clean_report(str(report), cleaning)))
            n += 1
        if n == 0:
            raise PathkitError("cannot build a report vocabulary from zero training reports")
        words = sorted(t for t, c in counts.items() if c >= min_count and t not in SPECIAL_TOKENS)
        return cls([*SPECIAL_TOKENS, *words], cleaning=cleaning, max_tokens=max_tokens)

    def state_dict(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "vocab": list(self.vocab), "cleaning": self.cleaning,
                "max_tokens": self.max_tokens}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> ReportTokenizer:
        try:
            version = int(state.get("version", 0))
            vocab = list(state["vocab"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PathkitError(f"saved tokenizer state is unreadable ({exc})") from exc
        if version != STATE_VERSION:
            raise PathkitError(f"saved tokenizer state has version {version}; this pathkit reads {STATE_VERSION}")
        return cls(vocab, cleaning=state.get("cleaning", "none"),
                   max_tokens=int(state.get("max_tokens", DEFAULT_MAX_TOKENS)))

    # ------------------------------------------------------------------ encoding

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def tokens(self, text: str) -> list[str]:
        return split_tokens(clean_report(str(text), self.cleaning))

    def encode(self, text: str) -> Encoded:
        """`<bos> ... <eos>` ids; unknown tokens become `<unk>`; cut to `max_tokens` keeping `<eos>`."""
        ids = [self.token_to_id.get(t, UNK_ID) for t in self.tokens(text)]
        limit = self.max_tokens - 2
        cut = len(ids) > limit
        if cut:
            ids = ids[:limit]
            self.truncated += 1
        self.encoded += 1
        return Encoded([BOS_ID, *ids, EOS_ID], cut)

    def encode_batch(self, texts: Sequence[str], *, log_truncation: bool = True) -> torch.Tensor:
        """A (B, L) LongTensor of `<pad>`-padded id rows (L: the longest row)."""
        import torch

        rows = [self.encode(t) for t in texts]
        cut = sum(r.truncated for r in rows)
        if cut and log_truncation:
            log.warning("%d of %d report(s) longer than %d tokens were truncated", cut, len(rows),
                        self.max_tokens)
        width = max(len(r.ids) for r in rows)
        out = torch.full((len(rows), width), PAD_ID, dtype=torch.long)
        for i, r in enumerate(rows):
            out[i, : len(r.ids)] = torch.tensor(r.ids, dtype=torch.long)
        return out

    def count_truncated(self, texts: Iterable[str]) -> tuple[int, int]:
        """(reports longer than max_tokens, reports) without touching the running counters."""
        total = cut = 0
        for text in texts:
            total += 1
            cut += len(self.tokens(text)) > self.max_tokens - 2
        return cut, total

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, stopping at `<eos>` and skipping `<pad>`/`<bos>`."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS_ID:
                break
            if i in (PAD_ID, BOS_ID):
                continue
            out.append(self.vocab[i] if 0 <= i < len(self.vocab) else UNK)
        return "".join(out)
