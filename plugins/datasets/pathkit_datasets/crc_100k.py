"""crc-100k: colorectal tissue classes, NCT-CRC-HE-100K for training, CRC-VAL-HE-7K as the test set
(Kather et al. 2019), as UNI and eva use them.

Read as Zenodo record 1214456 distributes it, both zips unzipped side by side:
`NCT-CRC-HE-100K/<class>/*.tif` (100,000 tiles) and `CRC-VAL-HE-7K/<class>/*.tif` (7,180 tiles
from 50 other patients), nine class folders each, 224 x 224 px at 0.5 um/px. The 100K set names
no patient, so the validation part pathkit carves from it is image-level (training and validation
may share a slide; the test set shares none). docs/catalogue.md#crc-100k.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption
from pathkit_datasets._catalogue import OPTIONS, Item, PublicPatchDataset, class_folders

CLASSES = ("ADI", "BACK", "DEB", "LYM", "MUC", "MUS", "NORM", "STR", "TUM")
TRAIN_FOLDERS = ("NCT-CRC-HE-100K", "NCT-CRC-HE-100K-NONORM")
TEST_FOLDER = "CRC-VAL-HE-7K"


class Crc100kDataset(PublicPatchDataset, card="crc-100k"):
    """NCT-CRC-HE-100K + CRC-VAL-HE-7K (see the module docstring)."""

    classes: ClassVar[tuple[str, ...]] = CLASSES
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *OPTIONS,
        DatasetOption("train_folder", "|".join(TRAIN_FOLDERS), TRAIN_FOLDERS[0], "the training set: the Macenko-"
                      "normalised one (eva's and UNI's) or the unnormalised NONORM release"),
    )

    def items(self, root: Path) -> list[Item]:
        out = []
        for folder, part, prefix in ((self.options["train_folder"], "train", "100K"), (TEST_FOLDER, "test", "7K")):
            for label, files in class_folders(root / folder, CLASSES, self.name, (".tif", ".tiff")).items():
                out.extend(Item(f"{prefix}-{p.stem}", label, str(p), part, where=f"{folder}/{label}/{p.name}")
                           for p in files)
        return out


@hookimpl
def register_datasets(register):
    register(Crc100kDataset)
