"""Evidence under a budget for `multiple-choice-vqa`: the selection protocol a dataset sets, the
items that carry each question's selected features, the evidence record of every prediction
(what was kept, whether planted evidence survived) and the budget summary (paper table 4).

The protocol (PathoArgus paper, section 5; docs/pathoargus.md): a reader sees at most K = 512 of a question's N patch
features and the selector scores at most M = 10,000 candidates. A dataset changes it with the
options `selector`, `budget` (K), `candidates` (M), `selector_options` (a JSON object of the
selector's own options) and `audit_selectors` (selectors whose accessibility of planted evidence
is measured beside the run's own; default: every registered selector when the test cases carry
evidence); a dataset class may declare its own defaults as `selection_defaults`.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pathkit_core.contracts import Case, Dataset, PathkitError, RunFacts
from pathkit_tasks.vqa.selection import EvidencePool, Selection, Selector

# The task's defaults, under a dataset's `task_defaults` and the user's options: a dataset that names
# no selector gets the uniform one (the benchmarks name theirs).
PROTOCOL_DEFAULTS: dict[str, Any] = {"selector": "uniform", "budget": 512, "candidates": 10_000,
                                     "selector_options": {}, "audit_selectors": None}
# Selected items kept in memory (the rest are selected again from their files when read).
CACHE_BYTES = 2 << 30
# Paper table 4: the fraction of questions above these feature counts.
TABLE4_THRESHOLDS = (10_000, 50_000)


@dataclass(frozen=True)
class SelectionProtocol:
    selector: str
    budget: int
    candidates: int
    selector_options: dict[str, Any] = field(default_factory=dict)
    audit: tuple[str, ...] = ()
    # K values the test questions are also answered at (`budget=64,128,256,512`: the reader is
    # trained at the largest, `budget`, and answers each test question once per K)
    sweep: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def selection_protocol(dataset: Dataset) -> SelectionProtocol:
    """The dataset's selection settings: PROTOCOL_DEFAULTS < `Dataset.task_defaults` < its options."""
    values = {**PROTOCOL_DEFAULTS, **dict(dataset.task_defaults)}
    options = dataset.options
    values.update({k: options[k] for k in PROTOCOL_DEFAULTS if options.get(k) is not None})
    name = dataset.name if dataset is not None else "?"
    budget, candidates = values["budget"], values["candidates"]
    sweep = budget_sweep(budget, name)
    if sweep:
        budget = max(sweep)
    for key, value in (("budget", budget), ("candidates", candidates)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PathkitError(f"dataset {name!r}: option {key}={value!r} must be a positive number of features")
    if candidates < budget:
        raise PathkitError(f"dataset {name!r}: candidates (M = {candidates}) must be at least the budget "
                           f"(K = {budget})")
    sel_options = values["selector_options"] or {}
    if not isinstance(sel_options, Mapping):
        raise PathkitError(f"dataset {name!r}: selector_options must be a JSON object, got {sel_options!r}")
    audit = values["audit_selectors"]
    if isinstance(audit, str):
        audit = [a.strip() for a in audit.split(",") if a.strip()]
    return SelectionProtocol(str(values["selector"]), budget, candidates, dict(sel_options),
                             tuple(audit) if audit is not None else (), sweep)


def budget_sweep(value: Any, dataset: str) -> tuple[int, ...]:
    """The K values of a budget given as several ("64,128,256,512" or a list), ascending; () for one K."""
    if isinstance(value, str) and "," in value:
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, list | tuple):
        parts = list(value)
    else:
        return ()
    try:
        ks = sorted({int(p) for p in parts})
    except (TypeError, ValueError):
        raise PathkitError(f"dataset {dataset!r}: option budget={value!r}: a K sweep lists positive whole numbers, "
                           "e.g. budget=64,128,256,512") from None
    if not ks or ks[0] < 1 or any(isinstance(p, bool) for p in parts):
        raise PathkitError(f"dataset {dataset!r}: option budget={value!r}: every K must be a positive number of "
                           "features")
    return tuple(ks)


