"""What the public slide-level benchmarks without an official split (the tcga_clinical datasets)
share: one row per slide as the publisher's files give it, then pathkit's cohort rules
(pathkit_sdk.cohort) for missing files, cases and splits, and a patient-disjoint k-fold split for
the benchmarks whose protocol is k-fold (docs/slide-benchmarks.md).

A dataset subclass implements `slide_rows()` -> (rows as `CohortRow`s, the table they came from).
Splits, in order of precedence: option `splits_file` (yours, exactly); option `folds=K` with
`fold=I` (StratifiedGroupKFold by patient: fold I is the test part, the validation part drawn the
same way from the others); else a seeded drawn split (`drawn_split`, patient-disjoint, stratified).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_sdk.cohort import (
    CaseRows,
    CohortDataset,
    CohortRow,
    check_part_classes,
    check_slide_mpps,
    class_order,
    drawn_split,
    drop_missing_files,
    file_split,
    group_rows,
    option,
    part_counts,
)

FOLD_OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("folds", "int", 0, "k of a patient-disjoint stratified k-fold split (0: no folds; the official "
                  "split where there is one, else a drawn split)"),
    DatasetOption("fold", "int", 0, "which of the k folds is the test part (0 .. folds-1)"),
)
CATALOGUE_OPTIONS: tuple[DatasetOption, ...] = (
    option("splits_file"), option("split_seed"), option("val_fraction"), option("test_fraction"),
    *FOLD_OPTIONS, option("mpp"), option("skip_missing"),
)


def require_path(root: Path, relative: str, dataset: str, layout: str, *, folder: bool = False) -> Path:
    """`root / relative`, which must exist (a folder when `folder`); else an error naming it."""
    path = root / relative
    if not (path.is_dir() if folder else path.is_file()):
        kind = "folder" if folder else "file"
        raise PathkitError(f"dataset {dataset!r}: {path} is missing (the {kind} of the download); expected layout: "
                           f"{layout}")
    return path


def fold_strata(labels: list[str], k: int) -> list[str]:
    """`labels` with every stratum of fewer than `k` members pooled into one ("other"), so that a
    k-fold split stays stratified by the strata that can fill k folds."""
    from collections import Counter

    counts = Counter(labels)
    return [label if counts[label] >= k else "other" for label in labels]


def _grouped_folds(ids: list[str], strata: dict[str, str], patients: list[str], k: int, seed: int) -> list[Any]:
    from sklearn.model_selection import StratifiedGroupKFold

    splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(splitter.split(ids, fold_strata([strata[c] for c in ids], k), patients))


def kfold_parts(name: str, cases: dict[str, CaseRows], strata: dict[str, str], *, folds: int, fold: int,
                seed: int, val_fraction: float) -> dict[str, list[str]]:
    """Patient-disjoint parts for fold `fold` of `folds` (scikit-learn StratifiedGroupKFold, shuffled
    with `seed`): that fold is the test part; of the rest, one fold of round(1 / val_fraction) is the
    validation part (stratified and grouped the same way); the others train."""
    if folds < 2 or not 0 <= fold < folds:
        raise PathkitError(f"{name}: options folds={folds} and fold={fold}: folds must be 2 or more and fold in "
                           f"0..{folds - 1}")
    ids = sorted(cases)
    groups = [cases[c].patient_id for c in ids]
    inner_k = max(2, round(1 / val_fraction)) if 0 < val_fraction < 1 else 2
    if len(set(groups)) < folds * inner_k / (inner_k - 1):
        raise PathkitError(f"{name}: {len(set(groups))} patients cannot fill {folds} folds and a validation part")
    rest, test = _grouped_folds(ids, strata, groups, folds, seed)[fold]
    rest_ids = [ids[i] for i in rest]
    train, val = _grouped_folds(rest_ids, strata, [cases[c].patient_id for c in rest_ids], inner_k, seed)[0]
    return {"train": [rest_ids[i] for i in train], "val": [rest_ids[i] for i in val],
            "test": [ids[i] for i in test]}


def fold_split(name: str, cases: dict[str, CaseRows], strata: dict[str, str],
               opts: dict[str, Any]) -> tuple[dict[str, list[str]], dict[str, Any]] | None:
    """(parts, split facts) of options `folds` / `fold` (with `split_seed` and `val_fraction`),
    or None when `folds` is 0 (the dataset's other split applies)."""
    folds = int(opts.get("folds") or 0)
    if not folds:
        return None
    seed, fold = int(opts.get("split_seed") or 0), int(opts.get("fold") or 0)
    parts = kfold_parts(name, cases, strata, folds=folds, fold=fold, seed=seed,
                        val_fraction=float(opts.get("val_fraction", 0.15)))
    description = (f"fold {fold} of {folds} (patient-disjoint StratifiedGroupKFold, seed {seed}; the "
                   "validation part one inner fold of the rest)")
    patients = {c: g.patient_id for c, g in cases.items()}
    return parts, {"source": "folds", "description": description, "folds": folds, "fold": fold, "seed": seed,
                   **part_counts(parts, patients)}


class SlideCatalogueDataset(CohortDataset):
    """A public slide benchmark read from its publisher's layout (subclasses: `slide_rows`)."""

    license: ClassVar[str] = ""
    case_rule: ClassVar[str] = "slide"  # one case per slide, or per patient
    option_table: ClassVar[tuple[DatasetOption, ...]] = CATALOGUE_OPTIONS

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        super().__init__(root, **options)
        self._classes: tuple[str, ...] = ()

    def slide_rows(self) -> tuple[list[CohortRow], Path]:
        raise NotImplementedError

    def strata(self, groups: dict[str, CaseRows]) -> dict[str, str]:
        """The labels a drawn or k-fold split is stratified by (default: the target)."""
        return {c: str(g.value) for c, g in groups.items()}

    def class_names(self) -> tuple[str, ...]:
        self._ensure()
        return self._classes

    def target_of(self, group: CaseRows) -> Any:
        return group.value

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        rows, table = self.slide_rows()
        rows, excluded = drop_missing_files(rows, skip_missing=bool(self.options.get("skip_missing")), where=table)
        if self.options.get("mpp") not in (None, ""):
            for r in rows:
                r.mpp = self.mpp_option()
        check_slide_mpps(rows, where=table, mpp_column=None)
        groups = {g.case_id: g for g in group_rows(rows, self.case_rule, table)}
        parts, facts = self.choose_parts(groups, table, excluded)
        if self.task_is_classification():
            labels = {c: str(g.value) for c, g in groups.items()}
            self._classes = self.class_order(labels, table)
            check_part_classes(parts, labels, f"{self.name}: {facts['description']}")
            facts["class_names"] = list(self._classes)
        self._split_facts = {**facts, "table": str(table), "case": self.case_rule}
        cases = {c: Case(case_id=c, patient_id=g.patient_id, target=self.target_of(g), slides=g.files, meta=g.meta())
                 for c, g in groups.items()}
        return cases, parts, excluded

    def task_is_classification(self) -> bool:
        return True

    def class_order(self, labels: dict[str, str], table: Path) -> tuple[str, ...]:
        return class_order(list(labels.values()), None, table)

    def choose_parts(self, groups: dict[str, CaseRows], table: Path,
                     excluded: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, Any]]:
        """(parts, split facts): the user's split file, k folds or a draw."""
        patients = {c: g.patient_id for c, g in groups.items()}
        opts = self.options
        if opts.get("splits_file"):
            return file_split(self.option_path("splits_file"), patients, excluded=excluded)
        found = fold_split(self.name, groups, self.strata(groups), opts)
        if found is not None:
            return found
        fractions = (float(opts.get("val_fraction", 0.15)), float(opts.get("test_fraction", 0.15)))
        return drawn_split(self.name, patients, seed=int(opts.get("split_seed") or 0), fractions=fractions,
                           workdir=opts.get("workdir"), labels=self.strata(groups))
