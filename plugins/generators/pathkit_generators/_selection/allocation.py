"""Budget arithmetic of the selectors: even splits with reassignment, even spacing, spatial regions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def water_fill(total: int, capacities: Sequence[int]) -> list[int]:
    """Split `total` as evenly as possible over bins holding at most `capacities`; what a small
    bin cannot take is reassigned to the others (PathoArgus: "unused capacity of a small set is
    reassigned"). Remainders go to the earlier bins, so the split is deterministic."""
    caps = [max(0, int(c)) for c in capacities]
    alloc = [0] * len(caps)
    remaining = min(int(total), sum(caps))
    open_bins = [i for i, c in enumerate(caps) if c > 0]
    while remaining > 0 and open_bins:
        share, extra = divmod(remaining, len(open_bins))
        for rank, i in enumerate(open_bins):
            take = min(share + (1 if rank < extra else 0), caps[i] - alloc[i])
            alloc[i] += take
            remaining -= take
        open_bins = [i for i in open_bins if alloc[i] < caps[i]]
    return alloc


def proportional_split(total: int, capacities: Sequence[int]) -> list[int]:
    """Split `total` in proportion to `capacities` (largest remainders), capped by them."""
    caps = np.asarray([max(0, int(c)) for c in capacities], dtype=np.float64)
    total = int(min(total, caps.sum()))
    if total == 0:
        return [0] * len(caps)
    raw = caps * total / caps.sum()
    alloc = np.floor(raw).astype(np.int64)
    order = np.argsort(-(raw - alloc), kind="stable")
    for i in order[: total - int(alloc.sum())]:
        alloc[i] += 1
    return alloc.tolist()


def evenly_spaced(rows: np.ndarray, k: int) -> np.ndarray:
    """`k` of `rows` at even spacing, first and last included: np.linspace(0, n - 1, k) floored,
    as SlideChat caps a slide's features (here in exact integer arithmetic); all of them when
    k >= len(rows)."""
    if k >= len(rows):
        return rows
    if k <= 0:
        return rows[:0]
    if k == 1:
        return rows[:1]
    return rows[(np.arange(k) * (len(rows) - 1)) // (k - 1)]


def spread_over_groups(rows: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """`k` of `rows` split as evenly as possible over their groups (`water_fill` over the group
    sizes), each group's share evenly spaced over its rows in their order; vectorised, so a slide
    cut into thousands of regions costs one pass."""
    if k >= len(rows):
        return rows
    if k <= 0:
        return rows[:0]
    order = np.argsort(groups, kind="stable")
    cuts = np.flatnonzero(np.diff(groups[order])) + 1  # group boundaries in the sorted order
    counts = np.diff(np.concatenate([[0], cuts, [len(rows)]]))
    quotas = np.asarray(water_fill(k, counts.tolist()), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    owner = np.repeat(np.arange(len(counts)), quotas)
    rank = np.arange(len(owner)) - np.repeat(np.cumsum(quotas) - quotas, quotas)  # 0.. within each group
    q, c = quotas[owner], counts[owner]
    # np.linspace(0, c - 1, q, dtype=int) of each group, as `evenly_spaced`
    offsets = np.where(q > 1, (rank * (c - 1)) // np.maximum(q - 1, 1), 0)
    return rows[order[starts[owner] + offsets]]


def region_ids(coords: np.ndarray, side: int) -> np.ndarray:
    """The cell of a `side` x `side` grid over the rows' bounding box that each row falls in
    (row-major cell number). Rows without spatial spread all share cell 0."""
    if len(coords) == 0 or side <= 1:
        return np.zeros(len(coords), dtype=np.int64)
    xy = np.asarray(coords, dtype=np.int64)
    low = xy.min(axis=0)
    span = xy.max(axis=0) - low + 1  # integer cells: x - low in [0, span) maps to [0, side)
    cell = (xy - low) * side // span
    return cell[:, 1] * side + cell[:, 0]


def grid_side(count: int) -> int:
    """The side of the smallest square grid with at least `count` cells."""
    return max(1, math.ceil(math.sqrt(max(count, 1))))


def group_rows(ids: np.ndarray) -> list[np.ndarray]:
    """Row positions of each distinct id, ids in ascending order, rows in their original order."""
    if len(ids) == 0:
        return []
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    cuts = np.flatnonzero(np.diff(sorted_ids)) + 1
    return np.split(order, cuts)


def top_rows(rows: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """The `k` rows with the highest scores (ties: the earlier row first)."""
    if k >= len(rows):
        return rows
    if k <= 0:
        return rows[:0]
    order = np.lexsort((rows, -scores))
    return rows[order[:k]]


def slide_row_ranges(slide: Any, n_slides: int) -> list[np.ndarray]:
    """Rows of each slide ordinal 0..n_slides-1 of a non-decreasing slide array (empty for
    slides without rows)."""
    slide = np.asarray(slide, dtype=np.int64)
    bounds = np.searchsorted(slide, np.arange(n_slides + 1))
    return [np.arange(bounds[j], bounds[j + 1]) for j in range(n_slides)]
