"""BiGen's knowledge bank: sentences of the train split's reports, embedded by a pluggable text embedder.

- `split_sentences`: a report cut at line breaks and at sentence-ending punctuation followed by
  white space (decimals such as "6.5" and common abbreviations are kept whole); fragments with
  no word of two letters (list markers such as "A.") are dropped.
- Text embedders (`resolve_text_embedder`): `"conch"`, the CONCH v1 text tower
  (`_conch_text`), used by `"auto"` when its checkpoint and tokenizer are on this machine;
  otherwise `"hashed-ngram"`, a deterministic offline embedder: word unigrams and bigrams and
  character trigrams hashed into `dim` signed buckets, sublinear term frequency, inverse document
  frequency per bucket fitted on the bank's own sentences (train split only), L2-normalised.
  It measures lexical overlap, not meaning; docs/report-generation.md ("BiGen") says so.
- `KnowledgeBank`: the sorted unique sentences, their embeddings and a content hash over the
  embedder's identity and the sentences, so a changed train split gives a new hash and the bank
  is rebuilt. `build_knowledge_bank(..., cache_dir=...)` keeps banks as
  `bigen-bank-<hash>.safetensors` (embeddings as a tensor; hash, embedder and sentences in the
  metadata) and reuses a file only when its hash matches.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pathkit_core.contracts import PathkitError
from pathkit_generators._hashing import stable_hash as _stable_hash
from pathkit_generators._tensor_file import read_tensor_file, write_tensor_file

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

BANK_FORMAT = "pathkit-bigen-knowledge-bank/1"
TEXT_EMBEDDERS = ("auto", "conch", "hashed-ngram")

_ABBREVIATIONS = frozenset({"e.g", "i.e", "vs", "approx", "no", "nos", "dr", "fig", "cf", "st", "etc", "incl"})
_LINE_BREAK = re.compile(r"\s*\n\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z0-9]+")
_HAS_WORD = re.compile(r"[A-Za-z]{2,}")
_SPACES = re.compile(r"\s+")


def split_sentences(report: str) -> list[str]:
    """The sentences of one report, white space collapsed, in order (duplicates kept)."""
    sentences: list[str] = []
    for line in _LINE_BREAK.split(report.strip()):
        pieces = _SENTENCE_END.split(line)
        current = ""
        for piece in pieces:
            current = f"{current} {piece}" if current else piece
            last_word = current.rstrip(".!?").rsplit(maxsplit=1)[-1].lower() if current.strip(".!? ") else ""
            if current.endswith(".") and last_word in _ABBREVIATIONS:
                continue  # "approx. 3 cm": the period ends an abbreviation, not the sentence
            sentences.append(current)
            current = ""
        if current:
            sentences.append(current)
    cleaned = (_SPACES.sub(" ", s).strip() for s in sentences)
    return [s for s in cleaned if _HAS_WORD.search(s)]


def bank_sentences(reports: Iterable[str]) -> list[str]:
    """Sorted unique sentences of `reports` (sorted so the bank does not depend on case order)."""
    unique: set[str] = set()
    for report in reports:
        unique.update(split_sentences(report))
    return sorted(unique)


class TextEmbedder(Protocol):
    """What the knowledge bank needs from a sentence embedder."""

    name: str
    dim: int

    def identity(self) -> dict[str, Any]: ...

    def embed(self, sentences: Sequence[str]) -> torch.Tensor: ...


class HashedNgramEmbedder:
    """Offline TF-IDF embedding of hashed word 1-2-grams and character trigrams (deterministic)."""

    name = "hashed-ngram"
    version = 1
    char_weight = 0.5  # character trigrams back up word matches (plurals, OCR noise) without dominating

    def __init__(self, dim: int = 512) -> None:
        if dim < 8:
            raise PathkitError(f"the hashed n-gram embedder needs dim >= 8, not {dim}")
        self.dim = dim
        self.idf: list[float] | None = None

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "dim": self.dim, "version": self.version, "char_weight": self.char_weight}

    def grams(self, sentence: str) -> Counter[str]:
        words = _WORD.findall(sentence.lower())
        grams: Counter[str] = Counter(f"w:{w}" for w in words)
        grams.update(f"b:{a} {b}" for a, b in zip(words, words[1:], strict=False))
        for w in words:
            padded = f"#{w}#"
            grams.update(f"c:{padded[i:i + 3]}" for i in range(len(padded) - 2))
        return grams

    def _buckets(self, sentence: str) -> dict[int, float]:
        """Signed, weighted (1 + log tf) bucket values of one sentence."""
        values: dict[int, float] = {}
        for gram, tf in self.grams(sentence).items():
            h = _stable_hash(gram)
            index, sign = h % self.dim, (1.0 if (h >> 63) & 1 else -1.0)
            weight = (1.0 + math.log(tf)) * (self.char_weight if gram.startswith("c:") else 1.0)
            values[index] = values.get(index, 0.0) + sign * weight
        return values

    def _term_matrix(self, sentences: Sequence[str]) -> Any:
        """(S, dim) float32 numpy array of the signed, weighted bucket values."""
        import numpy as np

        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for row, sentence in enumerate(sentences):
            buckets = self._buckets(sentence)
            out[row, list(buckets)] = list(buckets.values())
        return out

    def _set_idf(self, terms: Any) -> None:
        """Smoothed inverse document frequency per bucket, ln((1 + S) / (1 + df)) + 1."""
        df = (terms != 0).sum(0)
        n = terms.shape[0]
        self.idf = [math.log((1 + n) / (1 + int(d))) + 1.0 for d in df]

    def _weighted(self, terms: Any) -> torch.Tensor:
        import torch

        out = torch.from_numpy(terms) * torch.tensor(self.idf, dtype=torch.float32)
        return torch.nn.functional.normalize(out, dim=-1)

    def fit(self, sentences: Sequence[str]) -> HashedNgramEmbedder:
        self._set_idf(self._term_matrix(sentences))
        return self

    def fit_embed(self, sentences: Sequence[str]) -> torch.Tensor:
        """`fit` then `embed` on the same sentences, hashing each sentence once."""
        terms = self._term_matrix(sentences)
        self._set_idf(terms)
        return self._weighted(terms)

    def embed(self, sentences: Sequence[str]) -> torch.Tensor:
        if self.idf is None:
            raise PathkitError("the hashed n-gram embedder must be fitted on the bank's sentences first")
        return self._weighted(self._term_matrix(sentences))


def resolve_text_embedder(name: str, *, weights: str | None = None, tokenizer: str | None = None,
                          dim: int = 512, device: str = "cpu") -> TextEmbedder:
    """The embedder called `name`; "auto" is CONCH when its files are here, else hashed n-grams."""
    if name not in TEXT_EMBEDDERS:
        raise PathkitError(f"unknown text embedder {name!r}; known: {', '.join(TEXT_EMBEDDERS)}")
    if name == "hashed-ngram":
        return HashedNgramEmbedder(dim)
    from pathkit_generators._conch_text import ConchTextEmbedder, find_conch_text

    weights_path, tokenizer_path, looked = find_conch_text(weights, tokenizer)
    if weights_path is not None and tokenizer_path is not None:
        log.info("BiGen knowledge bank: CONCH text tower from %s", weights_path)
        return ConchTextEmbedder(weights_path, tokenizer_path, device=device)
    if name == "conch":
        places = "\n  - ".join(looked)
        raise PathkitError(
            "text embedder 'conch' needs the CONCH v1 checkpoint (pytorch_model.bin, with its text tower) "
            f"and its tokenizer file conch_byte_level_bpe_uncased.json. Looked in:\n  - {places}\n"
            "Put both in $PATHKIT_WEIGHTS_DIR/conch/ (access to MahmoodLab/CONCH is granted by its authors), "
            "or use text_embedder='hashed-ngram'."
        )
    log.info("BiGen knowledge bank: no CONCH text tower on this machine; using the offline hashed n-gram "
             "embedder (docs/report-generation.md, BiGen)")
    return HashedNgramEmbedder(dim)


@dataclass
class KnowledgeBank:
    """Sentences (sorted, unique), their (S, E) embeddings, the embedder identity and the content hash."""

    sentences: list[str]
    embeddings: torch.Tensor
    embedder: dict[str, Any]
    hash: str

    def __post_init__(self) -> None:
        self._index = {s: i for i, s in enumerate(self.sentences)}

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def __len__(self) -> int:
        return len(self.sentences)

    def indices_of(self, report: str) -> list[int]:
        """Bank rows of the sentences of `report` that the bank holds."""
        return sorted({self._index[s] for s in split_sentences(report) if s in self._index})

    def state(self) -> dict[str, Any]:
        """JSON-able description saved beside checkpoints (the tensor lives in the model's weights)."""
        return {"format": BANK_FORMAT, "hash": self.hash, "size": len(self), "dim": self.dim,
                "embedder": self.embedder, "sentences": self.sentences}

    # ------------------------------------------------------------------ files

    def save(self, path: Path) -> Path:
        metadata = {"format": BANK_FORMAT, "hash": self.hash, "embedder": json.dumps(self.embedder, sort_keys=True),
                    "sentences": json.dumps(self.sentences)}
        return write_tensor_file(path, {"embeddings": self.embeddings.detach().float().cpu().contiguous()}, metadata)

    @classmethod
    def load(cls, path: Path) -> KnowledgeBank:
        arrays, fields = read_tensor_file(path, "knowledge bank", BANK_FORMAT, ["embeddings"],
                                          ["sentences", "embedder", "hash"], json_fields=["sentences", "embedder"])
        embeddings, sentences, embedder = arrays["embeddings"], fields["sentences"], fields["embedder"]
        if embeddings.ndim != 2 or embeddings.shape[0] != len(sentences):
            raise PathkitError(f"knowledge bank {path}: {tuple(embeddings.shape)} embeddings for "
                               f"{len(sentences)} sentences")
        if bank_content_hash(embedder, sentences) != fields["hash"]:
            raise PathkitError(f"knowledge bank {path}: its hash does not match its sentences and embedder")
        return cls(sentences, embeddings, embedder, fields["hash"])


def bank_content_hash(embedder: Mapping[str, Any], sentences: Sequence[str]) -> str:
    from pathkit_core.workspace import content_hash

    return content_hash({"format": BANK_FORMAT, "embedder": dict(embedder), "sentences": list(sentences)}, length=32)


def build_knowledge_bank(reports: Iterable[str], embedder: TextEmbedder, *,
                         cache_dir: str | Path | None = None) -> KnowledgeBank:
    """The bank of the train split's `reports`, reused from `cache_dir` when its hash matches."""
    sentences = bank_sentences(reports)
    if not sentences:
        raise PathkitError("the train split's reports hold no sentence to build BiGen's knowledge bank from")
    identity = embedder.identity()
    bank_hash = bank_content_hash(identity, sentences)
    path = Path(cache_dir).expanduser() / f"bigen-bank-{bank_hash}.safetensors" if cache_dir else None
    if path is not None and path.is_file():
        bank = KnowledgeBank.load(path)
        log.info("BiGen knowledge bank %s reused from %s (%d sentences)", bank_hash, path, len(bank))
        return bank
    if isinstance(embedder, HashedNgramEmbedder):
        embeddings = embedder.fit_embed(sentences)  # the IDF comes from the bank's own sentences
    else:
        embeddings = embedder.embed(sentences).float()
    if embeddings.shape != (len(sentences), embedder.dim):
        raise PathkitError(f"text embedder {embedder.name!r} returned {tuple(embeddings.shape)} for "
                           f"{len(sentences)} sentences of dim {embedder.dim}")
    bank = KnowledgeBank(sentences, embeddings, identity, bank_hash)
    if path is not None:
        bank.save(path)
        log.info("BiGen knowledge bank %s built (%d sentences) and saved to %s", bank_hash, len(bank), path)
    return bank
