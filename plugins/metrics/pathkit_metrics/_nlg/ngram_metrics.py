"""BLEU-1..4 and CIDEr(-D) as pycocoevalcap computes them, from corpus-wide n-gram counts in numpy.

Every (n-gram, segment) count of the corpus comes out of one stable sort per n-gram order
instead of one Python dict per sentence; the arithmetic then follows pycocoevalcap's `BleuScorer`
("closest" reference length, the 1e-9 / 1e-15 smoothing constants, per-image sentence BLEU)
and `CiderScorer` (document frequency over each image's reference set, idf with the log
corpus size, clipped tf-idf cosine, Gaussian length penalty with sigma 6, bigram-count
"length", mean over n, x10) operation for operation, so the numbers agree to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

MAX_ORDER = 4
# pycocoevalcap's smoothing constants: numerator + TINY, denominator + SMALL.
BLEU_SMALL = 1e-9
BLEU_TINY = 1e-15
CIDER_SIGMA = 6.0


@dataclass
class OrderCounts:
    """Counts of the n-grams of one order: one row per distinct (n-gram, segment), sorted by
    n-gram id, then segment."""

    gram: np.ndarray
    segment: np.ndarray
    count: np.ndarray
    n_grams: int


def encode_tokens(token_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Dense integer ids for the tokens of all segments, concatenated, and each segment's length."""
    lengths = np.fromiter((len(tokens) for tokens in token_lists), dtype=np.int64, count=len(token_lists))
    # dict.fromkeys and map(dict.__getitem__) iterate in C: much faster than a Python-level loop
    vocab = {token: index for index, token in enumerate(dict.fromkeys(chain.from_iterable(token_lists)))}
    ids = np.fromiter(
        map(vocab.__getitem__, chain.from_iterable(token_lists)), dtype=np.int64, count=int(lengths.sum())
    )
    return ids, lengths


def _run_starts(*sorted_columns: np.ndarray) -> np.ndarray:
    """Indices where a run of equal rows begins in lexicographically sorted columns."""
    size = sorted_columns[0].shape[0]
    change = np.zeros(size, dtype=bool)
    if size:
        change[0] = True
    for column in sorted_columns:
        change[1:] |= column[1:] != column[:-1]
    return np.flatnonzero(change)