def _audit_names(protocol: SelectionProtocol, dataset: Dataset, cases: Sequence[Case]) -> tuple[str, ...]:
    """The audited selectors: the dataset's `audit_selectors` if it sets them, else every
    registered selector when the cases carry planted evidence, else none."""
    given = [dataset.task_defaults, dataset.options]
    if any(g.get("audit_selectors") is not None for g in given):
        return protocol.audit
    if not any(c.meta.get("evidence") for c in cases):
        return ()
    from pathkit_core.plugins import get_plugin_manager

    return tuple(get_plugin_manager().names("selector"))


# --------------------------------------------------------------------------- selectors of a run


class _Selectors:
    """The run's selector and the audited ones, made once per dataset and fitted on the train split."""

    def __init__(self, protocol: SelectionProtocol) -> None:
        from pathkit_core.plugins import get_plugin_manager

        registry = get_plugin_manager()
        self.protocol = protocol
        self.by_name: dict[str, Selector] = {}
        for name in dict.fromkeys((protocol.selector, *protocol.audit)):
            cls = registry.get("selector", name)
            options = protocol.selector_options if name == protocol.selector else {}
            self.by_name[name] = cls(**options)  # type: ignore[call-arg]
        self.fitted = False

    @property
    def main(self) -> Selector:
        return self.by_name[self.protocol.selector]

    def fit(self, entries: Sequence[QuestionEntry], facts: RunFacts) -> None:
        if self.fitted:
            return
        self.fitted = True
        pools = _LazyPools(entries)
        answers = [e.target for e in entries]
        data_key = _data_key(entries)
        for selector in self.by_name.values():
            if selector.needs_fit:
                # a selector that cannot learn from what it is given (no train split) says so itself
                selector.fit(pools, answers, cache_dir=Path(facts.workdir) / "selectors", seed=facts.seed,
                             data_key=data_key)


def _data_key(entries: Sequence[QuestionEntry]) -> str:
    from pathkit_core.run.identity import features_identity
    from pathkit_core.workspace import content_hash

    return content_hash({"features": features_identity({e.case_id: e.files for e in entries}),
                         "questions": [[e.case_id, e.question, list(e.choices), list(e.slide_sets), e.target]
                                       for e in entries]}, length=32)


_RUN_SELECTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _selectors_for(dataset: Dataset, facts: RunFacts, cases: Sequence[Case]) -> _Selectors:
    """One `_Selectors` per opened dataset and encoder: its train, val and test items share the
    fitted state. The audited selectors are decided by the first split asked for (train)."""
    protocol = selection_protocol(dataset)
    per_dataset = _RUN_SELECTORS.setdefault(dataset, {})
    key = (facts.encoder, repr(protocol))
    if key not in per_dataset:
        per_dataset[key] = _Selectors(replace(protocol, audit=_audit_names(protocol, dataset, cases)))
    return per_dataset[key]


# --------------------------------------------------------------------------- items


@dataclass(frozen=True)
class QuestionEntry:
    """One question's feature files, the candidate set of each, the model target, the meta a
    reader sees and the metric-only planted evidence."""

    case_id: str
    files: tuple[Path, ...]
    slide_sets: tuple[int, ...]
    target: Any
    meta: Mapping[str, Any]
    question: str
    choices: tuple[str, ...]
    evidence: Mapping[str, Any] | None = None


_VERIFIED: set[str] = set()


