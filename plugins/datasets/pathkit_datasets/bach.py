"""bach: ICIAR 2018 BACH microscopy photos, four classes (Aresta et al. 2019).

Read as Zenodo record 3632035 distributes it: `ICIAR2018_BACH_Challenge/Photos/{Benign,InSitu,
Invasive,Normal}/*.tif`, 100 photos per class (2048 x 1536 px, 0.42 um/px). The challenge's test
labels were never released, so pathkit follows eva's patient-aware split of the 400 labelled
photos (index ranges over the photos in class then file order: 268 / 132): eva's train part is
pathkit's training (a validation part carved from it), eva's validation part is pathkit's test.
docs/catalogue.md#bach.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_datasets._catalogue import Item, PublicPatchDataset, class_folders, release_path

CLASSES = ("Benign", "InSitu", "Invasive", "Normal")
# eva (kaiko-ai/eva, src/eva/vision/data/datasets/classification/bach.py): [start, end) ranges of
# the sorted photos; chosen by its authors so that no patient is on both sides.
EVA_TRAIN = ((0, 41), (59, 60), (90, 139), (169, 240), (258, 260), (273, 345), (368, 400))
EVA_VAL = ((41, 59), (60, 90), (139, 169), (240, 258), (260, 273), (345, 368))
N_PHOTOS = 400


def _indices(ranges: tuple[tuple[int, int], ...]) -> set[int]:
    return {i for start, end in ranges for i in range(start, end)}


class BachDataset(PublicPatchDataset, card="bach"):
    """The BACH photos (see the module docstring)."""

    classes: ClassVar[tuple[str, ...]] = CLASSES

    def items(self, root: Path) -> list[Item]:
        photos = release_path(root, "ICIAR2018_BACH_Challenge", "Photos")
        folders = class_folders(photos, CLASSES, self.name, (".tif", ".tiff"))
        ordered = [(label, path) for label in CLASSES for path in folders[label]]
        if len(ordered) != N_PHOTOS:
            counts = ", ".join(f"{c} {len(folders[c])}" for c in CLASSES)
            raise PathkitError(f"dataset {self.name!r}: {photos} holds {len(ordered)} photos ({counts}); the release "
                               f"has {N_PHOTOS} (100 per class), over which eva's split is defined")
        train, test = _indices(EVA_TRAIN), _indices(EVA_VAL)
        return [Item(path.stem, label, str(path), "train" if i in train else "test" if i in test else None,
                     where=f"{label}/{path.name}")
                for i, (label, path) in enumerate(ordered)]


@hookimpl
def register_datasets(register):
    register(BachDataset)
