"""`tcga-pathtext`: TCGA diagnostic slides with WSI-Caption's PathText reports, patient-disjoint splits.

Layout (docs/report-generation.md, "Datasets"; WSI-Caption README, PathText JSON version):

    <root>/PathText.json      a JSON list of {"id": "TCGA-A2-A0CM", "caption": "..."}: one report
                              per TCGA patient (option annotations=FILE; any one *.json in the root)
    <root>/**/TCGA-A2-A0CM-01Z-00-DX1.<uuid>.svs   the GDC slides, anywhere below the root
                              (option slides_dir=DIR)
    <root>/features/<slide id>.safetensors        optional precomputed features, named by the slide
                              file name without its extension, or by the patient id

Each patient is mapped to ONE diagnostic slide: among the patient's slide files whose barcode
has a DX portion (formalin-fixed diagnostic sections; TS/BS are frozen sections), the lowest DX
number (DX1 first), then the lowest sample type (01 primary tumour first), then the name. A
patient with only frozen sections is left out ("no diagnostic (DX) slide"). When the JSON id is
itself a slide barcode, that slide is used.

Reports are cleaned like PathBench's TCGA text (lower-cased, punctuation stripped; at most 600
tokens). The split is drawn once with option split_seed (0) in PathReportEval's proportions
(7074/884/885 of 8843) and kept in the workspace (<workdir>/splits/tcga-pathtext/); option
splits_file=FILE gives your own split instead, used exactly as written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._reports import (
    DRAWN_SPLIT_OPTIONS,
    FEATURE_SUFFIXES,
    RELEASE_FOLDER_OPTIONS,
    SLIDE_SUFFIXES,
    ReportDataset,
    find_file,
    strip_slide_suffix,
)
from pathkit_sdk.reports import read_report_records

FRACTIONS = (884 / 8843, 885 / 8843)  # PathReportEval Table 1: 7074 / 884 / 885
ANNOTATION_NAMES = ("PathText.json", "pathtext.json", "TCGA_PathText.json")
PATIENT = re.compile(r"^(TCGA-[A-Z0-9]{2}-[A-Z0-9]{4})", re.IGNORECASE)
# TCGA slide barcode: patient - sample(2 digits + vial letter) - portion - slide type+number
SLIDE_BARCODE = re.compile(r"^TCGA-[A-Z0-9]{2}-[A-Z0-9]{4}-(\d{2})[A-Z]?-\d{2}-([A-Z]{2})(\d+)", re.IGNORECASE)


def files_by_patient(folder: Path, suffixes: tuple[str, ...]) -> dict[str, list[Path]]:
    """The TCGA files (`TCGA-*` with one of `suffixes`) under `folder`, by upper-cased patient
    barcode, each list in path order."""
    found: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("TCGA-*")):
        if path.is_file() and path.suffix.lower() in suffixes and (m := PATIENT.match(path.name)):
            found.setdefault(m.group(1).upper(), []).append(path)
    return found


def diagnostic_rank(slide: Path) -> tuple[int, int, str] | None:
    """Sort key of a diagnostic slide (DX number, sample type, name); None for other slides."""
    match = SLIDE_BARCODE.match(slide.name)
    if not match or match.group(2).upper() != "DX":
        return None
    return int(match.group(3)), int(match.group(1)), slide.name


def choose_diagnostic_slide(slides: list[Path]) -> Path | None:
    ranked = sorted((r, s) for s in slides if (r := diagnostic_rank(s)) is not None)
    return ranked[0][1] if ranked else None


class TCGAPathText(ReportDataset, card="tcga-pathtext"):
    """TCGA WSIs paired with PathText slide-level captions (WSI-Caption, MICCAI 2024)."""

    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("annotations", "path", None, "the PathText JSON (default: PathText.json, ... or the only "
                      "*.json in the root)"),
        *RELEASE_FOLDER_OPTIONS,
        *DRAWN_SPLIT_OPTIONS,
    )

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        path = self.report_file(ANNOTATION_NAMES, "annotations", "annotation JSON")
        data = read_report_records(path, "tcga-pathtext annotations", keys=("id", "caption")).records
        root, slides_dir, features_dir = self.release_folders()
        mpp = self.mpp_option()
        by_patient = files_by_patient(slides_dir, SLIDE_SUFFIXES)
        cases: dict[str, Case] = {}
        excluded: dict[str, str] = {}
        for i, record in enumerate(data):
            raw_id = strip_slide_suffix(str(record["id"]).strip())
            match = PATIENT.match(raw_id)
            if not match:
                raise PathkitError(f"tcga-pathtext annotations {path}: record {i} id {raw_id!r} is not a TCGA "
                                   "patient barcode (TCGA-XX-XXXX)")
            patient = match.group(1).upper()
            if patient in cases or patient in excluded:
                raise PathkitError(f"tcga-pathtext annotations {path}: patient {patient} appears twice")
            candidates = by_patient.get(patient, [])
            exact = [s for s in candidates if strip_slide_suffix(s.name).upper() == raw_id.upper()]
            slide = exact[0] if exact else choose_diagnostic_slide(candidates)
            if candidates and slide is None:
                excluded[patient] = (f"no diagnostic (DX) slide: only {', '.join(s.name for s in candidates[:3])}")
                continue
            feature = None
            if slide is not None:
                feature = find_file(features_dir, strip_slide_suffix(slide.name), FEATURE_SUFFIXES)
            feature = feature or find_file(features_dir, patient, FEATURE_SUFFIXES)
            found = self.report_case(patient, patient, record["caption"],
                                     slides=(slide,) if slide and not feature else (),
                                     features=(feature,) if feature else (),
                                     meta={"slide": slide.name if slide else None, **({"mpp": mpp} if mpp else {})})
            self.keep(cases, excluded, patient, found)
        self.require_inputs(cases, f"tcga-pathtext at {root}: no TCGA slide (TCGA-XX-XXXX-...-DX1.<uuid>.svs) or "
                                   f"feature file was found for the {len(cases)} patients")
        splits = self.report_split(cases, excluded, FRACTIONS, "tcga-pathtext-seed{seed}.csv")
        return cases, splits, excluded


@hookimpl
def register_datasets(register):
    register(TCGAPathText)
