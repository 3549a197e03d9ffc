"""Slide-regression datasets: `purity-table`, your own slides and a table of their tumour purity,
and `demo-purity`, the same reader over synthetic slides whose purity is known.

`purity-table` is a table dataset written against the public helper API (`pathkit_sdk`,
docs/api/sdk.md) alone: `read_table`, `cohort_rows`, `drop_missing_files`, `group_rows`,
`choose_split` and `CohortDataset` give it what the built-in table datasets have, without a line of
table or split handling here: CSV, TSV, Parquet or JSON tables, paths relative to the table,
`--skip-missing`, `case=patient`, and the user's split (a `split` column or option `splits_file`)
used exactly, else a seeded patient-disjoint split kept in the workspace.

Each demo slide holds two pieces of tissue side by side: tumour (dense, large nuclei) and stroma
(sparse, small nuclei), their areas in the ratio purity : 1 - purity. The demo's layout is what a
user's own cohort looks like: `purity.csv` (columns slide_path, purity, split) and `slides/`.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption
from pathkit_example_plugin.regression import TASK_SLIDE_REGRESSION
from pathkit_sdk import (
    COHORT_OPTIONS,
    CohortDataset,
    cell,
    check_duplicates,
    check_slide_mpps,
    choose_split,
    cohort_rows,
    drop_missing_files,
    find_column,
    find_table,
    group_rows,
    read_table,
)

SLIDE_PX, MPP = 1536, 0.5
TUMOUR, STROMA = (150, 70, 150), (225, 150, 190)
SPLIT_COUNTS = {"train": 16, "val": 6, "test": 6}
TABLE_NAMES = ("purity.csv", "purity.tsv", "purity.parquet", "purity.jsonl", "purity.json")


def write_demo(folder: Path, seed: int = 0) -> Path:
    """Write the demo slides and `purity.csv` (last, so a complete table means a complete demo)."""
    from pathkit_core.workspace import atomic_write_text
    from pathkit_sdk import Blob, write_synthetic_slide

    table = folder / "purity.csv"
    if table.exists():
        return folder
    rng = random.Random(seed)
    rows = []
    for split, n in SPLIT_COUNTS.items():
        for i in range(n):
            slide_id = f"PUR_{split}_{i:02d}"
            purity = round(rng.uniform(0.1, 0.9), 3)
            # two ellipses of equal height whose widths split the tissue area purity : 1 - purity
            width = 0.42
            blobs = [Blob(0.5 - width * (1 - purity) / 2, 0.5, width * purity / 2 + 1e-3, 0.3, colour=TUMOUR,
                          nuclei_density=2.0, nucleus_radius_um=4.5),
                     Blob(0.5 + width * purity / 2, 0.5, width * (1 - purity) / 2 + 1e-3, 0.3, colour=STROMA,
                          nuclei_density=0.4, nucleus_radius_um=2.5)]
            write_synthetic_slide(folder / "slides" / f"{slide_id}.tiff", width=SLIDE_PX, height=SLIDE_PX, mpp=MPP,
                                  tissue=blobs, seed=rng.randrange(1 << 30))
            rows.append((f"slides/{slide_id}.tiff", purity, split))
    lines = ["slide_path,purity,split", *(f"{s},{p},{sp}" for s, p, sp in rows)]
    atomic_write_text(table, "\n".join(lines) + "\n")
    return folder


def _number_or_text(value: Any) -> Any:
    """A table cell as a float when it reads as one; else its text, which the task's target check
    names with the case (`SlideRegressionTask.check_target`)."""
    text = cell(value)
    try:
        return float(text)
    except ValueError:
        return text


class PurityTable(CohortDataset):
    """Your own slides and a table of slide_path, purity (optionally patient_id, split, mpp, case_id).

    Every other column of the table is kept in `Case.meta`, and `Case.meta` reaches the model:
    leave follow-up or outcome columns out of the table, or the model may read the answer."""

    name: ClassVar[str] = "purity-table"
    description: ClassVar[str] = "your own slides + a table slide_path,purity[,patient_id,split,mpp]: slide regression"
    task: ClassVar[str] = TASK_SLIDE_REGRESSION
    license: ClassVar[str] = "your data"
    default_metrics: ClassVar[tuple[str, ...]] = ("regression",)
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *COHORT_OPTIONS,
        DatasetOption("target_column", "str", "purity", "the column holding each slide's number"),
    )
    layout: ClassVar[str] = (
        "<root>/purity.csv (or option table=FILE; CSV, TSV, Parquet, JSON, JSONL) with columns slide_path (absolute "
        "or relative to the table) and purity (option target_column), optional patient_id, split (train/val/test), "
        "mpp, case_id"
    )

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        root = Path(self.root)
        path = find_table(root, TABLE_NAMES, self.option_path("table"), "purity table", self.layout)
        table = read_table(path, "purity table")
        target = str(self.options["target_column"])
        rows = cohort_rows(table, file_key="slide_path", value_key=target, default_mpp=self.mpp_option(),
                           what="purity table")
        check_duplicates(rows, lambda r: r.case_id, "case id", path)
        rows, excluded = drop_missing_files(rows, skip_missing=bool(self.options["skip_missing"]), where=path)
        check_slide_mpps(rows, where=path, mpp_column=find_column(table.columns, "mpp"))
        groups = {g.case_id: g for g in group_rows(rows, str(self.options["case"]), path, value_name=target)}
        parts, facts = choose_split(self.name, groups, self.options, root=root, table=path, excluded=excluded)
        self._split_facts = {**facts, "table": str(path)}
        cases = {c: Case(case_id=c, patient_id=g.patient_id, target=_number_or_text(g.value), slides=g.files,
                         meta=g.meta()) for c, g in groups.items()}
        return cases, parts, excluded


class PurityDemo(PurityTable):
    """Synthetic slides of known tumour purity (NOT pathology): 16 / 6 / 6 train / val / test."""

    name: ClassVar[str] = "demo-purity"
    description: ClassVar[str] = "synthetic slides of known tumour purity for slide-regression (NOT pathology)"
    license: ClassVar[str] = "generated locally"
    demo_run: ClassVar[dict[str, Any] | None] = {"encoder": "tiny-vit", "generator": "mean-pool-regressor"}

    def make_demo(self, path: str | Path) -> Path:
        return write_demo(Path(path) / "v2")  # v2: the table names each slide's file (slide_path)


@hookimpl
def register_datasets(register):
    register(PurityTable)
    register(PurityDemo)
