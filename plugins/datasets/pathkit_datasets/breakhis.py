"""breakhis: BreakHis breast tumour photos, eva's four classes at one magnification (Spanhol et al. 2016).

Read as the publisher distributes `BreaKHis_v1.tar.gz`: `BreaKHis_v1/histology_slides/breast/
{benign,malignant}/SOB/<tumour type>/<patient folder>/{40X,100X,200X,400X}/*.png`, 700 x 460 px.
A file name says its class and patient (`SOB_B_TA-14-3411F-40-001.png`: class TA, patient
3411F). pathkit follows eva: the four types with at least seven patients (TA, MC, F, DC), 40X by
default, and eva's fourteen held-out patients as the test part (eva's validation; 1,132 / 339
images at 40X); a patient-level validation part is carved from training. docs/catalogue.md#breakhis.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, PathkitError
from pathkit_datasets._catalogue import OPTIONS, Item, PublicPatchDataset, need, release_path

CLASSES = ("TA", "MC", "F", "DC")
# The tumour-type folders of the four classes used (the other four: adenosis, phyllodes_tumor,
# lobular_carcinoma, papillary_carcinoma).
TYPE_FOLDERS = {"TA": "benign/SOB/tubular_adenoma", "F": "benign/SOB/fibroadenoma",
                "MC": "malignant/SOB/mucinous_carcinoma", "DC": "malignant/SOB/ductal_carcinoma"}
MAGNIFICATIONS = ("40X", "100X", "200X", "400X")
# eva (kaiko-ai/eva, src/eva/vision/data/datasets/classification/breakhis.py): its validation patients.
EVA_HELD_OUT = frozenset({"18842D", "19979", "15275", "15792", "16875", "3909", "5287", "16716", "2773", "5695",
                          "16184CD", "23060CD", "21998CD", "21998EF"})


def name_parts(file_name: str) -> tuple[str, str]:
    """(class, patient) a BreakHis file name states: SOB_<B|M>_<class>-<year>-<patient>-<mag>-<n>.png."""
    fields = file_name.split("-")
    if len(fields) < 5 or "_" not in fields[0]:
        raise PathkitError(f"BreakHis file {file_name!r} is not named SOB_<B|M>_<class>-<year>-<patient>-<mag>-<n>")
    return fields[0].split("_")[-1], fields[2]


class BreakHisDataset(PublicPatchDataset, card="breakhis"):
    """BreakHis at one magnification (see the module docstring)."""

    classes: ClassVar[tuple[str, ...]] = CLASSES
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *OPTIONS,
        DatasetOption("magnification", "|".join(MAGNIFICATIONS), "40X", "the magnification folder read (eva: "
                      "40X; the published counts are those of 40X)"),
    )

    def items(self, root: Path) -> list[Item]:
        breast = release_path(root, "BreaKHis_v1", "histology_slides", "breast")
        need(breast, "BreaKHis_v1/histology_slides/breast of the unpacked BreaKHis_v1.tar.gz", self.name)
        magnification = self.options["magnification"]
        out = []
        for label in CLASSES:
            folder = need(breast / TYPE_FOLDERS[label], f"the {label} tumour-type folder", self.name)
            files = sorted(p for p in folder.rglob("*.png") if p.parent.name == magnification)
            if not files:
                raise PathkitError(f"dataset {self.name!r}: {folder} holds no {magnification}/*.png image")
            for path in files:
                stated, patient = name_parts(path.name)
                if stated != label:
                    raise PathkitError(f"{path}: its name says class {stated!r} but it lies in {TYPE_FOLDERS[label]}")
                part = "test" if patient in EVA_HELD_OUT else "train"
                out.append(Item(path.stem, label, str(path), part, patient, str(path.relative_to(breast))))
        return out


@hookimpl
def register_datasets(register):
    register(BreakHisDataset)
