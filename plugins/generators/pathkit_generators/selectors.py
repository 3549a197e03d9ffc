"""Evidence selectors `uniform`, `flat-topk` and `pathoargus`: at most K of a question's N patch
features, scoring at most M candidates (docs/pathoargus.md says which paper section each step
follows and what the paper leaves open).

- `uniform`: K rows evenly spaced over the case's rows in slide order (np.linspace, as
  SlideChat caps its features); no relevance.
- `flat-topk`, the "conventional selector" of PathoArgus section 4: every patch of the case in
  one list, a global candidate limit (M rows evenly spaced over that list), then the K
  candidates of highest question relevance.
- `pathoargus`: routing candidate set -> slide -> spatial region -> patch. The candidate pool
  keeps every set and slide represented (M split evenly over sets, then over their slides,
  then over occupied regions of each slide, unused shares reassigned); the budget K is split
  the same way over sets and slides; within a slide a coverage branch takes the most relevant
  candidate of each occupied region (best regions first, `coverage_fraction` of the slide's
  budget) and a relevance branch fills the rest with the highest-scoring unselected
  candidates; the branches are merged, de-duplicated and put back in slide order.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import EvidencePool, PathkitError, Selection, Selector
from pathkit_generators._selection import RELEVANCE_CHOICES, RELEVANCE_OPTIONS

CANDIDATE_CHOICES = ("linspace", "stratified")
SET_SPLITS = ("equal", "proportional")


class UniformSelector(Selector):
    """K features evenly spaced over the case's rows (slide order); blind to the question."""

    name: ClassVar[str] = "uniform"
    description: ClassVar[str] = "K features evenly spaced over the case's rows in slide order (no relevance)"

    def select(self, pool: EvidencePool, *, budget: int, candidates: int) -> Selection:
        import numpy as np

        from pathkit_generators._selection.allocation import evenly_spaced

        rows = evenly_spaced(np.arange(pool.n), budget)
        return Selection.of(rows, pool, n_scored=0, facts={"selector": self.name})


class RelevanceSelector(Selector):
    """What `flat-topk` and `pathoargus` share: a question relevance (text tower or learned)."""

    default_options: ClassVar[dict[str, Any]] = {}
    # "auto" learns a projection unless a text tower fits; an instance with relevance="text-tower" needs no fit
    needs_fit: ClassVar[bool] = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options["relevance"] not in RELEVANCE_CHOICES:
            raise PathkitError(f"selector {self.name!r}: relevance {self.options['relevance']!r}; "
                               f"choose {', '.join(RELEVANCE_CHOICES)}")
        self.needs_fit = self.options["relevance"] != "text-tower"
        self._relevance: Any = None

    def fit(self, pools, answers, *, cache_dir=None, seed: int = 0, data_key: str | None = None) -> None:
        from pathkit_generators._selection.relevance import fit_learned, text_tower

        if self.options["relevance"] == "auto":
            tower = text_tower(self.options, required=False)
            if tower is not None and (len(pools) == 0 or pools[0].rows([0]).shape[1] == tower.embedder.dim):
                self._relevance = tower
                return
        self._relevance = fit_learned(pools, answers, self.options, cache_dir=cache_dir, seed=seed,
                                      data_key=data_key)

    def relevance(self) -> Any:
        if self._relevance is None:
            if self.options["relevance"] != "text-tower":
                raise PathkitError(f"selector {self.name!r} has not learned its relevance yet (fit it on the "
                                   "train split first)")
            from pathkit_generators._selection.relevance import text_tower

            self._relevance = text_tower(self.options, required=True)
        return self._relevance

    def facts(self) -> dict[str, Any]:
        out = super().facts()
        if self._relevance is not None:
            out.update(self._relevance.facts())
        return out


class FlatTopKSelector(RelevanceSelector):
    """One flat list of the case's patches: a global candidate limit, then the global top K."""

    name: ClassVar[str] = "flat-topk"
    description: ClassVar[str] = ("the conventional selector: global candidate limit (M evenly spaced), then the "
                                  "K most question-relevant")
    default_options: ClassVar[dict[str, Any]] = dict(RELEVANCE_OPTIONS)

    def select(self, pool: EvidencePool, *, budget: int, candidates: int) -> Selection:
        import numpy as np

        from pathkit_generators._selection.allocation import evenly_spaced, top_rows

        cands = evenly_spaced(np.arange(pool.n), candidates)
        scores = self.relevance().score(pool, cands)
        return Selection.of(top_rows(cands, scores, budget), pool, n_scored=len(cands), facts=self.facts())


