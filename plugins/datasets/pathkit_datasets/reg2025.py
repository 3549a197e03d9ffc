"""`reg2025`: REG 2025 (MICCAI COMPAY) report generation, with PathReportEval's 5924/740/741 split.

Layout of the release (docs/report-generation.md, "Datasets"):

    <root>/train.json          a JSON list of {"id": "PIT_01_00002_01.tiff", "report": "..."}
                               (any one *.json in the root, or option reports=FILE; the PathBench
                               file {"train": [...], "val": [...], "test": [...]} is read too)
    <root>/PIT_01_00002_01.tiff   one slide per id (option slides_dir=DIR to look elsewhere)
    <root>/features/PIT_01_00002_01.safetensors   optional precomputed features (.h5 and .pt too;
                               option features_dir=DIR)

Option split: "auto" (default) uses your split when you give one, exactly as written (option
splits_file=FILE, or the train/val/test keys of a PathBench-layout report file), else
PathReportEval's (ids shipped with this plugin, derived from PathBench's
`reports/reg_reports_splits.json`) over the cases present, else (a part would be empty, as on a
small subset) a seeded patient-disjoint 80/10/10 split, said in the log and kept in the workspace;
"pathreporteval" always the published one; "random" always a drawn one. Patient id: a record's
"patient_id" when given, else REG's rule for REG-shaped ids only (PIT_01_09851_02 belongs to
PIT_01_09851; any other id, e.g. case_001, is its own patient).
Reports are kept exactly as released (no cleaning); at most 320 tokens (PathBench).
The released TIFFs carry a 72-dpi placeholder resolution tag, which tiling refuses as
implausible: give the scan resolution with option mpp=MICRONS (e.g. --dataset-option mpp=0.5).
"""

from __future__ import annotations

import json
import logging
import re
from importlib import resources
from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._reports import (
    FEATURE_SUFFIXES,
    RELEASE_FOLDER_OPTIONS,
    ReportDataset,
    find_file,
    strip_slide_suffix,
)
from pathkit_sdk.cohort import column_split, option, part_counts, plain_name
from pathkit_sdk.reports import read_report_records

log = logging.getLogger(__name__)

SPLIT_RESOURCE = "reg2025_pathreporteval_split.json"
REPORT_FILE_NAMES = ("train.json", "reports.json", "reg2025.json", "reg_reports_splits.json")
RANDOM_FRACTIONS = (0.1, 0.1)
RANDOM_SPLIT_FILE = "reg2025-random-seed{seed}.csv"  # drawn splits, kept in the workspace
_SLIDE_NUMBER = re.compile(r"_\d+$")
_REG_ID = re.compile(r"^[A-Za-z]+_\d+_\d+_\d+$")  # PIT_01_00002_01: centre, batch, case, slide number


def published_split() -> dict[str, list[str]]:
    """PathReportEval's REG 2025 case ids per split (ids without the .tiff suffix)."""
    data = json.loads(resources.files("pathkit_datasets").joinpath("data", SPLIT_RESOURCE).read_text("utf-8"))
    return {part: list(data[part]) for part in ("train", "val", "test")}


def patient_of(case_id: str) -> str:
    """REG ids are <centre>_<case>_<slide number>: `PIT_01_09851_02` belongs to `PIT_01_09851`.
    Any other id (`case_001`) is its own patient: the rule is REG's, not a guess about names."""
    return _SLIDE_NUMBER.sub("", case_id) if _REG_ID.match(case_id) else case_id


