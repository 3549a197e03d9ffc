"""ROUGE-L as pycocoevalcap computes it (beta 1.2, tokens from `str.split(" ")`), with a bit-parallel LCS.

pycocoevalcap fills an (m+1) x (n+1) dynamic-programming table in Python per pair. The
longest-common-subsequence length is computed here with the bit-vector recurrence of
Hyyrö (2004, "Bit-parallel LCS-length computation revisited"; after Allison & Dix 1986 and
Crochemore et al. 2001): one row of the table is a bit vector held in a Python integer, and
each token of the other text updates it with one AND, one addition and one OR, so a pair
costs O(n) big-integer operations instead of O(m*n) interpreted steps. The result is the
exact LCS length, so ROUGE-L scores are identical.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ROUGE_BETA = 1.2


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences."""
    if len(a) < len(b):
        a, b = b, a  # bits over the longer text, one loop step per token of the shorter
    if not b:
        return 0
    match_masks: dict[str, int] = {}
    for position, token in enumerate(a):
        match_masks[token] = match_masks.get(token, 0) | (1 << position)
    full = (1 << len(a)) - 1
    row = full
    get = match_masks.get
    for token in b:
        mask = get(token)
        if mask is None:
            continue
        matched = row & mask
        # carries above bit len(a) never flow back down, so masking once per step bounds growth
        row = ((row + matched) | (row - matched)) & full
    return len(a) - row.bit_count()


def rouge_l_pair(candidate: str, references: Sequence[str], beta: float = ROUGE_BETA) -> float:
    """pycocoevalcap's `Rouge.calc_score` for one candidate and its references."""
    candidate_tokens = candidate.split(" ")
    best_precision = 0.0
    best_recall = 0.0
    for reference in references:
        reference_tokens = reference.split(" ")
        lcs = lcs_length(reference_tokens, candidate_tokens)
        best_precision = max(best_precision, lcs / float(len(candidate_tokens)))
        best_recall = max(best_recall, lcs / float(len(reference_tokens)))
    if best_precision != 0 and best_recall != 0:
        return ((1 + beta**2) * best_precision * best_recall) / float(
            best_recall + beta**2 * best_precision
        )
    return 0.0


def rouge_l_scores(
    predictions: Sequence[str], references: Sequence[Sequence[str]], beta: float = ROUGE_BETA
) -> np.ndarray:
    """Per-case ROUGE-L; the corpus score is their mean."""
    return np.fromiter(
        (rouge_l_pair(p, refs, beta) for p, refs in zip(predictions, references, strict=True)),
        dtype=np.float64,
        count=len(predictions),
    )
