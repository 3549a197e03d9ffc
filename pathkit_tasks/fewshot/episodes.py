"""Few-shot episodes: for each k, `n_episodes` support sets of k train cases per class, drawn from
the train split's case ids and classes alone (sorted ids, a seeded generator per k), so every
encoder and every head meets the same support sets (docs/few-shot.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pathkit_core.contracts import PathkitError

DEFAULT_KS = (1, 2, 4, 8, 16, 32)
DEFAULT_EPISODES = 100
EPISODES_FILE = "episodes.json"


def parse_ks(value: Any) -> list[int]:
    """Shot counts from "1,2,4" or a list; a PathkitError for anything but positive whole numbers."""
    raw = value if value is not None else DEFAULT_KS
    parts = raw.split(",") if isinstance(raw, str) else list(raw)
    try:
        ks = sorted({int(str(v).strip()) for v in parts})
    except ValueError:
        raise PathkitError(f"few-shot: ks={raw!r} must be positive whole numbers, e.g. 1,2,4,8,16,32") from None
    if not ks or ks[0] < 1:
        raise PathkitError(f"few-shot: ks={raw!r} must be positive whole numbers, e.g. 1,2,4,8,16,32")
    return ks


def check_shots(ks: Sequence[int], labels: Sequence[int], class_names: Sequence[str]) -> None:
    """Refuse a shot count above a class's train size, naming the class and its count."""
    counts = {c: 0 for c in range(len(class_names))}
    for y in labels:
        counts[int(y)] = counts.get(int(y), 0) + 1
    top = max(ks)
    short = [(class_names[c] if c < len(class_names) else str(c), n) for c, n in sorted(counts.items()) if n < top]
    if short:
        name, n = min(short, key=lambda item: item[1])
        fits = [k for k in ks if k <= n]
        hint = f"ks={','.join(map(str, fits))}" if fits else "more train cases of that class"
        raise PathkitError(f"few-shot: {top} shots per class asked, but class {name!r} has {n} train case(s) "
                           f"({len(short)} class(es) short); use {hint}")


def sample_episodes(case_ids: Sequence[str], labels: Sequence[int], ks: Sequence[int], n_episodes: int,
                    seed: int) -> dict[int, list[list[str]]]:
    """{k: [support case ids of each episode]}: per episode, k ids of each class drawn without
    replacement, classes in index order. Depends only on the ids, their classes and the seed."""
    import numpy as np

    if n_episodes < 1:
        raise PathkitError(f"few-shot: episodes={n_episodes} must be at least 1")
    by_class: dict[int, list[str]] = {}
    for cid, y in sorted(zip(map(str, case_ids), map(int, labels), strict=True)):
        by_class.setdefault(y, []).append(cid)
    out: dict[int, list[list[str]]] = {}
    for k in ks:
        rng = np.random.default_rng([int(seed), int(k)])
        out[int(k)] = [[ids[j] for c, ids in sorted(by_class.items())
                        for j in rng.choice(len(ids), size=int(k), replace=False)] for _ in range(n_episodes)]
    return out


__all__ = ["DEFAULT_EPISODES", "DEFAULT_KS", "EPISODES_FILE", "check_shots", "parse_ks", "sample_episodes"]
