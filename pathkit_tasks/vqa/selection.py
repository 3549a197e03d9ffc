"""The evidence-selector contract of the multiple-choice VQA task: a component kind this package
adds to the registry (`selector`, registered through its own `register_selectors` hook)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import Component, PathkitError

if TYPE_CHECKING:
    import numpy as np


@dataclass
class EvidencePool:
    """The patch features one question's case offers a selector, in slide order.

    `features` (N, D) and `coords` (N, 2; level-0 pixels) are the case's slides concatenated in
    order (numpy or torch arrays, any float dtype); `slide` (N,) is each row's slide ordinal
    (non-decreasing); `slide_sets[j]` is the candidate set (0, 1, ...) of slide j. `question` and
    `choices` are what a reader sees: never the answer. A selector reads feature rows through
    `rows(indices)`, so it touches only the candidates it scores. `joint_space` is the image-text
    space the features lie in, as their files record it (`Encoder.joint_space`; None: image-only
    or unknown).
    """

    features: Any
    coords: Any
    slide: Any
    slide_sets: tuple[int, ...]
    question: str = ""
    choices: tuple[str, ...] = ()
    case_id: str = ""
    joint_space: str | None = None

    @property
    def n(self) -> int:
        return int(len(self.slide))

    @property
    def n_slides(self) -> int:
        return len(self.slide_sets)

    @property
    def n_sets(self) -> int:
        return max(self.slide_sets) + 1 if self.slide_sets else 0

    def rows(self, indices: Any) -> np.ndarray:
        """float32 feature rows `indices` as a numpy array."""
        import numpy as np

        picked = self.features[np.asarray(indices, dtype=np.int64)]
        if hasattr(picked, "numpy"):
            picked = picked.float().numpy()
        return np.asarray(picked, dtype=np.float32)


@dataclass
class Selection:
    """What a selector kept of a pool: at most K row `indices`, ascending (the original slide
    order), with the allocation per candidate set and per slide, the number of candidates it
    scored and its facts (relevance used, options)."""

    indices: Any
    per_set: list[int]
    per_slide: list[int]
    n_scored: int = 0
    facts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, indices: Any, pool: EvidencePool, *, n_scored: int = 0,
           facts: Mapping[str, Any] | None = None) -> Selection:
        """The selection of `indices` (merged, de-duplicated, restored to slide order) with its
        per-set and per-slide counts."""
        import numpy as np

        kept = np.unique(np.asarray(indices, dtype=np.int64))
        if kept.size and (kept[0] < 0 or kept[-1] >= pool.n):
            raise PathkitError(f"selection of case {pool.case_id!r}: row {int(kept[-1])} outside 0..{pool.n - 1}")
        slides = np.asarray(pool.slide, dtype=np.int64)[kept]
        per_slide = np.bincount(slides, minlength=pool.n_slides).tolist()
        per_set = [0] * pool.n_sets
        for j, count in enumerate(per_slide):
            per_set[pool.slide_sets[j]] += count
        return cls(kept, per_set, per_slide, n_scored, dict(facts or {}))


class Selector(Component):
    """Evidence selection under a budget: at most K of a case's N patch features for one question.

    Registered through `register_selectors` and named by the dataset option `selector`. `select`
    scores at most `candidates` (M) rows and returns a `Selection` (build it with
    `Selection.of`); a selector that `needs_fit` (a learned relevance) is first given the train
    split's pools and answers. Options are checked against `default_options`.
    """

    kind: ClassVar[str] = "selector"
    list_columns: ClassVar[tuple[str, ...]] = ("needs_fit",)
    default_options: ClassVar[dict[str, Any]] = {}
    needs_fit: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.default_options))
        if unknown:
            raise PathkitError(f"selector {self.name!r} has no option(s) {', '.join(unknown)}; "
                               f"known: {', '.join(sorted(self.default_options)) or 'none'}")
        self.options = {**self.default_options, **options}

    def fit(self, pools: Sequence[EvidencePool], answers: Sequence[int], *, cache_dir: Path | None = None,
            seed: int = 0, data_key: str | None = None) -> None:
        """Learn from the train split (pools load lazily, one at a time); called when `needs_fit`
        (an instance may set it). `data_key` is a content key of the pools and answers, for a
        cache of what was learned under `cache_dir` (None: do not cache)."""

    def select(self, pool: EvidencePool, *, budget: int, candidates: int) -> Selection:
        raise NotImplementedError

    def facts(self) -> dict[str, Any]:
        """JSON facts recorded with the run's selections (the relevance actually used, options)."""
        return {"selector": self.name, **self.options}

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        out.update(default_options=dict(cls.default_options), needs_fit=cls.needs_fit)
        return out