def load_pool(entry: QuestionEntry) -> tuple[EvidencePool, list[dict[str, Any]], list[float]]:
    """The question's pool (rows in slide order, stored dtype kept), the geometry of each feature
    file and each file's tile side in level-0 pixels (0 when unknown)."""
    import torch

    from pathkit_core.features.store import load_feature_file
    from pathkit_core.training.bags import GEOMETRY_KEYS

    feats, coords, slide, geometry, tile_px0, spaces = [], [], [], [], [], set()
    for ordinal, path in enumerate(entry.files):
        verify = str(path) not in _VERIFIED  # the checksum is checked once per file and process
        loaded = load_feature_file(path, verify=verify)
        _VERIFIED.add(str(path))
        f = torch.as_tensor(loaded.features)
        feats.append(f)
        c = loaded.coords
        coords.append(torch.as_tensor(c).to(torch.int64) if c is not None
                      else torch.zeros(len(f), 2, dtype=torch.int64))
        slide.append(torch.full((len(f),), ordinal, dtype=torch.int64))
        meta = {k: loaded.meta[k] for k in GEOMETRY_KEYS if loaded.meta.get(k)}
        geometry.append(meta)
        tile_px0.append(float(meta.get("tile_px_level0") or meta.get("tile_px") or 0.0))
        spaces.add(str(loaded.meta.get("joint_space") or ""))
    widths = {int(f.shape[1]) for f in feats}
    if len(widths) > 1:
        raise PathkitError(f"case {entry.case_id!r}: its feature files have different widths {sorted(widths)}")
    pool = EvidencePool(torch.cat(feats) if len(feats) > 1 else feats[0], torch.cat(coords).numpy(),
                        torch.cat(slide).numpy(), entry.slide_sets, entry.question, entry.choices, entry.case_id,
                        # a joint space only when every file records the same one
                        spaces.pop() or None if len(spaces) == 1 else None)
    return pool, geometry, tile_px0


