"""`slides-reports`: your own slides and their reports: report generation without a plugin.

Layout (docs/file-formats.md, "Cohort tables"; docs/user-guide.md, "Your own slides"):

    <root>/reports.json    a JSON list [{"id": "case_001.tiff", "report": "..."}] as REG 2025, JSONL, CSV,
                           TSV or Parquet (option table=FILE for another name or place); the REG/PathBench
                           layout {"train": [...], "val": [...], "test": [...]} is your split
    <root>/case_001.tiff   the slides, named by id in the root (option slides_dir=DIR), or given per row
                           in a slide_path column (absolute or relative to the table)

Columns: `report` (or `text`, `caption`; option report_column=NAME, or report_fields=a,b to join
several columns by HistAI's rule) and `id` (or `case_id`; default: the slide file name), optional
`slide_path`, `patient_id` (default: the case: ids are never parsed for a patient), `split`, `mpp`,
`cohort`; other columns are kept in the case's meta. Reports are used as written (option
report_cleaning=pathbench lower-cases and strips punctuation as PathBench does for HistAI/TCGA).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._reports import SLIDE_SUFFIXES, ReportDataset, assemble_report, find_file, strip_slide_suffix
from pathkit_sdk.cohort import (
    COHORT_OPTIONS,
    check_duplicates,
    choose_split,
    cohort_rows,
    find_column,
)
from pathkit_tasks.report.text import CLEANING_STYLES

TABLE_NAMES = ("reports.json", "reports.jsonl", "reports.csv", "reports.tsv", "reports.parquet")


class SlidesReports(ReportDataset, card="slides-reports"):
    """A folder of slides with their reports (REG-style JSON, JSONL, CSV or Parquet)."""

    report_cleaning: ClassVar[str] = "none"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *COHORT_OPTIONS,
        DatasetOption("slides_dir", "path", None, "where slides named by id are found when the table has no "
                      "slide_path column (default: the root)"),
        DatasetOption("report_column", "str", None, "the column holding the report (default: report, text, "
                      "caption or findings)"),
        DatasetOption("report_fields", "str", None, "several columns joined into the report, in order (HistAI's "
                      "rule: each ended with a period, repeats dropped)"),
        DatasetOption("report_cleaning", "|".join(CLEANING_STYLES), "none",
                      "none: reports as written; pathbench: lower-cased, punctuation stripped (PathBench's HistAI "
                      "and TCGA text)"),
    )

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        root = Path(self.root)
        path, table = self.read_cohort_table(TABLE_NAMES, "reports file")
        fields = tuple(f.strip() for f in str(self.options.get("report_fields") or "").split(",") if f.strip())
        missing_fields = [f for f in fields if f not in table.columns]
        if missing_fields:
            raise PathkitError(f"reports file {path}: option report_fields names column(s) "
                               f"{', '.join(missing_fields)} it does not have; it has: {', '.join(table.columns)}")
        by_path = find_column(table.columns, "slide_path") is not None
        rows = cohort_rows(table, file_key="slide_path" if by_path else None, value_key=None if fields else "report",
                           default_mpp=self.mpp_option(), what="reports file",
                           columns={"report": self.options.get("report_column")},
                           case_id_of=_case_id)
        check_duplicates(rows, lambda r: r.case_id, "case id", path)
        if not by_path:
            slides_dir = self.option_path("slides_dir") or root
            pattern = "{" + ",".join(s.lstrip(".") for s in SLIDE_SUFFIXES) + "}"
            for r in rows:
                r.file = find_file(slides_dir, r.case_id, SLIDE_SUFFIXES) or slides_dir / f"{r.case_id}.{pattern}"
        else:
            check_duplicates(rows, lambda r: str(r.file.resolve()), "slide path", path)
        groups, excluded = self.cohort_groups(rows, table, path, value_name="report")
        cases: dict[str, Case] = {}
        for case_id, group in groups.items():
            first = group.rows[0]
            raw = assemble_report({f: first.meta.get(f) for f in fields}, fields) if fields else first.value
            meta = {k: v for k, v in group.meta().items() if k not in fields}
            found = self.report_case(case_id, group.patient_id, raw, slides=group.files, meta=meta)
            self.keep(cases, excluded, case_id, found, f" ({path.name}, {first.place})")
        usable = {c: g for c, g in groups.items() if c in cases}
        parts, facts = choose_split(self.name, usable, self.options, root=root, table=path, excluded=excluded,
                                    normalise_id=strip_slide_suffix)
        self._split_facts = {**facts, "table": str(path), "case": self.options["case"]}
        return cases, parts, excluded


def _case_id(given: str, slide: Path | None) -> str:
    """The id column without a slide suffix (`case_001.tiff` -> `case_001`), else the slide id."""
    from pathkit_core.wsi.slide import slide_id_for

    return strip_slide_suffix(given) or (slide_id_for(slide) if slide is not None else "")


@hookimpl
def register_datasets(register):
    register(SlidesReports)
