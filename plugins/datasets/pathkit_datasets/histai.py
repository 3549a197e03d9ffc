"""`histai`: HISTAI whole-slide images with their pathology reports, patient-disjoint 80/10/10 splits.

Layout of the release (docs/report-generation.md, "Datasets"; HISTAI README and HF
`histai/HISTAI-metadata`):

    <root>/metadata.json        the HISTAI-metadata JSON: a list of case records with
                                "case_mapping" ("histai/HISTAI-skin-b2/case_13384"),
                                "diagnosis", "conclusion", "micro_protocol", ... (option metadata=FILE)
    <root>/HISTAI-skin-b2/case_13384/slide_HE_1.tiff   the slides of each case, as downloaded
                                (a leading "histai/" folder is accepted; option slides_dir=DIR)
    <root>/features/HISTAI-skin-b2_case_13384.safetensors   optional precomputed features per case

Report text: the fields named by option report_fields (default
"micro_protocol,conclusion,diagnosis") in that order; each non-empty field is stripped, ended
with a period when it has no closing punctuation, a field repeating an earlier one
(case-insensitively) is dropped, and the parts are joined with single spaces. The result is then
cleaned like PathBench's HistAI text (lower-cased, punctuation stripped; at most 600 tokens, as PathBench).

Case id: "<subset>_case_<n>"; patient id: the record's "patient_id" when present, else the case
(HISTAI publishes no patient key). Option splits_file=FILE gives your split (CSV case_id,split
or JSON {"train": [...], ...}), used exactly as written; otherwise the split is drawn once with
option split_seed (0) in PathReportEval's proportions (9980/1248/1248 of 12,476) and kept in the
workspace (<workdir>/splits/histai/histai-seed<seed>.csv), never in the dataset folder.

Every HISTAI case names its slides slide_<stain>_<n>.tiff, so slide file names repeat across
cases; pathkit names slides by file name, so when the run gives a workspace the slides are
linked there under unique names (<case id>__<file name>).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._reports import (
    DRAWN_SPLIT_OPTIONS,
    FEATURE_SUFFIXES,
    RELEASE_FOLDER_OPTIONS,
    SLIDE_SUFFIXES,
    ReportDataset,
    assemble_report,
    find_file,
)
from pathkit_sdk.cohort import plain_name
from pathkit_sdk.reports import read_report_records

log = logging.getLogger(__name__)

DEFAULT_REPORT_FIELDS = ("micro_protocol", "conclusion", "diagnosis")
FRACTIONS = (1248 / 12476, 1248 / 12476)  # PathReportEval Table 1: 9980 / 1248 / 1248
METADATA_NAMES = ("metadata.json", "HISTAI-metadata.json", "histai_metadata.json")


def parse_case_mapping(value: Any) -> tuple[str, str] | None:
    """("HISTAI-skin-b2", "case_13384") from "histai/HISTAI-skin-b2/case_13384"."""
    if not isinstance(value, str):
        return None
    parts = [p for p in value.strip().split("/") if p]
    if len(parts) < 2 or not parts[-1].startswith("case_"):
        return None
    return parts[-2], parts[-1]


class HistAI(ReportDataset, card="histai"):
    """HISTAI: a large multi-organ WSI collection with diagnostic text for every case."""

    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("metadata", "path", None, "the HISTAI-metadata JSON (default: metadata.json, ... or the only "
                      "*.json in the root)"),
        *RELEASE_FOLDER_OPTIONS,
        DatasetOption("report_fields", "str", ",".join(DEFAULT_REPORT_FIELDS),
                      "metadata fields joined into the report, in order"),
        DatasetOption("stains", "str", "all", "slide stains to keep (comma-separated name parts, e.g. HE), or all"),
        *DRAWN_SPLIT_OPTIONS,
    )

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        path = self.report_file(METADATA_NAMES, "metadata", "metadata JSON")
        records = read_report_records(path, "histai metadata", wrappers=("cases", "data")).records
        fields = tuple(f.strip() for f in str(self.options["report_fields"]).split(",") if f.strip())
        if not fields:
            raise PathkitError("histai: option report_fields names no field")
        stains = str(self.options.get("stains") or "all")
        wanted = None if stains.lower() == "all" else {s.strip().lower() for s in stains.split(",")}
        root, slides_dir, features_dir = self.release_folders()
        workdir = self.options.get("workdir")
        mpp = self.mpp_option()
        links = Path(workdir) / "datasets" / "histai" / "slide-links" if workdir else None
        cases: dict[str, Case] = {}
        excluded: dict[str, str] = {}
        for i, record in enumerate(records):
            mapping = parse_case_mapping(record.get("case_mapping"))
            if mapping is None:
                raise PathkitError(f"histai metadata {path}: record {i} has no case_mapping like "
                                   f"\"histai/HISTAI-skin-b2/case_13384\" ({str(record)[:80]!r})")
            subset, case_folder = mapping
            where = f"histai metadata {path}: record {i} case_mapping part"
            case_id = f"{plain_name(subset, where)}_{plain_name(case_folder, where)}"
            if case_id in cases or case_id in excluded:
                raise PathkitError(f"histai metadata {path}: case {subset}/{case_folder} appears twice")
            feature = find_file(features_dir, case_id, FEATURE_SUFFIXES)
            slides: tuple[Path, ...] = ()
            if feature is None:
                slides = self._slides(slides_dir, subset, case_folder, wanted)
                if wanted is not None and not slides and self._slides(slides_dir, subset, case_folder, None):
                    excluded[case_id] = f"no slide with stain {stains}"
                    continue
                if links is not None:
                    slides = tuple(self._link(links, case_id, s) for s in slides)
            patient = str(record.get("patient_id") or case_id)
            found = self.report_case(case_id, patient, assemble_report(record, fields), slides=slides,
                                     features=(feature,) if feature else (),
                                     meta={"case_mapping": record.get("case_mapping"),
                                           "specialization": record.get("specialization"),
                                           **({"mpp": mpp} if mpp else {})})
            self.keep(cases, excluded, case_id, found, f" (fields {', '.join(fields)})")
        self.require_inputs(cases, f"histai at {root}: no case folder with slides (<subset>/case_<n>/*.tiff) or "
                                   f"feature file was found for the {len(cases)} cases")
        splits = self.report_split(cases, excluded, FRACTIONS, "histai-seed{seed}.csv")
        return cases, splits, excluded

    @staticmethod
    def _slides(slides_dir: Path, subset: str, case_folder: str, wanted: set[str] | None) -> tuple[Path, ...]:
        for base in (slides_dir / subset / case_folder, slides_dir / "histai" / subset / case_folder):
            if base.is_dir():
                found = sorted(p for p in base.iterdir()
                               if p.is_file() and p.suffix.lower() in SLIDE_SUFFIXES and not p.name.startswith("."))
                if wanted is not None:
                    found = [p for p in found if wanted & {t.lower() for t in p.stem.split("_")}]
                return tuple(found)
        return ()

    @staticmethod
    def _link(folder: Path, case_id: str, slide: Path) -> Path:
        """A uniquely named symbolic link to `slide` (HISTAI slide names repeat across cases)."""
        link = folder / f"{case_id}__{slide.name}"
        target = slide.resolve()
        try:
            if link.is_symlink() and Path(os.readlink(link)) == target:
                return link
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{link.name}.{os.getpid()}.tmp"
            if tmp.is_symlink() or tmp.exists():
                tmp.unlink()
            tmp.symlink_to(target)
            os.replace(tmp, link)
        except OSError as exc:
            raise PathkitError(f"histai: cannot link {slide} into {folder} ({exc}); slide names repeat across "
                               "HISTAI cases, so pathkit needs uniquely named links") from exc
        return link


@hookimpl
def register_datasets(register):
    register(HistAI)
