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
  over the sets the same way. Within a set (`budget_routing="set"`, the paper's section 4:
  "a coverage branch spreads selections across slides and occupied spatial regions ... a
  relevance branch then uses the remaining capacity"), the coverage branch's share
  (`coverage_fraction` of the set's budget, rounded down) is split evenly over the set's slides
  (a remainder to the slides with the most relevant candidate first) and takes the
  most relevant candidate of each occupied region of a slide (best regions first); the
  relevance branch fills the set's remaining capacity with its highest-scoring unselected
  candidates, whichever slide holds them. `budget_routing="slide"` splits the set's budget over
  its slides first and runs both branches inside each slide (the earlier, stricter reading).
  The branches are merged, de-duplicated and put back in slide order.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_generators._selection import RELEVANCE_CHOICES, RELEVANCE_OPTIONS
from pathkit_tasks.vqa.selection import EvidencePool, Selection, Selector

CANDIDATE_CHOICES = ("linspace", "stratified")
SET_SPLITS = ("equal", "proportional")
BUDGET_ROUTINGS = ("set", "slide")


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
        from pathkit_generators._selection.relevance import fit_learned, in_text_space, text_tower

        if self.options["relevance"] == "auto":
            # the text tower only for features recorded in its image-text space (never by width alone)
            first = pools[0] if len(pools) else None
            if first is not None and in_text_space(first):
                tower = text_tower(self.options, required=False)
                if tower is not None:
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
        # "set": coverage per slide, then relevance over the whole set's remaining capacity (paper);
        # "slide": each slide's even share of the set's budget filled inside that slide
        "budget_routing": "set",
        "coverage_fraction": 0.5,  # share of a slide's budget for the coverage branch
        "region_grid": "auto",  # side of a slide's region grid: "auto" (one cell per coverage pick) or an int
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        o = self.options
        if o["candidate_choice"] not in CANDIDATE_CHOICES:
            raise PathkitError(f"selector 'pathoargus': candidate_choice {o['candidate_choice']!r}; "
                               f"choose {', '.join(CANDIDATE_CHOICES)}")
        if o["budget_routing"] not in BUDGET_ROUTINGS:
            raise PathkitError(f"selector 'pathoargus': budget_routing {o['budget_routing']!r}; "
                               f"choose {', '.join(BUDGET_ROUTINGS)}")
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

    def _coverage(self, mine: Any, mine_scores: Any, n_cover: int, coords: Any) -> Any:
        """The coverage branch in one slide: the most relevant candidate of each occupied region,
        the `n_cover` best regions (fewer when fewer regions are occupied)."""
        import numpy as np

        from pathkit_generators._selection.allocation import grid_side, group_rows, region_ids, top_rows

        if n_cover <= 0 or len(mine) == 0:
            return np.zeros(0, dtype=np.int64)
        grid = self.options["region_grid"]
        side = grid_side(n_cover) if grid == "auto" else int(grid)
        regions = group_rows(region_ids(coords[mine], side))
        best = np.asarray([r[np.argmax(mine_scores[r])] for r in regions], dtype=np.int64)
        return top_rows(mine[best], mine_scores[best], n_cover)

    def select(self, pool: EvidencePool, *, budget: int, candidates: int) -> Selection:
        import numpy as np

        from pathkit_generators._selection.allocation import top_rows, water_fill

        cands = self.candidate_pool(pool, candidates)
        scores = np.asarray(self.relevance().score(pool, cands), dtype=np.float64)
        slide_of_cand = np.asarray(pool.slide)[cands]
        sets, _ = self._slides_by_set(pool)
        by_slide = [cands[slide_of_cand == j] for j in range(pool.n_slides)]
        score_of = [scores[slide_of_cand == j] for j in range(pool.n_slides)]
        coords = np.asarray(pool.coords)
        fraction = float(self.options["coverage_fraction"])
        chosen: list[Any] = []
        if self.options["budget_routing"] == "slide":
            budgets = self._routed(budget, [[by_slide[j] for j in slides] for slides in sets])
            for slides, shares in zip(sets, budgets, strict=True):
                for j, share in zip(slides, shares, strict=True):
                    if share == 0:
                        continue
                    cover = self._coverage(by_slide[j], score_of[j], int(round(share * fraction)), coords)
                    rest = ~np.isin(by_slide[j], cover)
                    chosen.extend((cover, top_rows(by_slide[j][rest], score_of[j][rest], share - len(cover))))
        else:
            per_set = self._split_sets(budget, [sum(len(by_slide[j]) for j in slides) for slides in sets])
            for slides, share in zip(sets, per_set, strict=True):
                if share == 0:
                    continue
                # the coverage share rounds down (the relevance branch takes what it leaves) and is
                # split evenly over the slides, a remainder going to the slides whose best candidate
                # is most relevant (query-aware coverage), not to the earlier ones
                order = sorted(range(len(slides)), key=lambda k: (-_best(score_of[slides[k]]), k))
                ranked = water_fill(int(share * fraction), [len(by_slide[slides[k]]) for k in order])
                cover_shares = [0] * len(slides)
                for k, n in zip(order, ranked, strict=True):
                    cover_shares[k] = n
                cover = [self._coverage(by_slide[j], score_of[j], n, coords)
                         for j, n in zip(slides, cover_shares, strict=True)]
                mine = np.concatenate([by_slide[j] for j in slides])
                mine_scores = np.concatenate([score_of[j] for j in slides])
                taken = np.concatenate(cover) if cover else np.zeros(0, dtype=np.int64)
                rest = ~np.isin(mine, taken)
                chosen.extend((taken, top_rows(mine[rest], mine_scores[rest], share - len(taken))))
        indices = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
        return Selection.of(indices, pool, n_scored=len(cands), facts=self.facts())


def _best(scores: Any) -> float:
    return float(scores.max()) if len(scores) else float("-inf")


@hookimpl
def register_selectors(register):
    register(UniformSelector)
    register(FlatTopKSelector)
    register(PathoArgusSelector)
