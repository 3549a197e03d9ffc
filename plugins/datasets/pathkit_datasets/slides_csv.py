"""`slides-csv`: your own slides and a table of slide, patient, label: slide classification without a plugin.

Layout (docs/file-formats.md, "Cohort tables"; docs/user-guide.md, "Your own slides"):

    <root>/cohort.csv      slide_path,patient_id,label,split,mpp,... (CSV, TSV, Parquet, JSON or JSONL;
                           option table=FILE for another name or place)
    <root>/slides/...      the slides, anywhere: slide_path is absolute or relative to the table

Required columns: `slide_path` and `label`. Optional: `patient_id` (default: the slide), `split`
(train/val/test: your split, used exactly), `mpp` (level-0 um/px over the file's), `cohort`,
`case_id` (default: the slide file name without extension); any other column is kept in the
case's meta. Class names are the labels in natural sort order (option classes=a,b to choose
it), recorded in metrics.json. Option case=patient makes one case of each patient's slides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._cards import Carded
from pathkit_datasets._protocols import SlideClassification
from pathkit_sdk.cohort import (
    COHORT_OPTIONS,
    CohortDataset,
    cell,
    check_duplicates,
    check_part_classes,
    choose_split,
    class_order,
    cohort_rows,
)

TABLE_NAMES = ("cohort.csv", "cohort.tsv", "cohort.parquet", "cohort.jsonl", "cohort.json")


class SlidesCSV(Carded, SlideClassification, CohortDataset, card="slides-csv"):
    """A folder of slides with a table of slide, patient, label (and optionally split, mpp, cohort)."""

    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *COHORT_OPTIONS,
        DatasetOption("classes", "str", None, "the class order, comma-separated (default: the labels in natural "
                      "sort order); for two classes the second is the positive one"),
    )

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        super().__init__(root, **options)
        self._classes: tuple[str, ...] = ()

    def class_names(self) -> tuple[str, ...]:
        self._ensure()
        return self._classes

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        from pathkit_core.wsi.slide import slide_id_for

        path, table = self.read_cohort_table(TABLE_NAMES, "cohort table")
        rows = cohort_rows(table, file_key="slide_path", value_key="label", default_mpp=self.mpp_option(),
                           what="cohort table")
        unlabelled = [r.place for r in rows if not cell(r.value)]
        if unlabelled:
            raise PathkitError(f"cohort table {path}: {len(unlabelled)} row(s) have no label: "
                               f"{', '.join(unlabelled[:20])}")
        for r in rows:
            r.value = cell(r.value)
        check_duplicates(rows, lambda r: str(r.file.resolve()), "slide path", path)
        # slides are stored by file name (tiles, features), so two files may not share one
        check_duplicates(rows, lambda r: slide_id_for(r.file), "slide file name", path)
        check_duplicates(rows, lambda r: r.case_id, "case id", path)
        groups, excluded = self.cohort_groups(rows, table, path)
        labels = {c: str(g.value) for c, g in groups.items()}
        self._classes = class_order(list(labels.values()), self.options.get("classes"), path)
        parts, facts = choose_split(self.name, groups, self.options, root=Path(self.root), table=path, labels=labels,
                                    excluded=excluded, normalise_id=slide_id_for)
        check_part_classes(parts, labels, f"{self.name}: {facts['description']}")
        self._split_facts = {**facts, "class_names": list(self._classes), "table": str(path),
                             "case": self.options["case"]}
        cases = {c: Case(case_id=c, patient_id=g.patient_id, target=labels[c], slides=g.files, meta=g.meta())
                 for c, g in groups.items()}
        return cases, parts, excluded


@hookimpl
def register_datasets(register):
    register(SlidesCSV)
