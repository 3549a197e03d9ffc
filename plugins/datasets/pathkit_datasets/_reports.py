"""Shared machinery of the report datasets (reg2025, histai, tcga-pathtext, demo-reports).

`ReportDataset` loads its release once (lazily), keeps the usable cases, the split and the
cases it left out with the reason (`excluded_cases()`: empty or non-UTF-8 reports, ids outside
the published split, cases without a slide), and validates the folder with errors that say what
layout was expected. References are the dataset's cleaned report text (`report_cleaning`, shared
with the tokenizer through `pathkit_core.report_text`); the raw text stays in `Case.meta`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import TASK_REPORT, Case, Dataset, PathkitError
from pathkit_core.report_text import clean_report, invalid_text_reason
from pathkit_core.workspace import plain_name

log = logging.getLogger(__name__)

FEATURE_SUFFIXES = (".safetensors", ".h5", ".pt")
SLIDE_SUFFIXES = (".tiff", ".tif", ".svs", ".ndpi", ".mrxs", ".scn", ".bif", ".vms")


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file, naming the file and the position of any UTF-8 or syntax error."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PathkitError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise PathkitError(f"{what} {path} cannot be read: {exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PathkitError(f"{what} {path} is not UTF-8 text: byte {exc.start} (line {line}) is "
                           f"{raw[exc.start:exc.start + 1]!r}; re-save the file as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PathkitError(f"{what} {path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                           f"column {exc.colno}") from None


def find_file(folder: Path | None, stem: str, suffixes: tuple[str, ...]) -> Path | None:
    """`folder/stem<suffix>` for the first suffix that exists; `stem` must be a plain name
    (an id like `../../escape` would look outside `folder`)."""
    if folder is None:
        return None
    plain_name(stem, f"a file name from id {stem!r} in {folder}:")
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


class ReportDataset(Dataset):
    """Base of the report datasets: options, lazy loading, splits, exclusions, validation."""

    task: ClassVar[str] = TASK_REPORT
    default_metrics: ClassVar[tuple[str, ...]] = ("nlg", "crqs")
    selection_metric: ClassVar[str | None] = "nlg:BLEU-4"
    # BLEU-4 picks the epoch; METEOR (a Java process) is left out of the per-epoch scoring
    selection_options: ClassVar[dict[str, Any]] = {"meteor": False}
    # read by the report tokenizer (pathkit_generators._text.tokenizer.report_settings)
    report_cleaning: ClassVar[str] = "none"
    max_report_tokens: ClassVar[int] = 320
    option_defaults: ClassVar[dict[str, Any]] = {}
    layout_help: ClassVar[str] = ""

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.option_defaults) - {"view"})
        if unknown:
            raise PathkitError(f"dataset {self.name!r} has no option(s) {', '.join(unknown)}; "
                               f"known: {', '.join(sorted(self.option_defaults)) or 'none'}")
        super().__init__(root, **{**self.option_defaults, **options})
        self._cases: dict[str, Case] | None = None
        self._splits: dict[str, list[str]] = {}
        self._excluded: dict[str, str] = {}
        self.split_source = ""

    # ------------------------------------------------------------------ subclass hooks

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        """(usable cases by id, split ids, excluded case id -> reason); subclasses implement it."""
        raise NotImplementedError

    # ------------------------------------------------------------------ contract

    def _ensure(self) -> dict[str, Case]:
        if self._cases is None:
            if self.root is None:
                raise PathkitError(f"dataset {self.name!r} needs --dataset-root (the folder of the release)"
                                   + (f"; expected layout: {self.layout_help}" if self.layout_help else ""))
            if not Path(self.root).is_dir():
                raise PathkitError(f"dataset {self.name!r}: {self.root} is not a folder"
                                   + (f"; expected layout: {self.layout_help}" if self.layout_help else ""))
            cases, splits, excluded = self.load()
            self._cases, self._splits, self._excluded = cases, splits, excluded
            if excluded:
                reasons: dict[str, int] = {}
                for why in excluded.values():
                    key = why.split(":")[0]
                    reasons[key] = reasons.get(key, 0) + 1
                log.warning("%s: %d case(s) left out (%s)", self.name, len(excluded),
                            "; ".join(f"{n} {why}" for why, n in sorted(reasons.items())))
        return self._cases

    def splits(self) -> dict[str, list[str]]:
        self._ensure()
        return {k: list(v) for k, v in self._splits.items()}

    def cases(self, split: str) -> Iterator[Case]:
        cases = self._ensure()
        if split not in self._splits:
            raise PathkitError(f"dataset {self.name!r} has no split {split!r} (has: {', '.join(self._splits)})")
        for case_id in self._splits[split]:
            yield cases[case_id]

    def excluded_cases(self) -> dict[str, str]:
        self._ensure()
        return dict(self._excluded)

    def validate(self) -> None:
        cases = self._ensure()
        if not cases:
            listing = "; ".join(f"{k}: {v}" for k, v in list(self._excluded.items())[:5])
            raise PathkitError(f"dataset {self.name!r} at {self.root}: no usable case"
                               + (f" ({len(self._excluded)} left out, e.g. {listing})" if listing else "")
                               + (f"; expected layout: {self.layout_help}" if self.layout_help else ""))
        empty = [p for p in ("train", "val", "test") if not self._splits.get(p)]
        if empty:
            raise PathkitError(f"dataset {self.name!r} at {self.root}: the {', '.join(empty)} split(s) are "
                               f"empty ({', '.join(f'{k} {len(v)}' for k, v in self._splits.items())} cases)")

    # ------------------------------------------------------------------ helpers

    def report_case(self, case_id: str, patient_id: str, raw: Any, *, slides: tuple[Path, ...] = (),
                    features: tuple[Path, ...] = (), meta: Mapping[str, Any] | None = None,
                    ) -> tuple[Case | None, str | None]:
        """A Case whose target is the cleaned report, or (None, reason) for an unusable report."""
        problem = invalid_text_reason(raw)
        if problem:
            return None, problem
        target = clean_report(raw, self.report_cleaning)
        if not target.strip():
            return None, "report is empty after cleaning"
        return Case(case_id=case_id, patient_id=patient_id, target=target, slides=slides, features=features,
                    meta={"raw_report": raw, **dict(meta or {})}), None

    def option_path(self, key: str) -> Path | None:
        value = self.options.get(key)
        if value in (None, ""):
            return None
        path = Path(value)
        return path if path.is_absolute() else Path(self.root) / path

    def splits_file(self, default_name: str) -> Path:
        """Where a drawn split is saved: option `splits_file`, else `<root>/pathkit-splits/<name>`."""
        return self.option_path("splits_file") or Path(self.root) / "pathkit-splits" / default_name
