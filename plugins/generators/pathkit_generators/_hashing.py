"""A hash of text that is the same in every process and Python version (unlike `hash`)."""

from __future__ import annotations

import hashlib


def stable_hash(text: str) -> int:
    """The text's 64-bit blake2b digest as an unsigned integer (little-endian)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
