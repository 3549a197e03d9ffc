"""panda: prostate biopsies graded by ISUP grade group 0-5, the PANDA challenge's public training set
(Bulten et al. 2022), for the ordinal task.

Read as Kaggle distributes it: `train.csv` (`image_id`, `data_provider`, `isup_grade`,
`gleason_score`) beside `train_images/<image_id>.tiff` (`train_label_masks/` is not read). The
challenge's test labels are hidden, so there is no official split: pathkit draws a seeded split
stratified by grade (70 / 15 / 15, seed 42, as eva's proportions and seed; not eva's draw, whose
implementation differs, and without eva's noisy-label filter). docs/catalogue.md#panda.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError, brief_list
from pathkit_datasets._cards import Carded
from pathkit_sdk.cohort import CohortDataset, cell, check_part_classes, drawn_split, read_table
from pathkit_tasks import TASK_ORDINAL

GRADES = ("0", "1", "2", "3", "4", "5")
COLUMNS = ("image_id", "data_provider", "isup_grade", "gleason_score")
PROVIDERS = ("karolinska", "radboud")


class PandaDataset(Carded, CohortDataset, card="panda"):
    """PANDA's training slides graded 0-5 (see the module docstring)."""

    task: ClassVar[str] = TASK_ORDINAL
    default_metrics: ClassVar[tuple[str, ...]] = ("ordinal",)
    selection_metric: ClassVar[str | None] = None  # the validation loss, as slides-ordinal
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("data_provider", "all|karolinska|radboud", "all", "the centre's slides only, or both"),
        DatasetOption("split_seed", "int", 42, "seed of the drawn split (eva's seed)"),
        DatasetOption("val_fraction", "float", 0.15, "share of slides in validation"),
        DatasetOption("test_fraction", "float", 0.15, "share of slides in test"),
        DatasetOption("skip_missing", "bool", False, "leave out train.csv rows whose slide is absent (listed as "
                      "excluded) instead of stopping"),
    )
    run_options: ClassVar[tuple[str, ...]] = ("workdir",)

    def class_names(self) -> tuple[str, ...]:
        return GRADES

    def ordered_classes(self) -> tuple[str, ...]:
        return GRADES

    def _rows(self, root: Path) -> list[dict[str, str]]:
        path = root / "train.csv"
        if not path.is_file():
            raise PathkitError(f"dataset {self.name!r}: {path} is missing; expected {self.layout}")
        table = read_table(path, "PANDA table")
        absent = [c for c in COLUMNS if c not in table.columns]
        if absent:
            raise PathkitError(f"{path}: column(s) {', '.join(absent)} missing (PANDA's header is "
                               f"{', '.join(COLUMNS)}); it has: {', '.join(table.columns)}")
        rows = []
        for index, row in enumerate(table.rows):
            values = {c: cell(row.get(c)) for c in COLUMNS}
            if values["isup_grade"] not in GRADES:
                raise PathkitError(f"{table.where(index)}: isup_grade {values['isup_grade']!r} is not 0-5")
            if values["data_provider"] not in PROVIDERS:
                raise PathkitError(f"{table.where(index)}: data_provider {values['data_provider']!r} is not "
                                   f"{' or '.join(PROVIDERS)}")
            rows.append(values)
        return rows

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        root = Path(self.root)
        images = root / "train_images"
        if not images.is_dir():
            raise PathkitError(f"dataset {self.name!r}: {images} is missing (the unpacked train_images)")
        provider = self.options["data_provider"]
        rows = [r for r in self._rows(root) if provider == "all" or r["data_provider"] == provider]
        missing = [r["image_id"] for r in rows if not (images / f"{r['image_id']}.tiff").is_file()]
        if missing and not self.options["skip_missing"]:
            raise PathkitError(f"{root / 'train.csv'} names {len(missing)} slide(s) not in {images}: "
                               f"{brief_list(missing, 10)}; pass --dataset-option skip_missing=true to leave them out")
        excluded = {m: "listed in train.csv, not in train_images" for m in missing}
        rows = [r for r in rows if r["image_id"] not in excluded]
        labels = {r["image_id"]: r["isup_grade"] for r in rows}
        seed = int(self.options["split_seed"])
        fractions = (float(self.options["val_fraction"]), float(self.options["test_fraction"]))
        parts, facts = drawn_split(self.name, {i: i for i in labels}, seed=seed, fractions=fractions,
                                   workdir=self.options.get("workdir"), labels=labels, unit="slide",
                                   file_name=f"{provider}-seed{seed}-val{fractions[0]:g}-test{fractions[1]:g}.csv")
        check_part_classes(parts, labels, f"dataset {self.name!r}")
        self._split_facts = {**facts, "protocol": "no official split (the challenge's test labels are hidden): a "
                             "seeded split stratified by ISUP grade"}
        cases = {r["image_id"]: Case(r["image_id"], r["image_id"], target=r["isup_grade"],
                                     slides=(images / f"{r['image_id']}.tiff",),
                                     meta={"data_provider": r["data_provider"], "gleason_score": r["gleason_score"]})
                 for r in rows}
        return cases, parts, excluded

    def summary(self) -> dict[str, Any]:
        from collections import Counter

        cases = [c for part in self.splits() for c in self.cases(part)]
        return {"protocol": self.split_facts().get("protocol"), "split": self.split_facts(),
                "grade_counts": dict(Counter(c.target for c in cases)),
                "provider_counts": dict(Counter(c.meta["data_provider"] for c in cases))}


@hookimpl
def register_datasets(register):
    register(PandaDataset)
