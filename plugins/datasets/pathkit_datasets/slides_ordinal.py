"""`slides-ordinal`: your own slides and a table of slide, grade: ordinal grading without a plugin;
`demo-ordinal`: the same reader over synthetic slides whose grade is set by their nuclei (texture).

The table is `slides-csv`'s (`cohort.csv`: slide_path, label, optional patient_id, split, mpp, ...)
with the grades in `label`. Option `classes=1,2,3,4,5` gives the order, lowest first (default: the
labels in natural sort order, so numeric grades sort as numbers); a label outside it is refused
with the table and its rows (docs/ordinal.md).
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, PathkitError
from pathkit_datasets._variants import slide_cohort, synthetic_demo
from pathkit_datasets.slides_csv import TABLE_NAMES, SlidesCSV
from pathkit_sdk.cohort import COHORT_OPTIONS, cell, cohort_rows
from pathkit_tasks import TASK_ORDINAL


class SlidesOrdinal(SlidesCSV, card="slides-ordinal"):
    """A folder of slides with a table of slide, grade (optionally patient, split, mpp, cohort)."""

    task: ClassVar[str] = TASK_ORDINAL
    default_metrics: ClassVar[tuple[str, ...]] = ("ordinal",)
    selection_metric: ClassVar[str | None] = None  # the validation loss
    selection_options: ClassVar[dict[str, Any]] = {}
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *COHORT_OPTIONS,
        DatasetOption("classes", "str", None, "the ordered grades, lowest first, comma-separated (default: the "
                      "labels in natural sort order)"),
    )

    def ordered_classes(self) -> tuple[str, ...]:
        return self.class_names()

    def load(self):
        given = self.options.get("classes")
        if given:
            self._check_grades(str(given))
        return super().load()

    def _check_grades(self, given: str) -> None:
        """Every row's label is one of the given ordered classes; else the table and its rows."""
        order = [c.strip() for c in given.split(",") if c.strip()]
        path, table = self.read_cohort_table(TABLE_NAMES, "cohort table")
        rows = cohort_rows(table, file_key="slide_path", value_key="label", what="cohort table")
        bad = [f"{r.place}: {cell(r.value)!r}" for r in rows if cell(r.value) not in order]
        if bad:
            more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
            raise PathkitError(f"cohort table {path}: {len(bad)} row(s) with a grade outside the ordered classes "
                               f"{order} (option classes): {'; '.join(bad[:10])}{more}")


# --------------------------------------------------------------------------- synthetic demo

GRADES = ("1", "2", "3", "4")
SPLIT_COUNTS = {"train": 40, "val": 12, "test": 40}
# grade g: nuclei denser and larger with g (the "texture" of the tissue), the colour the same
DENSITY = {"1": 0.3, "2": 0.9, "3": 1.6, "4": 2.4}
RADIUS_UM = {"1": 2.0, "2": 3.0, "3": 4.0, "4": 5.0}


def _demo_row(rng: random.Random, split: str, i: int, slide: Any) -> str:
    from pathkit_sdk import Blob

    grade = GRADES[i % len(GRADES)]
    blob = Blob(0.5, 0.5, 0.32, 0.32, colour=(170, 90, 160), nuclei_density=DENSITY[grade],
                nucleus_radius_um=RADIUS_UM[grade])
    path = slide(f"SYN-GRADE-{split}-{i:02d}", [blob])
    return f"{path},{grade},{split}"


OrdinalDemo = synthetic_demo("OrdinalDemo", SlidesOrdinal, "demo-ordinal", "coral",
                             slide_cohort("cohort.csv", "slide_path,label,split", SPLIT_COUNTS, _demo_row),
                             "synthetic slides graded 1-4 by nuclear density and size (NOT pathology)")


@hookimpl
def register_datasets(register):
    register(SlidesOrdinal)
    register(OrdinalDemo)
