"""mhist: colorectal polyps, hyperplastic polyp (HP) vs sessile serrated adenoma (SSA) (Wei et al. 2021).

Read as BMIRDS distributes it: `annotations.csv` (`Image Name`, `Majority Vote Label`, `Number of
Annotators who Selected SSA (Out of 7)`, `Partition`) beside `images/` (the unzipped images.zip).
The official split is the `Partition` column (train 2,175 / test 977); the release has no
validation part, so pathkit carves one from training (image level: the release names no patient).
docs/catalogue.md#mhist.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError, brief_list
from pathkit_datasets._catalogue import Item, PublicPatchDataset, need
from pathkit_sdk.cohort import cell, read_table

COLUMNS = ("Image Name", "Majority Vote Label", "Number of Annotators who Selected SSA (Out of 7)", "Partition")
PARTITIONS = {"train": "train", "test": "test"}


class MhistDataset(PublicPatchDataset, card="mhist"):
    """MHIST as downloaded from BMIRDS (see the module docstring)."""

    classes: ClassVar[tuple[str, ...]] = ("HP", "SSA")

    def items(self, root: Path) -> list[Item]:
        path = need(root / "annotations.csv", "the MHIST annotation table", self.name)
        images = need(root / "images", "the unzipped images.zip", self.name)
        table = read_table(path, "MHIST annotations")
        absent = [c for c in COLUMNS if c not in table.columns]
        if absent:
            raise PathkitError(f"{path}: column(s) {', '.join(repr(c) for c in absent)} missing (MHIST's header is "
                               f"{', '.join(COLUMNS)}); it has: {', '.join(table.columns)}")
        out, missing = [], []
        for index, row in enumerate(table.rows):
            file_name, part = cell(row.get(COLUMNS[0])), cell(row.get(COLUMNS[3])).lower()
            if part not in PARTITIONS:
                raise PathkitError(f"{table.where(index)}: Partition {part!r} is not train or test")
            if not (images / file_name).is_file():
                missing.append(file_name)
                continue
            out.append(Item(Path(file_name).stem, cell(row.get(COLUMNS[1])), str(images / file_name),
                            PARTITIONS[part], where=f"images/{file_name}"))
        if missing:
            raise PathkitError(f"{path} names {len(missing)} image(s) not in {images}: {brief_list(missing, 10)}; "
                               "is images.zip fully unzipped?")
        return out


@hookimpl
def register_datasets(register):
    register(MhistDataset)