class PathoArgusSelector(RelevanceSelector):
    """Hierarchical routing candidate set -> slide -> spatial region -> patch (PathoArgus section 4)."""

    name: ClassVar[str] = "pathoargus"
    description: ClassVar[str] = ("PathoArgus routing: every set and slide kept, budget split set -> slide, "
                                  "region coverage + relevance fill, slide order restored")
    default_options: ClassVar[dict[str, Any]] = {
        **RELEVANCE_OPTIONS,
        "candidate_choice": "stratified",  # "stratified": per set, slide and region; "linspace": even per slide
        "set_split": "equal",  # how K and M are split over candidate sets: "equal" or "proportional"
        "coverage_fraction": 0.5,  # share of a slide's budget for the coverage branch
        "region_grid": "auto",  # side of a slide's region grid: "auto" (one cell per coverage pick) or an int
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        o = self.options
        if o["candidate_choice"] not in CANDIDATE_CHOICES:
            raise PathkitError(f"selector 'pathoargus': candidate_choice {o['candidate_choice']!r}; "
                               f"choose {', '.join(CANDIDATE_CHOICES)}")
        if o["set_split"] not in SET_SPLITS:
            raise PathkitError(f"selector 'pathoargus': set_split {o['set_split']!r}; choose {', '.join(SET_SPLITS)}")
        if not 0.0 <= float(o["coverage_fraction"]) <= 1.0:
            raise PathkitError(f"selector 'pathoargus': coverage_fraction {o['coverage_fraction']!r} must be in [0, 1]")
        grid = o["region_grid"]
        if grid != "auto" and (isinstance(grid, bool) or not isinstance(grid, int) or grid < 1):
            raise PathkitError(f"selector 'pathoargus': region_grid {grid!r} must be \"auto\" or a positive integer")

    # ------------------------------------------------------------------ budget routing

    def _split_sets(self, total: int, capacities: list[int]) -> list[int]:
        from pathkit_generators._selection.allocation import proportional_split, water_fill

        if self.options["set_split"] == "proportional":
            first = proportional_split(total, capacities)
            # what proportional rounding leaves is filled evenly, so no capacity is wasted
            rest = water_fill(total - sum(first), [c - a for c, a in zip(capacities, first, strict=True)])
            return [a + b for a, b in zip(first, rest, strict=True)]
        return water_fill(total, capacities)

    def _routed(self, total: int, units: list[list[Any]]) -> list[list[int]]:
        """`total` split over sets (by their capacity), then each set's share over its slides."""
        from pathkit_generators._selection.allocation import water_fill

        set_caps = [sum(len(u) for u in slides) for slides in units]
        per_set = self._split_sets(total, set_caps)
        return [water_fill(share, [len(u) for u in slides]) for share, slides in zip(per_set, units, strict=True)]

    def _slides_by_set(self, pool: EvidencePool) -> tuple[list[list[int]], list[Any]]:
        from pathkit_generators._selection.allocation import slide_row_ranges

        rows = slide_row_ranges(pool.slide, pool.n_slides)
        sets: list[list[int]] = [[] for _ in range(pool.n_sets)]
        for j, s in enumerate(pool.slide_sets):
            sets[s].append(j)
        return sets, rows

    def candidate_pool(self, pool: EvidencePool, candidates: int) -> Any:
        """At most M candidate rows with every set and slide represented, spread over regions."""
        import numpy as np

        from pathkit_generators._selection.allocation import evenly_spaced, grid_side, region_ids, spread_over_groups

        sets, rows = self._slides_by_set(pool)
        quotas = self._routed(candidates, [[rows[j] for j in slides] for slides in sets])
        picked = []
        coords = np.asarray(pool.coords)
        for slides, shares in zip(sets, quotas, strict=True):
            for j, share in zip(slides, shares, strict=True):
                mine = rows[j]
                if share >= len(mine):
                    picked.append(mine)
                elif self.options["candidate_choice"] == "linspace":
                    picked.append(evenly_spaced(mine, share))
                else:
                    picked.append(spread_over_groups(mine, region_ids(coords[mine], grid_side(share)), share))
        return np.sort(np.concatenate(picked)) if picked else np.zeros(0, dtype=np.int64)

    def select(self, pool: EvidencePool, *, budget: int, candidates: int) -> Selection:
        import numpy as np

        from pathkit_generators._selection.allocation import grid_side, group_rows, region_ids, top_rows

        cands = self.candidate_pool(pool, candidates)
        scores = np.asarray(self.relevance().score(pool, cands), dtype=np.float64)
        slide_of_cand = np.asarray(pool.slide)[cands]
        sets, _ = self._slides_by_set(pool)
        by_slide = [cands[slide_of_cand == j] for j in range(pool.n_slides)]
        budgets = self._routed(budget, [[by_slide[j] for j in slides] for slides in sets])
        coords = np.asarray(pool.coords)
        chosen: list[Any] = []
        for slides, shares in zip(sets, budgets, strict=True):
            for j, share in zip(slides, shares, strict=True):
                if share == 0:
                    continue
                mine = by_slide[j]
                mine_scores = scores[np.searchsorted(cands, mine)]
                n_cover = int(round(share * float(self.options["coverage_fraction"])))
                cover = np.zeros(0, dtype=np.int64)
                if n_cover:
                    grid = self.options["region_grid"]
                    side = grid_side(n_cover) if grid == "auto" else int(grid)
                    regions = group_rows(region_ids(coords[mine], side))
                    best = np.asarray([r[np.argmax(mine_scores[r])] for r in regions], dtype=np.int64)
                    cover = top_rows(mine[best], mine_scores[best], n_cover)
                rest = ~np.isin(mine, cover)
                fill = top_rows(mine[rest], mine_scores[rest], share - len(cover))
                chosen.extend((cover, fill))
        indices = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
        return Selection.of(indices, pool, n_scored=len(cands), facts=self.facts())


@hookimpl
def register_selectors(register):
    register(UniformSelector)
    register(FlatTopKSelector)
    register(PathoArgusSelector)
