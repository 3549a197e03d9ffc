"""bracs: BRACS breast carcinoma subtyping, the RoI release in seven classes (Brancati et al. 2022).

Read as the publisher distributes `BRACS_RoI`: `BRACS_RoI/latest_version/{train,val,test}/
{0_N,1_PB,2_UDH,3_FEA,4_ADH,5_DCIS,6_IC}/*.png` at 40x (0.25 um/px), sizes vary. The official
split is the folders (3,657 / 312 / 570, disjoint by patient as published). A file name carries
its slide (`BRACS_1003_N_1.png`: slide BRACS_1003), kept as the case's group. docs/catalogue.md#bracs.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_datasets._catalogue import Item, PublicPatchDataset, class_folders, need, release_path

FOLDERS = ("0_N", "1_PB", "2_UDH", "3_FEA", "4_ADH", "5_DCIS", "6_IC")
CLASSES = tuple(f.split("_", 1)[1] for f in FOLDERS)


def slide_of(stem: str) -> str:
    """BRACS_<slide>_<class>_<n> -> BRACS_<slide>."""
    fields = stem.split("_")
    return "_".join(fields[:2]) if len(fields) >= 4 else stem


class BracsDataset(PublicPatchDataset, card="bracs"):
    """The BRACS RoI folders (see the module docstring)."""

    classes: ClassVar[tuple[str, ...]] = CLASSES

    def items(self, root: Path) -> list[Item]:
        base = release_path(root, "BRACS_RoI", "latest_version")
        need(base, "BRACS_RoI/latest_version", self.name)
        out = []
        for part in ("train", "val", "test"):
            folders = class_folders(base / part, FOLDERS, self.name, (".png",))
            for folder, files in folders.items():
                out.extend(Item(p.stem, folder.split("_", 1)[1], str(p), part, slide_of(p.stem),
                                f"{part}/{folder}/{p.name}") for p in files)
        return out


@hookimpl
def register_datasets(register):
    register(BracsDataset)
