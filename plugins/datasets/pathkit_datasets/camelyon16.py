"""camelyon16: lymph-node slides, normal or with breast-cancer metastases (Ehteshami Bejnordi et al. 2017).

Read as the challenge distributes it: `training/normal/normal_*.tif`, `training/tumor/tumor_*.tif`
(with `training/lesion_annotations/tumor_*.xml`, ASAP's XML, when unpacked) and
`testing/images/test_*.tif` with the test labels in `testing/reference.csv` (no header: slide,
Tumor/Normal, ...). The split follows eva: the training slides PatchCamelyon held out (54 named
slides) are the validation part, the test slides the test part (eva: 216 / 54 / 129).
docs/catalogue.md#camelyon16.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError, brief_list
from pathkit_datasets._cards import Carded
from pathkit_datasets._protocols import SlideClassification
from pathkit_sdk.cohort import CohortDataset, check_part_classes

CLASSES = ("normal", "tumor")
# eva (kaiko-ai/eva, src/eva/vision/data/datasets/classification/camelyon16.py): its validation
# slides, "the same as the ones in patch camelyon".
EVA_VAL = frozenset(
    [f"normal_{n:03d}" for n in (10, 13, 16, 17, 19, 20, 25, 30, 31, 32, 52, 56, 57, 67, 76, 79, 85, 95, 98, 99,
                                 101, 102, 105, 106, 109, 129, 132, 137, 142, 143, 148, 152)]
    + [f"tumor_{n:03d}" for n in (1, 5, 11, 12, 13, 19, 31, 37, 43, 46, 57, 65, 69, 71, 73, 79, 80, 81, 82, 85,
                                  97, 109)])


def lesion_count(path: Path) -> int:
    """The number of lesion polygons of an ASAP annotation XML; a damaged file is refused."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise PathkitError(f"{path}: not a readable ASAP annotation XML ({exc})") from None
    if root.tag != "ASAP_Annotations":
        raise PathkitError(f"{path}: root element <{root.tag}> is not <ASAP_Annotations>")
    return sum(1 for a in root.iter("Annotation") if a.find("Coordinates") is not None)


class Camelyon16Dataset(Carded, SlideClassification, CohortDataset, card="camelyon16"):
    """The Camelyon16 slides (see the module docstring)."""

    metric_options: ClassVar[dict[str, dict[str, Any]]] = {"classification": {"classes": list(CLASSES)}}
    published_counts: ClassVar[dict[str, int]]  # the card's
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("skip_missing", "bool", False, "leave out reference.csv rows whose slide is absent (listed "
                      "as excluded) instead of stopping"),
    )
    run_options: ClassVar[tuple[str, ...]] = ("workdir",)

    def class_names(self) -> tuple[str, ...]:
        return CLASSES

    def _folder(self, *parts: str) -> Path:
        path = Path(self.root, *parts)
        if not path.is_dir():
            raise PathkitError(f"dataset {self.name!r}: {path} is missing; expected {self.layout}")
        return path

    def _reference(self) -> dict[str, str]:
        path = Path(self.root, "testing", "reference.csv")
        if not path.is_file():
            raise PathkitError(f"dataset {self.name!r}: {path} is missing (the test slides' labels)")
        out = {}
        with open(path, newline="", encoding="utf-8") as handle:
            for n, row in enumerate(csv.reader(handle), start=1):
                if not row or not row[0].strip():
                    continue
                label = row[1].strip().lower() if len(row) > 1 else ""
                if label not in CLASSES:
                    raise PathkitError(f"{path}, line {n}: class {label!r} is not Tumor or Normal")
                out[row[0].strip()] = label
        return out

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        slides: dict[str, tuple[Path, str, str]] = {}
        for label in CLASSES:
            for path in sorted(self._folder("training", label).glob("*.tif")):
                slides[path.stem] = (path, label, "val" if path.stem in EVA_VAL else "train")
        tests = {p.stem: p for p in sorted(self._folder("testing", "images").glob("*.tif"))}
        reference = self._reference()
        unlisted = sorted(set(tests) - set(reference))
        if unlisted:
            raise PathkitError(f"dataset {self.name!r}: test slide(s) {brief_list(unlisted, 10)} have no row in "
                               "testing/reference.csv")
        absent = sorted(set(reference) - set(tests))
        if absent and not self.options.get("skip_missing"):
            raise PathkitError(f"{Path(self.root, 'testing', 'reference.csv')} names {len(absent)} slide(s) not in "
                               f"testing/images: {brief_list(absent, 10)}; pass --dataset-option skip_missing=true "
                               "to leave them out")
        excluded = {s: "listed in testing/reference.csv, not in testing/images" for s in absent}
        slides.update({s: (p, reference[s], "test") for s, p in tests.items()})
        lesions = self._lesions(slides)
        parts = {p: [s for s, (_, _, part) in slides.items() if part == p] for p in ("train", "val", "test")}
        check_part_classes(parts, {s: v[1] for s, v in slides.items()}, f"dataset {self.name!r}")
        self._split_facts = {"source": "published", "description": "eva's Camelyon16 split: PatchCamelyon's 54 "
                             "held-out training slides as validation, the challenge's test slides as test",
                             "published_counts": dict(self.published_counts),
                             "counts": {p: len(v) for p, v in parts.items()}}
        cases = {s: Case(s, s, target=label, slides=(path,),
                         meta={"official_part": part, **({"n_lesions": lesions[s]} if s in lesions else {})})
                 for s, (path, label, part) in slides.items()}
        return cases, parts, excluded

    def _lesions(self, slides: dict[str, tuple[Path, str, str]]) -> dict[str, int]:
        """Lesions per annotated training slide, when lesion_annotations/ is unpacked (checked: every
        XML names a tumour slide of the folder and parses)."""
        folder = Path(self.root, "training", "lesion_annotations")
        if not folder.is_dir():
            return {}
        out = {}
        for path in sorted(folder.glob("*.xml")):
            if path.stem not in slides or slides[path.stem][1] != "tumor":
                raise PathkitError(f"{path}: annotates {path.stem!r}, which is no tumour slide under training/tumor")
            out[path.stem] = lesion_count(path)
        return out


@hookimpl
def register_datasets(register):
    register(Camelyon16Dataset)