def count_ngrams(token_ids: np.ndarray, lengths: np.ndarray, max_order: int = MAX_ORDER) -> list[OrderCounts]:
    """Per order k = 1..max_order, the count of every n-gram in every segment.

    An order-k n-gram at position p is identified by the pair (id of the (k-1)-gram at p,
    token at p+k-1), renumbered densely each order, so ids never overflow. One stable sort
    per order gives both: positions run in segment order, so after a stable sort by n-gram
    key the rows of one (n-gram, segment) are contiguous and the dense ids are run numbers.
    """
    n_segments = lengths.shape[0]
    total = token_ids.shape[0]
    segment_of = np.repeat(np.arange(n_segments, dtype=np.int64), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    # tokens from each position to the end of its segment, inclusive
    remaining = lengths[segment_of] - (np.arange(total, dtype=np.int64) - starts[segment_of])
    vocab_size = int(token_ids.max()) + 1 if total else 1

    orders: list[OrderCounts] = []
    gram_at = token_ids
    for order in range(1, max_order + 1):
        positions = np.flatnonzero(remaining >= order)
        if order == 1:
            key = token_ids
        else:
            key = gram_at[positions] * vocab_size + token_ids[positions + order - 1]
        by_key = np.argsort(key, kind="stable")
        sorted_key = key[by_key]
        sorted_segment = segment_of[positions][by_key]
        gram_starts = _run_starts(sorted_key)
        dense_sorted = np.zeros(sorted_key.shape[0], dtype=np.int64)
        if sorted_key.shape[0]:
            dense_sorted[gram_starts[1:]] = 1
            dense_sorted = np.cumsum(dense_sorted)
        gram_at = np.full(total, -1, dtype=np.int64)
        gram_at[positions[by_key]] = dense_sorted
        row_starts = _run_starts(sorted_key, sorted_segment)
        counts = np.diff(np.append(row_starts, sorted_key.shape[0]))
        orders.append(
            OrderCounts(
                gram=dense_sorted[row_starts],
                segment=sorted_segment[row_starts],
                count=counts.astype(np.int64),
                n_grams=max(int(gram_starts.shape[0]), 1),
            )
        )
    return orders


class SplitCorpus:
    """Predictions and their references split on whitespace (`str.split()`), with n-gram counts.

    Segments 0..n_cases-1 are the predictions; the references follow, `ref_case[j]` giving
    the case of reference j. Keys `gram * n_cases + case` are sorted in the row order of
    `OrderCounts`, on the prediction side and on the reference side alike.
    """

    def __init__(
        self, predictions: Sequence[str], references: Sequence[Sequence[str]], max_order: int = MAX_ORDER
    ) -> None:
        self.n_cases = len(predictions)
        self.max_order = max_order
        n_refs = np.fromiter((len(r) for r in references), dtype=np.int64, count=len(references))
        self.refs_per_case = n_refs
        self.ref_case = np.repeat(np.arange(self.n_cases, dtype=np.int64), n_refs)
        token_lists = [text.split() for text in predictions]
        token_lists.extend(text.split() for refs in references for text in refs)
        ids, lengths = encode_tokens(token_lists)
        self.hyp_len = lengths[: self.n_cases]
        self.ref_len = lengths[self.n_cases :]
        self.orders = count_ngrams(ids, lengths, max_order)
        self._ref_union: list[tuple[np.ndarray, np.ndarray]] | None = None

    def hyp_keys(self, counts: OrderCounts) -> tuple[np.ndarray, np.ndarray]:
        """Row mask of the prediction n-grams of an order and their sorted keys."""
        rows = counts.segment < self.n_cases
        return rows, counts.gram[rows] * self.n_cases + counts.segment[rows]

    def ref_keys(self, counts: OrderCounts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row mask of the reference n-grams, their reference index and their (sorted) keys."""
        rows = counts.segment >= self.n_cases
        reference = counts.segment[rows] - self.n_cases
        return rows, reference, counts.gram[rows] * self.n_cases + self.ref_case[reference]

    def ref_union(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per order: sorted unique keys gram*n_cases+case of each case's reference n-grams, with
        the maximum count over that case's references (BLEU's clipping count)."""
        if self._ref_union is None:
            out = []
            for counts in self.orders:
                rows, _, key = self.ref_keys(counts)
                ref_count = counts.count[rows]
                if key.shape[0] == 0:
                    out.append((key, ref_count))
                    continue
                # keys are sorted; several references of one case make runs of equal keys
                first = _run_starts(key)
                out.append((key[first], np.maximum.reduceat(ref_count, first)))
            self._ref_union = out
        return self._ref_union


def _lookup(sorted_keys: np.ndarray, values: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of `keys`: the value stored under it (0 where absent) and whether it was found."""
    if sorted_keys.shape[0] == 0:
        return np.zeros(keys.shape[0], dtype=values.dtype), np.zeros(keys.shape[0], dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.shape[0] - 1)
    found = sorted_keys[pos] == keys
    return np.where(found, values[pos], 0), found


@dataclass
class BleuStatistics:
    """Per-case sufficient statistics of BLEU: clipped matches and guesses per order, lengths."""

    correct: np.ndarray  # (n_cases, max_order) int64
    guess: np.ndarray  # (n_cases, max_order) int64
    test_len: np.ndarray  # (n_cases,)
    ref_len: np.ndarray  # (n_cases,) the "closest" reference length


def bleu_statistics(corpus: SplitCorpus) -> BleuStatistics:
    n, max_order = corpus.n_cases, corpus.max_order
    correct = np.zeros((n, max_order), dtype=np.int64)
    for k, (counts, (ref_keys, ref_max)) in enumerate(zip(corpus.orders, corpus.ref_union(), strict=True)):
        rows, key = corpus.hyp_keys(counts)
        ref_count, found = _lookup(ref_keys, ref_max, key)
        clipped = np.where(found, np.minimum(counts.count[rows], ref_count), 0)
        correct[:, k] = np.bincount(counts.segment[rows], weights=clipped, minlength=n).astype(np.int64)
    test_len = corpus.hyp_len
    guess = np.maximum(0, test_len[:, None] - np.arange(max_order)[None, :])
    # "closest": the reference length nearest the prediction's, the shorter one on a tie
    distance = np.abs(corpus.ref_len - test_len[corpus.ref_case])
    order = np.lexsort((corpus.ref_len, distance, corpus.ref_case))
    first = np.concatenate(([True], corpus.ref_case[order][1:] != corpus.ref_case[order][:-1]))
    ref_len = np.empty(n, dtype=np.int64)
    ref_len[corpus.ref_case[order][first]] = corpus.ref_len[order][first]
    return BleuStatistics(correct, guess, test_len, ref_len)


def _bleu_from_counts(
    correct: np.ndarray, guess: np.ndarray, test_len: np.ndarray, ref_len: np.ndarray
) -> np.ndarray:
    """BLEU-1..n along the last axis, pycocoevalcap's formula, for any leading shape."""
    precision = (correct.astype(np.float64) + BLEU_TINY) / (guess.astype(np.float64) + BLEU_SMALL)
    running = np.cumprod(precision, axis=-1)
    exponents = 1.0 / np.arange(1, correct.shape[-1] + 1, dtype=np.float64)
    scores = running**exponents
    ratio = (test_len.astype(np.float64) + BLEU_TINY) / (ref_len.astype(np.float64) + BLEU_SMALL)
    with np.errstate(divide="ignore", over="ignore"):
        penalty = np.where(ratio < 1.0, np.exp(1.0 - 1.0 / ratio), 1.0)
    return scores * penalty[..., None]


def corpus_bleu(stats: BleuStatistics) -> np.ndarray:
    """Corpus BLEU-1..n: counts and lengths summed over the cases first."""
    return _bleu_from_counts(
        stats.correct.sum(axis=0), stats.guess.sum(axis=0), stats.test_len.sum(), stats.ref_len.sum()
    )


def sentence_bleu(stats: BleuStatistics) -> np.ndarray:
    """Per-case BLEU-1..n, shape (n_cases, n): pycocoevalcap's per-image `bleu_list`."""
    return _bleu_from_counts(stats.correct, stats.guess, stats.test_len, stats.ref_len)


def bootstrap_corpus_bleu(stats: BleuStatistics, index_block: np.ndarray) -> np.ndarray:
    """Corpus BLEU for each row of resampled case indices, shape (rows, n); for CIs."""
    weights = np.zeros((index_block.shape[0], stats.correct.shape[0]), dtype=np.float64)
    rows = np.repeat(np.arange(index_block.shape[0]), index_block.shape[1])
    np.add.at(weights, (rows, index_block.reshape(-1)), 1.0)
    return _bleu_from_counts(
        weights @ stats.correct, weights @ stats.guess, weights @ stats.test_len, weights @ stats.ref_len
    )


def cider_scores(corpus: SplitCorpus, sigma: float = CIDER_SIGMA) -> np.ndarray:
    """Per-case CIDEr (pycocoevalcap's CIDEr-D); the corpus score is their mean."""
    n = corpus.n_cases
    n_ref_segments = corpus.ref_len.shape[0]
    log_corpus_size = np.log(float(n))
    per_order = np.zeros((n, corpus.max_order), dtype=np.float64)
    # pycocoevalcap's "length" counts bigrams, not words
    hyp_length = np.maximum(corpus.hyp_len - 1, 0).astype(np.float64)
    ref_length = np.maximum(corpus.ref_len - 1, 0).astype(np.float64)
    delta = hyp_length[corpus.ref_case] - ref_length
    penalty = np.e ** (-(delta**2) / (2 * sigma**2))
    for k, (counts, (ref_keys, _)) in enumerate(zip(corpus.orders, corpus.ref_union(), strict=True)):
        # document frequency: the number of cases whose references contain the n-gram
        doc_freq = np.bincount(ref_keys // n, minlength=counts.n_grams).astype(np.float64)
        idf = log_corpus_size - np.log(np.maximum(1.0, doc_freq))
        weight = counts.count.astype(np.float64) * idf[counts.gram]
        norm_sq = np.bincount(counts.segment, weights=weight * weight, minlength=n + n_ref_segments).astype(
            np.float64
        )
        norm = np.sqrt(norm_sq)
        hyp_norm, ref_norm = norm[:n], norm[n:]

        hyp_rows, hyp_key = corpus.hyp_keys(counts)
        ref_rows, ref_segment, ref_key = corpus.ref_keys(counts)
        ref_weight = weight[ref_rows]
        hyp_value, found = _lookup(hyp_key, weight[hyp_rows], ref_key)
        # clipped similarity: min(hyp, ref) * ref over the n-grams both share
        overlap = np.where(found, np.minimum(hyp_value, ref_weight) * ref_weight, 0.0)
        # bincount of an empty input returns integers: cast so the division below stays float
        dot = np.bincount(ref_segment, weights=overlap, minlength=n_ref_segments).astype(np.float64)
        denominator = hyp_norm[corpus.ref_case] * ref_norm
        similarity = np.divide(dot, denominator, out=dot.copy(), where=denominator != 0)
        similarity = similarity * penalty
        per_order[:, k] = np.bincount(corpus.ref_case, weights=similarity, minlength=n)
    return per_order.mean(axis=1) / corpus.refs_per_case * 10.0
