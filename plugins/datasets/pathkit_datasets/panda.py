"""`panda`: the PANDA challenge's prostate biopsies graded ISUP 0-5, through the ordinal task
(docs/slide-benchmarks.md, "panda").

Layout (the Kaggle download, prostate-cancer-grade-assessment):

    <root>/train.csv              image_id,data_provider,isup_grade,gleason_score (10,616 rows)
    <root>/train_images/<image_id>.tiff
    <root>/train_label_masks/<image_id>_mask.tiff     optional

PANDA publishes no test labels (its test sets stayed hidden), so the split is drawn: seeded
(option split_seed, 0), 70 / 15 / 15 as eva's PANDA task, stratified by data provider and grade
(eva stratifies by grade only and first drops the images a third-party noisy-label table flags;
pathkit keeps every image of train.csv). PANDA gives no patient ids: each biopsy is its own
patient. The grades are ordered "0" < ... < "5" (ISUP grade groups; 0 = benign).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_datasets._slide_catalogue import SlideCatalogueDataset, require_path
from pathkit_sdk.cohort import CaseRows, CohortRow, cell, read_table, require_columns
from pathkit_tasks import TASK_ORDINAL

GRADES = ("0", "1", "2", "3", "4", "5")
COLUMNS = ("image_id", "data_provider", "isup_grade", "gleason_score")
LAYOUT = ("<root>/train.csv (image_id,data_provider,isup_grade,gleason_score), <root>/train_images/<image_id>.tiff, "
          "optional <root>/train_label_masks/<image_id>_mask.tiff")


class PANDA(SlideCatalogueDataset):
    """PANDA: prostate core-needle biopsies from Radboud and Karolinska, ISUP grade group 0-5."""

    name: ClassVar[str] = "panda"
    description: ClassVar[str] = "PANDA prostate biopsies, ISUP grade 0-5 (ordinal; drawn 70/15/15 split)"
    task: ClassVar[str] = TASK_ORDINAL
    license: ClassVar[str] = "CC BY-NC-SA 4.0"
    citation: ClassVar[str] = ("Bulten et al., Artificial intelligence for diagnosis and Gleason grading of "
                               "prostate cancer: the PANDA challenge, Nature Medicine 2022")
    default_metrics: ClassVar[tuple[str, ...]] = ("ordinal",)
    layout: ClassVar[str] = LAYOUT

    def ordered_classes(self) -> tuple[str, ...]:
        return GRADES

    def task_is_classification(self) -> bool:
        return False

    def strata(self, groups: dict[str, CaseRows]) -> dict[str, str]:
        return {c: f"{g.rows[0].cohort}:{g.value}" for c, g in groups.items()}

    def slide_rows(self) -> tuple[list[CohortRow], Path]:
        root = Path(self.root)
        table_path = require_path(root, "train.csv", self.name, LAYOUT)
        images = require_path(root, "train_images", self.name, LAYOUT, folder=True)
        table = read_table(table_path, "PANDA train.csv")
        found = require_columns(table, COLUMNS, what="PANDA train.csv", aliases={k: (k,) for k in COLUMNS})
        rows: list[CohortRow] = []
        bad = []
        for i, row in enumerate(table.rows):
            image_id, grade = cell(row.get(found["image_id"])), cell(row.get(found["isup_grade"]))
            if not image_id or grade not in GRADES:
                bad.append(f"{table.places[i]}: image_id {image_id!r}, isup_grade {grade!r}")
                continue
            rows.append(CohortRow(i, table.places[i], image_id, image_id, grade, images / f"{image_id}.tiff",
                                  cohort=cell(row.get(found["data_provider"])) or None))
        if bad:
            raise PathkitError(f"PANDA train.csv {table_path}: {len(bad)} row(s) without an image id and an ISUP "
                               f"grade 0-5: {'; '.join(bad[:10])}")
        self._check_masks(root, {r.case_id for r in rows})
        return rows, table_path

    def _check_masks(self, root: Path, images: set[str]) -> None:
        masks = root / "train_label_masks"
        self._masks = 0
        if not masks.is_dir():
            return
        for mask in sorted(masks.glob("*_mask.tiff")):
            if mask.name[: -len("_mask.tiff")] not in images:
                raise PathkitError(f"PANDA label mask {mask}: names no image of train.csv")
            self._masks += 1

    def split_facts(self) -> dict[str, Any]:
        return {**super().split_facts(), "label_masks": getattr(self, "_masks", 0),
                "ordered_classes": list(GRADES)}


@hookimpl
def register_datasets(register):
    register(PANDA)
