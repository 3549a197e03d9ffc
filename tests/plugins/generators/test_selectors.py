"""Evidence selectors: budget arithmetic, the flat top-K, PathoArgus routing (every set and slide
kept, unused capacity reassigned, region coverage, relevance fill, slide order), planted evidence
a flat selector loses, and the learned relevance learning where the evidence is."""

from __future__ import annotations

import numpy as np
import pytest

from pathkit_core.contracts import PathkitError
from pathkit_tasks.vqa.selection import EvidencePool

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Oracle:
    """Relevance = feature 0 (what a perfect question embedding would give)."""

    name = "oracle"

    def score(self, pool, rows):
        return pool.rows(rows)[:, 0].astype(np.float64)

    def facts(self):
        return {"relevance": self.name}


def _selector(cls_name, **options):
    from pathkit_generators import selectors

    selector = {"uniform": selectors.UniformSelector, "flat-topk": selectors.FlatTopKSelector,
                "pathoargus": selectors.PathoArgusSelector}[cls_name](**options)
    selector._relevance = Oracle()
    return selector


def _grid(n, origin=0):
    side = int(np.ceil(np.sqrt(n)))
    return np.array([((i % side) * 128 + origin, (i // side) * 128) for i in range(n)])


def _pool(sizes, sets, hot=None, dim=8, seed=0):
    """Slides of `sizes` rows on a grid; `hot` = {slide: rows} whose feature 0 is the evidence signal."""
    rng = np.random.default_rng(seed)
    feats, coords, slide = [], [], []
    for j, n in enumerate(sizes):
        f = rng.normal(0, 0.1, size=(n, dim)).astype(np.float16)
        for r in (hot or {}).get(j, ()):
            f[r, 0] = 5.0
        feats.append(f)
        coords.append(_grid(n))
        slide.append(np.full(n, j))
    return EvidencePool(np.concatenate(feats), np.concatenate(coords), np.concatenate(slide), tuple(sets),
                        "Which lesion?", ("a", "b", "c", "d"), "case")


def test_water_fill_reassigns_what_a_small_bin_cannot_take():
    from pathkit_generators._selection.allocation import evenly_spaced, proportional_split, water_fill

    assert water_fill(12, [100]) == [12]  # a single set gets the whole budget
    assert water_fill(12, [100, 100, 2]) == [5, 5, 2]  # the small set's unused share goes to the others
    assert water_fill(10, [3, 3, 3]) == [3, 3, 3]  # never more than there is
    assert water_fill(7, [10, 10, 10]) == [3, 2, 2]  # remainders to the earlier bins
    assert proportional_split(10, [80, 15, 5]) == [8, 2, 0]
    assert evenly_spaced(np.arange(10), 4).tolist() == [0, 3, 6, 9]  # np.linspace floored, as SlideChat
    assert evenly_spaced(np.arange(3), 5).tolist() == [0, 1, 2]


def test_uniform_and_flat_topk_by_hand():
    pool = _pool([10, 10], [0, 0], hot={1: [0, 3, 4, 9]})
    uniform = _selector("uniform").select(pool, budget=4, candidates=8)
    assert uniform.indices.tolist() == [0, 6, 12, 19] and uniform.n_scored == 0
    flat = _selector("flat-topk").select(pool, budget=3, candidates=7)
    # candidates: rows 0, 3, 6, 9, 12, 15, 19 (evenly spaced over the flat list); the 3 best of them
    assert flat.n_scored == 7
    assert set(flat.indices.tolist()) >= {19} and 14 not in flat.indices  # row 14 (hot) was never a candidate
    assert flat.per_slide[1] >= 1 and flat.indices.tolist() == sorted(flat.indices.tolist())


def test_pathoargus_keeps_every_set_and_slide_and_restores_order():
    pool = _pool([200, 150, 6, 30], [0, 0, 1, 2])
    selection = _selector("pathoargus").select(pool, budget=12, candidates=48)
    assert len(selection.indices) == 12 and selection.n_scored <= 48
    assert all(c > 0 for c in selection.per_set) and all(c > 0 for c in selection.per_slide)
    assert selection.per_set == [4, 4, 4]  # an even split across sets
    assert selection.indices.tolist() == sorted(selection.indices.tolist())
    # a set smaller than its share gives the rest away
    small = _pool([200, 2], [0, 1])
    routed = _selector("pathoargus").select(small, budget=12, candidates=48)
    assert routed.per_set == [10, 2]
    proportional = _selector("pathoargus", set_split="proportional").select(pool, budget=12, candidates=48)
    assert proportional.per_set[0] > proportional.per_set[2]


def test_pathoargus_coverage_branch_spreads_over_regions():
    # relevance rises to the right: a pure top-K takes the right edge only
    pool = _pool([100], [0])
    pool.features[:, 0] = np.asarray(pool.coords[:, 0] / 1000.0, dtype=np.float16)
    flat = _selector("flat-topk").select(pool, budget=8, candidates=100)
    routed = _selector("pathoargus", coverage_fraction=0.5, region_grid=2).select(pool, budget=8, candidates=100)
    xs = np.asarray(pool.coords)[:, 0]
    assert xs[flat.indices].min() >= 768  # every flat pick in the two right-most columns
    assert xs[routed.indices].min() < 640  # the coverage branch took the best of the left regions too
    only_relevance = _selector("pathoargus", coverage_fraction=0.0).select(pool, budget=8, candidates=100)
    assert sorted(only_relevance.indices.tolist()) == sorted(flat.indices.tolist())


def test_planted_evidence_in_a_small_slide_survives_routing_but_not_the_flat_list():
    # CSI-like: two large slides and a small biopsy holding the only evidence (4 of its 16 rows)
    lost, kept = 0, 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        hot = rng.choice(16, size=4, replace=False).tolist()
        order = rng.permutation(3)
        sizes = np.array([150, 150, 16])[order]
        pool = _pool(sizes.tolist(), [0, 0, 0], hot={int(np.flatnonzero(order == 2)[0]): hot}, seed=seed)
        small = int(np.flatnonzero(order == 2)[0])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        evidence = {starts[small] + r for r in hot}
        flat = _selector("flat-topk").select(pool, budget=12, candidates=48)
        routed = _selector("pathoargus").select(pool, budget=12, candidates=48)
        lost += not evidence & set(flat.indices.tolist())
        kept += bool(evidence & set(routed.indices.tolist()))
    assert kept == 20  # every slide gets its share of M, and the biopsy has fewer rows than its share
    assert lost >= 8  # M = 48 evenly over 316 rows scores about 2 of the biopsy's 16


def test_option_checks():
    from pathkit_generators.selectors import PathoArgusSelector

    for options, message in (({"candidate_choice": "best"}, "candidate_choice"), ({"set_split": "x"}, "set_split"),
                             ({"coverage_fraction": 2}, "coverage_fraction"), ({"region_grid": 0}, "region_grid"),
                             ({"relevance": "psychic"}, "relevance"), ({"grid": 3}, "has no option"),
                             ({"budget_routing": "global"}, "budget_routing")):
        with pytest.raises(PathkitError, match=message):
            PathoArgusSelector(**options)
    with pytest.raises(PathkitError, match="has not learned its relevance"):
        PathoArgusSelector().select(_pool([4], [0]), budget=2, candidates=4)


def test_text_tower_relevance_says_where_it_looked(tmp_path, monkeypatch):
    from pathkit_generators.selectors import FlatTopKSelector

    monkeypatch.setenv("PATHKIT_WEIGHTS_DIR", str(tmp_path))
    selector = FlatTopKSelector(relevance="text-tower")
    assert selector.needs_fit is False
    with pytest.raises(PathkitError, match="needs the CONCH v1 checkpoint"):
        selector.select(_pool([4], [0]), budget=2, candidates=4)


LESIONS = ("adenocarcinoma", "lymphoma", "melanoma", "sarcoma", "mucinous tumour", "squamous carcinoma")


def _lesion_pools(n, seed):
    """Questions whose answer lesion shows in 5 of 40 rows, as a lesion-specific feature direction."""
    rng = np.random.default_rng(seed)
    directions = np.random.default_rng(123).normal(size=(len(LESIONS), 16))  # one look per lesion, every split
    pools, answers, hot = [], [], []
    for _ in range(n):
        lesion = int(rng.integers(len(LESIONS)))
        feats = rng.normal(0, 1.0, size=(40, 16))
        rows = rng.choice(40, size=5, replace=False)
        feats[rows] += 3.0 * directions[lesion]
        others = [k for k in range(len(LESIONS)) if k != lesion]
        choices = [LESIONS[k] for k in rng.choice(others, size=3, replace=False)]
        position = int(rng.integers(4))
        choices.insert(position, LESIONS[lesion])
        pools.append(EvidencePool(feats.astype(np.float16), _grid(40), np.zeros(40, dtype=np.int64), (0,),
                                  "Which lesion is present?", tuple(choices), "q"))
        answers.append(position)
        hot.append(set(rows.tolist()))
    return pools, answers, hot


def test_learned_relevance_learns_where_the_evidence_is(tmp_path):
    from pathkit_generators.selectors import FlatTopKSelector

    pools, answers, _ = _lesion_pools(80, seed=0)
    selector = FlatTopKSelector(relevance="learned", relevance_epochs=25)
    selector.fit(pools, answers, cache_dir=tmp_path, seed=0, data_key="k1")
    assert selector.facts()["relevance"] == "learned-projection"
    test_pools, _, hot = _lesion_pools(30, seed=1)
    hits = [len(hot[i] & set(selector.select(p, budget=5, candidates=40).indices.tolist())) for i, p in
            enumerate(test_pools)]
    assert np.mean(hits) >= 3.5  # chance: 5 * 5 / 40 = 0.6 of the 5 evidence rows
    # the second fit on the same data is read back from the cache
    cached = list(tmp_path.glob("learned-relevance-*.safetensors"))
    assert len(cached) == 1
    again = FlatTopKSelector(relevance="learned", relevance_epochs=25)
    again.fit(pools, answers, cache_dir=tmp_path, seed=0, data_key="k1")
    np.testing.assert_allclose(again._relevance.weight, selector._relevance.weight)


def test_learned_relevance_needs_single_set_train_questions():
    from pathkit_generators.selectors import PathoArgusSelector

    pool = _pool([5, 5], [0, 1])
    with pytest.raises(PathkitError, match="one candidate set"):
        PathoArgusSelector(relevance="learned").fit([pool], [0], cache_dir=None, seed=0, data_key=None)
    with pytest.raises(PathkitError, match="one candidate set"):
        PathoArgusSelector(relevance="learned").fit([], [], cache_dir=None, seed=0, data_key=None)


# --------------------------------------------------------------------------- set-level routing


def test_set_level_routing_sends_the_remaining_capacity_where_the_relevance_is():
    """One set of three slides, every relevant patch in slide 0 (issue 27's check). The paper's
    routing: coverage first (half of the set's budget, rounded down, evenly over the slides, the
    remainder to the slide with the most relevant candidate), then relevance over the whole set's
    remaining capacity, which all lands in slide 0: 171 -> coverage 85 = 29 + 28 + 28, relevance
    86 -> slide 0 holds 29 + 86 = 115 > 2/3 of 171, wherever it sits in the set."""
    pool = _pool([2000, 2000, 2000], [0, 0, 0], hot={0: range(2000)})
    routed = _selector("pathoargus").select(pool, budget=171, candidates=10_000)
    assert routed.per_slide == [115, 28, 28] and routed.per_slide[0] > 2 * 171 / 3
    assert len(routed.indices) == 171 and routed.per_set == [171]
    # the named option keeps the per-slide split: each slide's even share filled inside it
    per_slide = _selector("pathoargus", budget_routing="slide").select(pool, budget=171, candidates=10_000)
    assert per_slide.per_slide == [57, 57, 57]
    # the relevant slide last: it still takes the relevance branch's whole share
    last = _pool([2000, 2000, 2000], [0, 0, 0], hot={2: range(2000)})
    assert _selector("pathoargus").select(last, budget=171, candidates=10_000).per_slide == [28, 28, 115]


# Selections of the per-slide routing before set-level routing existed (the selector's code at the
# commit before it, same pools): the option reproduces them row for row.
PER_SLIDE_BEFORE = {0: ([11, 11, 11, 10, 11, 10], "d06114db2b1641e5"),
                    1: ([11, 11, 11, 10, 11, 10], "9312c1da44bae603"),
                    2: ([11, 11, 11, 10, 11, 10], "1bafe368c89ee639")}


@pytest.mark.parametrize("seed", sorted(PER_SLIDE_BEFORE))
def test_per_slide_routing_option_reproduces_the_earlier_selections(seed):
    import hashlib

    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 300, size=6).tolist()
    hot = {int(j): rng.choice(sizes[j], size=min(5, sizes[j]), replace=False).tolist() for j in range(6)}
    pool = _pool(sizes, [0, 0, 1, 1, 2, 2], hot=hot, seed=seed)
    sel = _selector("pathoargus", budget_routing="slide").select(pool, budget=64, candidates=400)
    digest = hashlib.sha256(np.asarray(sel.indices, dtype=np.int64).tobytes()).hexdigest()[:16]
    assert (sel.per_slide, digest) == PER_SLIDE_BEFORE[seed]
    routed = _selector("pathoargus").select(pool, budget=64, candidates=400)
    assert routed.per_set == sel.per_set  # both split K over the sets the same way


def test_set_level_coverage_keeps_every_slide_represented():
    pool = _pool([300, 300, 300, 300], [0, 0, 1, 1], hot={0: range(300), 2: range(300)})
    routed = _selector("pathoargus").select(pool, budget=40, candidates=1200)
    assert routed.per_set == [20, 20] and all(c >= 5 for c in routed.per_slide)
    assert routed.per_slide[0] > routed.per_slide[1] and routed.per_slide[2] > routed.per_slide[3]
    none = _selector("pathoargus", coverage_fraction=0.0).select(pool, budget=40, candidates=1200)
    assert none.per_slide == [20, 0, 20, 0]  # relevance alone: the hot slide of each set


# --------------------------------------------------------------------------- text relevance and feature spaces


class _Tower:
    """A stand-in for the CONCH text tower (its files are not on a test machine)."""

    name = "text-tower"

    def __init__(self):
        from pathkit_generators._selection.relevance import TextTowerRelevance

        class Embedder:
            dim = 8
            weights = "conch/pytorch_model.bin"

            def embed(self, texts):
                import torch

                return torch.ones(len(texts), 8)

        self.inner = TextTowerRelevance(Embedder())

    def facts(self):
        return self.inner.facts()

    def score(self, pool, rows):
        return self.inner.score(pool, rows)


def _spaced(pool, space):
    from dataclasses import replace

    return replace(pool, joint_space=space)


def test_auto_relevance_uses_the_text_tower_only_for_features_in_its_joint_space(monkeypatch, tmp_path):
    from pathkit_generators import selectors
    from pathkit_generators._selection import relevance

    monkeypatch.setattr(relevance, "text_tower", lambda options, required: _Tower())
    pools, answers, _ = _lesion_pools(12, seed=0)
    pools = [_spaced(p, None) for p in pools]  # 16-d "CONCH v1 without its projection": no record
    learned = selectors.FlatTopKSelector(relevance_epochs=2)
    learned.fit(pools, answers, cache_dir=None, seed=0, data_key=None)
    assert learned.facts()["relevance"] == "learned-projection"
    projected = [_spaced(p, "conch-v1") for p in _lesion_pools(2, seed=1)[0]]
    tower = selectors.FlatTopKSelector()
    tower.fit(projected, [0, 1], cache_dir=None, seed=0, data_key=None)
    assert tower.facts()["relevance"] == "text-tower"


@pytest.mark.parametrize("space", [None, "plip"])
def test_text_relevance_refuses_features_outside_its_joint_space(space):
    from pathkit_generators._selection.relevance import TextTowerRelevance

    pool = _spaced(_pool([4], [0]), space)
    relevance = TextTowerRelevance(_Tower().inner.embedder)
    with pytest.raises(PathkitError, match="needs features in CONCH v1's image-text space .*case 'case'.*"
                                           "extract them with the 'conch' encoder"):
        relevance.score(pool, np.arange(4))
    assert relevance.score(_spaced(pool, "conch-v1"), np.arange(4)).shape == (4,)
