"""`reg2025`: REG 2025 (MICCAI COMPAY) report generation, with PathReportEval's 5924/740/741 split.

Layout of the release (docs/report-generation.md, "Datasets"):

    <root>/train.json          a JSON list of {"id": "PIT_01_00002_01.tiff", "report": "..."}
                               (any one *.json in the root, or option reports=FILE; the PathBench
                               file {"train": [...], "val": [...], "test": [...]} is read too)
    <root>/PIT_01_00002_01.tiff   one slide per id (option slides_dir=DIR to look elsewhere)
    <root>/features/PIT_01_00002_01.safetensors   optional precomputed features (.h5 and .pt too;
                               option features_dir=DIR)

The split is PathReportEval's (ids shipped with this plugin, derived from PathBench's
`reports/reg_reports_splits.json`). Option split: "auto" (default: the published split over the
cases present; a seeded patient-disjoint 80/10/10 split, with a warning, when a part would be
empty, as on a small subset), "pathreporteval" (always the published one), "random".
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
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, PathkitError
from pathkit_core.splits import load_or_draw_split
from pathkit_datasets._reports import (
    FEATURE_SUFFIXES,
    ReportDataset,
    find_file,
    read_json,
    strip_slide_suffix,
)

log = logging.getLogger(__name__)

SPLIT_RESOURCE = "reg2025_pathreporteval_split.json"
REPORT_FILE_NAMES = ("train.json", "reports.json", "reg2025.json", "reg_reports_splits.json")
RANDOM_FRACTIONS = (0.1, 0.1)
_SLIDE_NUMBER = re.compile(r"_\d+$")


def published_split() -> dict[str, list[str]]:
    """PathReportEval's REG 2025 case ids per split (ids without the .tiff suffix)."""
    data = json.loads(resources.files("pathkit_datasets").joinpath("data", SPLIT_RESOURCE).read_text("utf-8"))
    return {part: list(data[part]) for part in ("train", "val", "test")}


def patient_of(case_id: str) -> str:
    """REG ids are <centre>_<case>_<slide number>: `PIT_01_09851_02` belongs to `PIT_01_09851`."""
    return _SLIDE_NUMBER.sub("", case_id)


