"""Hashed word tokens for the trainable readers: no vocabulary to build, store or version.

A text becomes the ids of its lower-cased word unigrams and bigrams, each hashed (blake2b) into
`buckets` slots (id 0 is padding); the readers learn one embedding per slot, so the mapping is
the same for every split and every checkpoint rebuild.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from pathkit_generators._hashing import stable_hash

_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=200_000)
def _slot(gram: str, buckets: int) -> int:
    return 1 + stable_hash(gram) % (buckets - 1)


def token_ids(text: str, buckets: int, max_tokens: int = 64) -> list[int]:
    """Slot ids of the unigrams then bigrams of `text` (at most `max_tokens`; at least one: 0)."""
    words = _WORD.findall(str(text).lower())
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    return [_slot(g, buckets) for g in grams[:max_tokens]] or [0]


def padded(texts: Sequence[str], buckets: int, max_tokens: int = 64) -> list[list[int]]:
    """Token ids of each text, right-padded with 0 to the longest."""
    ids = [token_ids(t, buckets, max_tokens) for t in texts]
    width = max((len(i) for i in ids), default=1)
    return [i + [0] * (width - len(i)) for i in ids]
