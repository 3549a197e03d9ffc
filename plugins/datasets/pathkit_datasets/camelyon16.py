"""`camelyon16`: CAMELYON16 lymph-node slides, normal vs tumour (metastasis), as the challenge released
them (docs/slide-benchmarks.md, "camelyon16").

Layout (the release, e.g. the GigaDB / grand-challenge download):

    <root>/training/normal/normal_NNN.tif        training slides without metastasis
    <root>/training/tumor/tumor_NNN.tif          training slides with metastasis (270 in all)
    <root>/training/lesion_annotations/tumor_NNN.xml   ASAP XML lesion outlines (optional)
    <root>/testing/images/test_NNN.tif           the 129 or 130 test slides
    <root>/testing/reference.csv                 no header: test_NNN,Tumor|Normal[,Macro|Micro,...]
    <root>/testing/lesion_annotations/test_NNN.xml     (optional)

Split: the official one (training/ -> train, testing/ -> test); the validation part is eva's list of
54 training slides (the PatchCamelyon validation slides), so counts are 216 / 54 / test. Every test
slide needs a row in reference.csv and every row a slide; every lesion XML must follow ASAP's
schema and name a slide of the release.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import ClassVar
from xml.etree import ElementTree

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_datasets._slide_catalogue import SlideCatalogueDataset, require_path
from pathkit_sdk.cohort import CohortRow, cell
from pathkit_tasks import TASK_SLIDE_CLASSIFICATION

# eva (kaiko-ai/eva, Camelyon16 dataset class): the validation slides, those of PatchCamelyon's validation set
EVA_VAL_SLIDES = frozenset(
    [f"normal_{n:03d}" for n in (10, 13, 16, 17, 19, 20, 25, 30, 31, 32, 52, 56, 57, 67, 76, 79, 85, 95, 98, 99,
                                 101, 102, 105, 106, 109, 129, 132, 137, 142, 143, 148, 152)]
    + [f"tumor_{n:03d}" for n in (1, 5, 11, 12, 13, 19, 31, 37, 43, 46, 57, 65, 69, 71, 73, 79, 80, 81, 82, 85,
                                  97, 109)]
)
CLASSES = ("normal", "tumor")
TRAIN_NAME = re.compile(r"^(normal|tumor)_\d{3}$")
TEST_NAME = re.compile(r"^test_\d{3}$")
LAYOUT = ("<root>/training/normal/normal_NNN.tif, <root>/training/tumor/tumor_NNN.tif, "
          "<root>/testing/images/test_NNN.tif, <root>/testing/reference.csv (no header: test_NNN,Tumor|Normal,...), "
          "optional <root>/{training,testing}/lesion_annotations/*.xml (ASAP XML)")


def read_asap_xml(path: Path) -> int:
    """The number of annotations in an ASAP XML file (ASAP_Annotations/Annotations/Annotation with a
    PartOfGroup and Coordinates/Coordinate X, Y); an error naming the file and what is wrong."""
    try:
        root = ElementTree.parse(path).getroot()
    except (ElementTree.ParseError, OSError) as exc:
        raise PathkitError(f"lesion annotation {path}: not readable XML ({exc})") from None
    if root.tag != "ASAP_Annotations" or root.find("Annotations") is None:
        raise PathkitError(f"lesion annotation {path}: not ASAP's schema (expected a root ASAP_Annotations with "
                           f"an Annotations element; found <{root.tag}>)")
    annotations = root.findall("Annotations/Annotation")
    for i, annotation in enumerate(annotations):
        if not annotation.get("PartOfGroup"):
            raise PathkitError(f"lesion annotation {path}: Annotation {i} has no PartOfGroup attribute")
        points = annotation.findall("Coordinates/Coordinate")
        if not points:
            raise PathkitError(f"lesion annotation {path}: Annotation {i} has no Coordinates/Coordinate")
        for p in points:
            try:
                float(p.get("X", "")), float(p.get("Y", ""))
            except ValueError:
                raise PathkitError(f"lesion annotation {path}: Annotation {i} has a Coordinate without numeric "
                                   "X and Y") from None
    return len(annotations)


def read_reference(path: Path) -> dict[str, tuple[str, str]]:
    """{test slide id: (class, row place)} from testing/reference.csv (no header row)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise PathkitError(f"Camelyon16 reference {path}: not readable ({exc})") from None
    rows = [(values, f"line {i + 1}") for i, values in enumerate(csv.reader(io.StringIO(text))) if values]
    if not rows:
        raise PathkitError(f"Camelyon16 reference {path}: has no rows")
    out: dict[str, tuple[str, str]] = {}
    for values, place in rows:
        if len(values) < 2 or not TEST_NAME.match(cell(values[0])) or cell(values[1]).lower() not in CLASSES:
            raise PathkitError(f"Camelyon16 reference {path}: {place}: expected test_NNN,Tumor|Normal,... (no "
                               f"header), got {','.join(cell(v) for v in values[:4])!r}")
        if cell(values[0]) in out:
            raise PathkitError(f"Camelyon16 reference {path}: {place}: {cell(values[0])} is listed twice")
        out[cell(values[0])] = (cell(values[1]).lower(), place)
    return out