class REG2025(ReportDataset, card="reg2025"):
    """REG 2025 challenge WSIs with their short semi-structured reports."""

    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("reports", "path", None, "the report JSON (default: train.json, reports.json, ... or the only "
                      "*.json in the root)"),
        *RELEASE_FOLDER_OPTIONS,
        DatasetOption("split", "auto|pathreporteval|random", "auto",
                      "auto: your split (splits_file, or a train/val/test layout of the report file) when given, "
                      "else PathReportEval's over the cases present, else a drawn one; pathreporteval: always the "
                      "published split; random: a drawn seeded patient-disjoint 80/10/10 split"),
        DatasetOption("split_seed", "int", 0, "seed of a drawn split"),
        option("splits_file"),
        DatasetOption("mpp", "float", None, "level-0 micrometres per pixel of every slide (the released TIFFs carry "
                      "a 72-dpi placeholder; the scans are about 0.25)"),
    )

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        path = self.report_file(REPORT_FILE_NAMES, "reports", "report JSON")
        found = read_report_records(path, "reg2025 report file", keys=("id", "report"), split_layout=True)
        records, parts_of = found.records, found.parts
        layout: dict[str, str] = {}  # case id -> part, when the file is the {"train", "val", "test"} layout
        root, slides_dir, features_dir = self.release_folders()
        mpp = self.mpp_option()
        cases: dict[str, Case] = {}
        excluded: dict[str, str] = {}
        for i, record in enumerate(records):
            case_id = plain_name(strip_slide_suffix(str(record["id"]).strip()),
                                 f"reg2025 report file {path}: record {i} id")
            if case_id in cases or case_id in excluded:
                raise PathkitError(f"reg2025 report file {path}: id {case_id!r} appears twice")
            slide = find_file(slides_dir, case_id, (".tiff", ".tif", ".svs"))
            feature = find_file(features_dir, case_id, FEATURE_SUFFIXES)
            patient = str(record.get("patient_id") or "").strip() or patient_of(case_id)
            found = self.report_case(case_id, patient, record["report"],
                                     slides=(slide,) if slide and not feature else (),
                                     features=(feature,) if feature else (), meta={"mpp": mpp} if mpp else None)
            if self.keep(cases, excluded, case_id, found, f" (in {path.name})") and parts_of:
                layout[case_id] = parts_of[i]
        self.require_inputs(cases, f"reg2025 at {root}: none of the {len(cases)} ids in {path.name} has a slide "
                                   f"({slides_dir}/<id>.tiff) or a feature file")
        splits = self._split(cases, excluded, path, layout)
        return cases, splits, excluded

    def _split(self, cases: dict[str, Case], excluded: dict[str, str], reports: Path,
               layout: dict[str, str]) -> dict[str, list[str]]:
        """The user's split when given (splits_file, or the report file's train/val/test layout),
        else the published one, else a drawn one (option split)."""
        mode = str(self.options["split"])
        patients = {c: case.patient_id for c, case in cases.items()}
        given = self.option_path("splits_file")
        if given is not None and mode != "auto":
            raise PathkitError(f"reg2025: splits_file {given} is your split, used as written; it goes with split=auto, "
                               f"not split={mode}")
        if mode == "auto" and given is not None:
            if layout:
                raise PathkitError(f"reg2025: both {reports.name} (its train/val/test keys) and splits_file {given} "
                                   "give a split; keep one")
            return self.report_split(cases, excluded, RANDOM_FRACTIONS, RANDOM_SPLIT_FILE)
        if mode == "auto" and layout:
            parts, self._split_facts = column_split(reports, {c: (p, p) for c, p in layout.items()}, patients,
                                                    source="the train/val/test keys")
            return parts
        if mode != "random":
            published = published_split()
            listed = {c for ids in published.values() for c in ids}
            parts = {p: [c for c in ids if c in cases] for p, ids in published.items()}
            outside = sorted(set(cases) - listed)
            absent = len(listed) - sum(len(v) for v in parts.values())
            if mode == "pathreporteval" or all(parts.values()):
                for case_id in outside:
                    excluded[case_id] = "not in the PathReportEval split"
                    cases.pop(case_id)
                if absent:
                    log.info("reg2025: %d of the %d PathReportEval cases are not in %s", absent, len(listed),
                             self.root)
                self._split_facts = {"source": "published", "description": "published: PathReportEval (PathBench "
                                     "reports/reg_reports_splits.json) over the cases present",
                                     **part_counts(parts, patients)}
                return parts
            log.warning("reg2025: the published split leaves the %s part(s) empty on the %d cases present; "
                        "drawing a seeded patient-disjoint 80/10/10 split instead",
                        ", ".join(p for p, v in parts.items() if not v), len(cases))
        return self.report_split(cases, excluded, RANDOM_FRACTIONS, RANDOM_SPLIT_FILE)  # no splits_file here


@hookimpl
def register_datasets(register):
    register(REG2025)
