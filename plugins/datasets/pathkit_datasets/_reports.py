"""Shared machinery of the report datasets (reg2025, histai, tcga-pathtext, demo-reports, slides-reports).

`ReportDataset` loads its release once (lazily, `pathkit_sdk.cohort.CohortDataset`), keeps the usable cases,
the split and how it was made, and the cases it left out with the reason (`excluded_cases()`:
empty or non-UTF-8 reports, ids outside the published split, cases without a slide), and
validates the folder with errors that say what layout was expected. References are the
dataset's cleaned report text (`report_cleaning`, shared with the tokenizer through
`pathkit_tasks.report.text`); the raw text stays in `Case.meta`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._cards import Carded
from pathkit_sdk.cohort import CohortDataset, drawn_split, file_split, option, plain_name
from pathkit_sdk.reports import find_json_file
from pathkit_tasks import TASK_REPORT
from pathkit_tasks.report.text import clean_report, invalid_text_reason

log = logging.getLogger(__name__)

FEATURE_SUFFIXES = (".safetensors", ".h5", ".pt")
# The last options of the report releases whose split is drawn unless the user gives one (histai,
# tcga-pathtext).
DRAWN_SPLIT_OPTIONS = (
    DatasetOption("split_seed", "int", 0, "seed of the drawn split (PathReportEval proportions)"),
    option("splits_file"),
    DatasetOption("mpp", "float", None, "level-0 micrometres per pixel of every slide (over the files' own)"),
)
# Where a report release's slides and precomputed features are: read by `ReportDataset.release_folders`
# (reg2025, histai, tcga-pathtext); how each release names and arranges its files is its layout.
RELEASE_FOLDER_OPTIONS = (
    DatasetOption("slides_dir", "path", None, "folder of the release's slides, arranged as its layout says (default: "
                  "the root)"),
    DatasetOption("features_dir", "path", None, "folder of precomputed .safetensors|.h5|.pt features, named as its "
                  "layout says (default: <root>/features)"),
)
SLIDE_SUFFIXES = (".tiff", ".tif", ".svs", ".ndpi", ".mrxs", ".scn", ".bif", ".vms")


def find_file(folder: Path | None, stem: str, suffixes: tuple[str, ...]) -> Path | None:
    """`folder/stem<suffix>` for the first suffix that exists; `stem` must be a plain name
    (an id like `../../escape` would look outside `folder`)."""
    if folder is None:
        return None
    plain_name(stem, f"looking up its file in {folder}")
    for suffix in suffixes:
        candidate = folder / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def strip_slide_suffix(name: str) -> str:
    lower = name.lower()
    for suffix in SLIDE_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def assemble_report(record: dict[str, Any], fields: tuple[str, ...]) -> str:
    """The report text of a record from several fields (HistAI's rule): each non-empty field is
    stripped and whitespace-collapsed, ended with a period when it has no closing punctuation, a
    field repeating an earlier one (case-insensitively) is dropped, the parts joined by spaces."""
    parts: list[str] = []
    seen: set[str] = set()
    for name in fields:
        value = record.get(name)
        if value is None:
            continue
        text = " ".join(str(value).split())
        if not text:
            continue
        if text[-1] not in ".!?":
            text += "."
        key = text.lower()
        if key in seen:
            continue
        seen.add(key)
        parts.append(text)
    return " ".join(parts)


class ReportDataset(Carded, CohortDataset):
    """Base of the report datasets: report cleaning, selection by BLEU-4, the cohort machinery
    (lazy loading, splits, exclusions, validation) of `pathkit_sdk.cohort.CohortDataset`."""

    task: ClassVar[str] = TASK_REPORT
    default_metrics: ClassVar[tuple[str, ...]] = ("nlg", "crqs")
    selection_metric: ClassVar[str | None] = "nlg:BLEU-4"
    # BLEU-4 picks the epoch; METEOR (a Java process) is left out of the per-epoch scoring
    selection_options: ClassVar[dict[str, Any]] = {"meteor": False}
    # read by the report tokenizer (pathkit_generators._text.tokenizer.report_settings)
    report_cleaning: ClassVar[str] = "none"
    max_report_tokens: ClassVar[int] = 320

    def cleaning(self) -> str:
        """The report cleaning applied to targets: the dataset's (an option may choose another)."""
        return str(self.options.get("report_cleaning") or self.report_cleaning)

    def report_file(self, names: Sequence[str], option: str, what: str) -> Path:
        """The release's JSON file (`what`): option `option`, else the first of `names` in the root,
        else the only `*.json` there."""
        return find_json_file(self.name, Path(self.root), names, self.option_path(option), what, option=option,
                              layout=self.layout)

    def require_inputs(self, cases: Mapping[str, Case], problem: str) -> None:
        """Stop, saying `problem` and the layout, when no case found a slide or a feature file."""
        if cases and not any(c.slides or c.features for c in cases.values()):
            raise PathkitError(f"{problem}; expected layout: {self.layout}")

    def release_folders(self) -> tuple[Path, Path, Path | None]:
        """The root, the slides' folder (option `slides_dir`, else the root) and the precomputed
        features' folder (option `features_dir`, else `<root>/features` when there is one)."""
        root = Path(self.root)
        features = self.option_path("features_dir") or (root / "features" if (root / "features").is_dir() else None)
        return root, self.option_path("slides_dir") or root, features

    def report_split(self, cases: Mapping[str, Case], excluded: Mapping[str, str], fractions: tuple[float, float],
                     file_name: str) -> dict[str, list[str]]:
        """The user's split (option `splits_file`) when given, else one drawn in `fractions` with
        option `split_seed` and kept in the workspace as `file_name` ("{seed}" is filled in)."""
        patients = {c: case.patient_id for c, case in cases.items()}
        given = self.option_path("splits_file")
        if given is not None:
            parts, self._split_facts = file_split(given, patients, normalise_id=strip_slide_suffix, excluded=excluded)
        else:
            seed = int(self.options.get("split_seed") or 0)
            parts, self._split_facts = drawn_split(self.name, patients, seed=seed, fractions=fractions,
                                                   workdir=self.options.get("workdir"),
                                                   file_name=file_name.format(seed=seed))
        return parts

    @staticmethod
    def keep(cases: dict[str, Case], excluded: dict[str, str], case_id: str,
             found: tuple[Case | None, str | None], where: str = "") -> bool:
        """Put `report_case`'s case into `cases`, or its problem (followed by `where`, e.g. " (in
        train.json)") into `excluded`; True when the case is kept."""
        case, problem = found
        if case is None:
            excluded[case_id] = f"{problem}{where}"
            return False
        cases[case_id] = case
        return True

    def report_case(self, case_id: str, patient_id: str, raw: Any, *, slides: tuple[Path, ...] = (),
                    features: tuple[Path, ...] = (), meta: Mapping[str, Any] | None = None,
                    ) -> tuple[Case | None, str | None]:
        """A Case whose target is the cleaned report, or (None, reason) for an unusable report."""
        problem = invalid_text_reason(raw)
        if problem:
            return None, problem
        target = clean_report(raw, self.cleaning())
        if not target.strip():
            return None, "report is empty after cleaning"
        return Case(case_id=case_id, patient_id=patient_id, target=target, slides=slides, features=features,
                    meta={"raw_report": raw, **dict(meta or {})}), None