class REG2025(ReportDataset):
    """REG 2025 challenge WSIs with their short semi-structured reports."""

    name = "reg2025"
    description = "REG 2025 report generation (PathReportEval split 5924/740/741)"
    license = "REG 2025 challenge data terms (https://reg2025.grand-challenge.org); split ids: PathBench, MIT"
    citation = ("MICCAI COMPAY Workshop Organizers (2025), REG 2025 challenge; PathReportEval: A Systematic "
                "Benchmark for Pathology Report Generation (split and protocol)")
    metric_options: ClassVar[dict[str, dict[str, Any]]] = {"crqs": {"clinical_schema": "reg2025"}}
    report_cleaning: ClassVar[str] = "none"
    max_report_tokens: ClassVar[int] = 320
    option_defaults: ClassVar[dict[str, Any]] = {
        "reports": None,
        "slides_dir": None,
        "features_dir": None,
        "split": "auto",
        "split_seed": 0,
        "splits_file": None,
        "mpp": None,
    }
    layout_help: ClassVar[str] = (
        "<root>/train.json (a JSON list of {\"id\": \"PIT_01_00002_01.tiff\", \"report\": ...}), slides "
        "<root>/<id>.tiff, or features <root>/features/<id>.safetensors|.h5|.pt"
    )

    def reports_file(self) -> Path:
        explicit = self.option_path("reports")
        if explicit is not None:
            return explicit
        root = Path(self.root)
        for name in REPORT_FILE_NAMES:
            if (root / name).is_file():
                return root / name
        found = sorted(p for p in root.glob("*.json") if p.is_file())
        if len(found) == 1:
            return found[0]
        if not found:
            raise PathkitError(f"reg2025: no report JSON in {root}; expected layout: {self.layout_help}")
        raise PathkitError(f"reg2025: several JSON files in {root} ({', '.join(p.name for p in found)}); "
                           "choose one with the dataset option reports=FILE")

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        path = self.reports_file()
        data = read_json(path, "reg2025 report file")
        if isinstance(data, dict) and all(isinstance(data.get(p), list) for p in ("train", "val", "test")):
            records = [r for p in ("train", "val", "test") for r in data[p]]
        elif isinstance(data, list):
            records = data
        else:
            raise PathkitError(f"reg2025 report file {path}: expected a JSON list of {{\"id\", \"report\"}} "
                               f"records, found a {type(data).__name__}")
        root = Path(self.root)
        slides_dir = self.option_path("slides_dir") or root
        features_dir = self.option_path("features_dir") or (root / "features" if (root / "features").is_dir() else None)
        mpp = self.options.get("mpp")
        cases: dict[str, Case] = {}
        excluded: dict[str, str] = {}
        for i, record in enumerate(records):
            if not isinstance(record, dict) or "id" not in record or "report" not in record:
                raise PathkitError(f"reg2025 report file {path}: record {i} is not an object with \"id\" and "
                                   f"\"report\" ({str(record)[:80]!r})")
            case_id = strip_slide_suffix(str(record["id"]).strip())
            if case_id in cases or case_id in excluded:
                raise PathkitError(f"reg2025 report file {path}: id {case_id!r} appears twice")
            slide = find_file(slides_dir, case_id, (".tiff", ".tif", ".svs"))
            feature = find_file(features_dir, case_id, FEATURE_SUFFIXES)
            case, problem = self.report_case(
                case_id, patient_of(case_id), record["report"],
                slides=(slide,) if slide and not feature else (), features=(feature,) if feature else (),
                meta={"mpp": float(mpp)} if mpp else None,
            )
            if case is None:
                excluded[case_id] = f"{problem} (in {path.name})"
            else:
                cases[case_id] = case
        if cases and not any(c.slides or c.features for c in cases.values()):
            raise PathkitError(f"reg2025 at {root}: none of the {len(cases)} ids in {path.name} has a slide "
                               f"({slides_dir}/<id>.tiff) or a feature file; expected layout: {self.layout_help}")
        splits = self._split(cases, excluded)
        return cases, splits, excluded

    def _split(self, cases: dict[str, Case], excluded: dict[str, str]) -> dict[str, list[str]]:
        mode = str(self.options.get("split") or "auto")
        if mode not in ("auto", "pathreporteval", "random"):
            raise PathkitError(f"reg2025: option split={mode!r}; choose auto, pathreporteval or random")
        if mode != "random":
            published = published_split()
            listed = {c for ids in published.values() for c in ids}
            parts = {p: [c for c in ids if c in cases] for p, ids in published.items()}
            outside = sorted(set(cases) - listed)
            absent = len(listed) - sum(len(v) for v in parts.values())
            usable = all(parts.values())
            if mode == "pathreporteval" or usable:
                for case_id in outside:
                    excluded[case_id] = "not in the PathReportEval split"
                    cases.pop(case_id)
                if absent:
                    log.info("reg2025: %d of the %d PathReportEval cases are not in %s", absent, len(listed),
                             self.root)
                self.split_source = "PathReportEval (PathBench reports/reg_reports_splits.json)"
                return parts
            log.warning("reg2025: the published split leaves the %s part(s) empty on the %d cases present; "
                        "using a seeded patient-disjoint 80/10/10 split instead",
                        ", ".join(p for p, v in parts.items() if not v), len(cases))
        seed = int(self.options.get("split_seed") or 0)
        self.split_source = f"random patient-disjoint 80/10/10, seed {seed}"
        return load_or_draw_split(self.splits_file(f"reg2025-random-seed{seed}.csv"),
                                     {c: case.patient_id for c, case in cases.items()},
                                     fractions=RANDOM_FRACTIONS, seed=seed)


@hookimpl
def register_datasets(register):
    register(REG2025)