class Camelyon16(SlideCatalogueDataset):
    """CAMELYON16: lymph-node sections of breast-cancer patients, metastasis present or not."""

    name: ClassVar[str] = "camelyon16"
    description: ClassVar[str] = "CAMELYON16 lymph-node slides, normal vs tumor (official train/test, eva's val)"
    task: ClassVar[str] = TASK_SLIDE_CLASSIFICATION
    license: ClassVar[str] = "CC0 1.0"
    citation: ClassVar[str] = ("Ehteshami Bejnordi et al., Diagnostic Assessment of Deep Learning Algorithms for "
                               "Detection of Lymph Node Metastases in Women With Breast Cancer, JAMA 2017")
    default_metrics: ClassVar[tuple[str, ...]] = ("classification",)
    selection_metric: ClassVar[str | None] = "classification:AUROC"
    selection_options: ClassVar[dict[str, object]] = {"n_resamples": 0}
    split_source: ClassVar[str] = "CAMELYON16 training/ and testing/ (val: eva's 54 training slides)"
    layout: ClassVar[str] = LAYOUT

    def slide_rows(self) -> tuple[list[CohortRow], Path]:
        root = Path(self.root)
        for folder in ("training/normal", "training/tumor", "testing/images"):
            require_path(root, folder, self.name, LAYOUT, folder=True)
        reference = require_path(root, "testing/reference.csv", self.name, LAYOUT)
        labels = read_reference(reference)
        rows: list[CohortRow] = []
        for label in CLASSES:
            for path in sorted((root / "training" / label).glob("*.tif")):
                if not TRAIN_NAME.match(path.stem) or not path.stem.startswith(label):
                    raise PathkitError(f"dataset 'camelyon16': {path}: not a {label}_NNN.tif slide of training/{label}")
                part = "val" if path.stem in EVA_VAL_SLIDES else "train"
                rows.append(CohortRow(len(rows), f"training/{label}/{path.name}", path.stem, path.stem, label,
                                      path, part))
        images = {p.stem: p for p in sorted((root / "testing/images").glob("*.tif"))}
        unlisted = sorted(set(images) - set(labels))
        if unlisted:
            raise PathkitError(f"Camelyon16 reference {reference}: {len(unlisted)} test slide(s) in testing/images "
                               f"have no row: {', '.join(unlisted[:20])}")
        for slide, (label, place) in labels.items():
            path = images.get(slide, root / "testing/images" / f"{slide}.tif")
            rows.append(CohortRow(len(rows), f"reference.csv {place}", slide, slide, label, path, "test"))
        self._check_annotations(root, {r.case_id for r in rows})
        return rows, reference

    def _check_annotations(self, root: Path, slides: set[str]) -> None:
        """Each lesion XML follows ASAP's schema and names a slide of the release."""
        counted = 0
        for xml in sorted(root.glob("*/lesion_annotations/*.xml")):
            if xml.stem not in slides:
                raise PathkitError(f"lesion annotation {xml}: names no slide of the release ({xml.stem}.tif absent)")
            read_asap_xml(xml)
            counted += 1
        self._annotated = counted

    def class_order(self, labels, table):
        return CLASSES

    def split_facts(self):
        facts = super().split_facts()
        return {**facts, "annotated_slides": getattr(self, "_annotated", 0)}


@hookimpl
def register_datasets(register):
    register(Camelyon16)