class _LazyPools(Sequence):
    """The train pools for `Selector.fit`, loaded one at a time."""

    def __init__(self, entries: Sequence[QuestionEntry]) -> None:
        self.entries = list(entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return load_pool(self.entries[index])[0]


class EvidenceItems:
    """Map-style items of one split: each question's selected features (at most K rows, in slide
    order) with "tile_set" (candidate set of each row) and "selection" (allocation) beside the
    usual item keys. Selections are made on first access and kept (`CACHE_BYTES` of them)."""

    def __init__(self, entries: Sequence[QuestionEntry], selectors: _Selectors, *, targets: bool) -> None:
        self.entries = list(entries)
        self.selectors = selectors
        self.with_targets = targets
        self._index = {e.case_id: i for i, e in enumerate(self.entries)}
        self._cache: dict[int, dict[str, Any]] = {}
        self._records: dict[int, dict[str, Any]] = {}
        self._audit: dict[str, dict[str, bool]] | None = None
        self._bytes = 0

    @property
    def case_ids(self) -> list[str]:
        return [e.case_id for e in self.entries]

    @property
    def targets(self) -> dict[str, Any]:
        return {e.case_id: e.target for e in self.entries}

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> dict[str, Any]:
        if index in self._cache:
            return self._cache[index]
        item = self._select(index)
        size = int(item["features"].numel()) * 4
        if self._bytes + size <= CACHE_BYTES:
            self._cache[index] = item
            self._bytes += size
        return item

    def _select(self, index: int) -> dict[str, Any]:
        import torch

        entry = self.entries[index]
        pool, geometry, tile_px0 = load_pool(entry)
        protocol = self.selectors.protocol
        selection = self.selectors.main.select(pool, budget=protocol.budget, candidates=protocol.candidates)
        _check_selection(selection, pool, protocol, self.selectors.main.name)
        rows = torch.as_tensor(selection.indices, dtype=torch.int64)
        slide = torch.as_tensor(pool.slide)[rows]
        starts = _file_starts(pool)
        record = {"selector": protocol.selector, "budget": protocol.budget, "candidates": protocol.candidates,
                  "relevance": selection.facts.get("relevance"),
                  "n_available": pool.n, "n_selected": int(rows.numel()), "n_scored": int(selection.n_scored),
                  "per_set": list(selection.per_set), "per_slide": list(selection.per_slide),
                  "tile_file": slide.tolist(), "tile_index": (rows - torch.as_tensor(starts)[slide]).tolist()}
        if entry.evidence:
            record["accessible"] = evidence_accessible(entry.evidence, selection, pool, tile_px0)
        self._records[index] = record
        sets = torch.as_tensor(pool.slide_sets, dtype=torch.int64)
        return {"case_id": entry.case_id, "features": torch.as_tensor(pool.rows(selection.indices)),
                "coords": torch.as_tensor(pool.coords)[rows], "tile_index": torch.as_tensor(record["tile_index"]),
                "tile_file": slide, "tile_set": sets[slide], "target": entry.target, "meta": entry.meta,
                "geometry": geometry, "selection": {k: record[k] for k in ("n_available", "per_set", "per_slide")}}

    def at_budget(self, budget: int) -> EvidenceItems:
        """The same questions and fitted selectors with K = `budget` (a point of the K sweep)."""
        selectors = copy.copy(self.selectors)
        selectors.protocol = replace(self.selectors.protocol, budget=budget)
        return EvidenceItems(self.entries, selectors, targets=self.with_targets)

    def record(self, case_id: str) -> dict[str, Any]:
        """The evidence record of a question's selection (selected first if it was not yet)."""
        index = self._index[case_id]
        if index not in self._records:
            self._select(index)
        return self._records[index]

    def audit(self) -> dict[str, dict[str, bool]]:
        """Per question with planted evidence: whether each audited selector keeps it accessible
        (worked out once; selections are repeatable, so every checkpoint's predictions share it,
        and the run's own selector's verdict is its selection's when that was already made)."""
        if self._audit is not None:
            return self._audit
        names = [n for n in self.selectors.protocol.audit]
        protocol = self.selectors.protocol
        out: dict[str, dict[str, bool]] = {}
        for index, entry in enumerate(self.entries):
            if not names or not entry.evidence:
                continue
            pool, _, tile_px0 = load_pool(entry)
            out[entry.case_id] = {}
            for name in names:
                made = self._records.get(index)
                if name == protocol.selector and made is not None and "accessible" in made:
                    out[entry.case_id][name] = bool(made["accessible"])
                    continue
                selection = self.selectors.by_name[name].select(pool, budget=protocol.budget,
                                                                candidates=protocol.candidates)
                _check_selection(selection, pool, protocol, name)
                out[entry.case_id][name] = bool(evidence_accessible(entry.evidence, selection, pool, tile_px0))
        self._audit = out
        return out


def _file_starts(pool: EvidencePool) -> list[int]:
    import numpy as np

    counts = np.bincount(np.asarray(pool.slide, dtype=np.int64), minlength=pool.n_slides)
    return [0, *np.cumsum(counts)[:-1].tolist()]


def _check_selection(selection: Any, pool: EvidencePool, protocol: SelectionProtocol, name: str) -> None:
    if not isinstance(selection, Selection):
        raise PathkitError(f"selector {name!r} returned {type(selection).__name__}, not a Selection")
    n = len(selection.indices)
    if n > protocol.budget or n == 0 and pool.n > 0:
        raise PathkitError(f"selector {name!r} kept {n} features of case {pool.case_id!r}; "
                           f"the budget is 1..{protocol.budget}")
    if selection.n_scored > protocol.candidates:
        raise PathkitError(f"selector {name!r} scored {selection.n_scored} candidates of case {pool.case_id!r}; "
                           f"at most M = {protocol.candidates} are allowed")


def evidence_items(cases: Sequence[Case], inputs: Mapping[str, Any], dataset: Dataset, facts: RunFacts, *,
                   targets: bool) -> EvidenceItems:
    """The split's items; the first call with targets (the train split) fits the selectors."""
    from pathkit_tasks.vqa.cases import reader_meta, slide_sets

    selectors = _selectors_for(dataset, facts, cases)
    entries = []
    for case in cases:
        files = inputs.get(case.case_id)
        if files is None:
            continue
        if not isinstance(files, tuple):
            raise PathkitError(f"case {case.case_id!r}: multiple-choice VQA reads feature files, not whole images")
        entries.append(QuestionEntry(case.case_id, tuple(Path(f) for f in files), slide_sets(case),
                                     case.target if targets else None, reader_meta(case.meta),
                                     str(case.meta["question"]), tuple(case.meta["choices"]),
                                     case.meta.get("evidence")))
    if targets:
        selectors.fit(entries, facts)
    return EvidenceItems(entries, selectors, targets=targets)


# --------------------------------------------------------------------------- evidence records


def evidence_accessible(evidence: Mapping[str, Any], selection: Selection, pool: EvidencePool,
                        tile_px0: Sequence[float]) -> bool:
    """Whether planted evidence survives a selection: some selected tile covers at least
    `min_overlap` (default half) of its area inside one of the evidence `regions` (level-0 boxes
    of a slide), and every candidate set listed in `sets` keeps at least one tile (an ESG
    absence row is only decidable when every set was seen)."""
    import numpy as np

    ok = True
    regions = evidence.get("regions") or ()
    if regions:
        rows = np.asarray(selection.indices, dtype=np.int64)
        slides = np.asarray(pool.slide, dtype=np.int64)[rows]
        xy = np.asarray(pool.coords, dtype=np.float64)[rows]
        side = np.asarray([tile_px0[s] if tile_px0[s] > 0 else 1.0 for s in slides], dtype=np.float64)
        need = float(evidence.get("min_overlap", 0.5))
        hit = False
        for region in regions:
            x0, y0, x1, y1 = (float(v) for v in region["box"])
            mine = slides == int(region["slide"])
            ox = np.clip(np.minimum(xy[:, 0] + side, x1) - np.maximum(xy[:, 0], x0), 0, None)
            oy = np.clip(np.minimum(xy[:, 1] + side, y1) - np.maximum(xy[:, 1], y0), 0, None)
            if np.any(mine & (ox * oy >= need * side * side)):
                hit = True
                break
        ok = hit
    for s in evidence.get("sets") or ():
        ok = ok and selection.per_set[int(s)] > 0
    return bool(ok)


def attach_evidence(raw: Mapping[str, Any], items: Any) -> dict[str, Any]:
    """Each raw prediction as a dict with its question's "evidence" record (and, for questions
    with planted evidence, "accessible_by": the audited selectors' accessibility)."""
    if not isinstance(items, EvidenceItems):
        return dict(raw)
    audit = items.audit()
    out = {}
    for case_id, prediction in raw.items():
        pred = dict(prediction) if isinstance(prediction, Mapping) else {"answer": prediction}
        record = dict(items.record(case_id))
        if case_id in audit:
            record["accessible_by"] = audit[case_id]
        pred["evidence"] = record
        out[case_id] = pred
    return out


def sweep_predictions(predict: Any, items: Any) -> dict[str, dict[str, Any]]:
    """Per test question, its answer at every K of the protocol's sweep other than the run's own:
    {case id: {K: raw prediction}}; `predict(items)` answers a split's items."""
    if not isinstance(items, EvidenceItems):
        return {}
    protocol = items.selectors.protocol
    out: dict[str, dict[str, Any]] = {}
    for budget in protocol.sweep:
        if budget == protocol.budget:
            continue
        for case_id, prediction in predict(items.at_budget(budget)).items():
            out.setdefault(case_id, {})[str(budget)] = prediction
    return out


def budget_summary(predictions: Mapping[str, Any]) -> dict[str, Any]:
    """Available and selected features over the questions (PathoArgus table 4): totals, the
    retention rate (selected / available), the distribution of N and the share above 10k / 50k."""
    import numpy as np

    records = [p["evidence"] for p in predictions.values()
               if isinstance(p, Mapping) and isinstance(p.get("evidence"), Mapping)]
    if not records:
        return {}
    available = np.asarray([r["n_available"] for r in records], dtype=np.int64)
    selected = np.asarray([r["n_selected"] for r in records], dtype=np.int64)
    out: dict[str, Any] = {
        "selector": records[0].get("selector"), "relevance": records[0].get("relevance"),
        "budget_K": records[0].get("budget"),
        "candidates_M": records[0].get("candidates"), "questions": len(records),
        "available_total": int(available.sum()), "selected_total": int(selected.sum()),
        "retention": float(selected.sum() / max(int(available.sum()), 1)),
        "available_mean": float(available.mean()), "available_median": float(np.median(available)),
        "available_p99": float(np.percentile(available, 99)), "available_max": int(available.max()),
        "selected_mean": float(selected.mean()),
    }
    for threshold in TABLE4_THRESHOLDS:
        out[f"above_{threshold}_fraction"] = float((available > threshold).mean())
    return out
