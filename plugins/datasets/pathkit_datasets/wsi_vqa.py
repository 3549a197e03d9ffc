"""`wsi-vqa`: the closed questions of WSI-VQA (Chen et al., ECCV 2024; cpystan/WSI-VQA) over TCGA slides.

The question file (`WsiVQA_test.json`: a JSON list of `{"Id": TCGA patient, "Question",
"Choice"?: [...], "Answer": text}`) is read as released. A closed question (a non-empty
"Choice" list) is kept and its answer text mapped to a choice index: the exact choice first,
then the choice equal after collapsing white space and case; an answer matching no choice is an
error listing every such row (nothing is guessed; WSI-VQA's own scorer matches generated text to
choices with difflib and counts ties as right, which pathkit does not do). An open question
(no choices) is left out and counted (`excluded_cases`). The released file has 735 rows: 390
closed (388 with four choices, 2 with two) and 345 open; answer positions A/B/C/D = 107/151/86/46.

Slides come from the dataset root (or option slides_dir): every slide or feature file whose
name starts with the question's patient barcode (TCGA-XX-XXXX), in name order, one candidate set.
The file is a test split only; readers that need training (text-only, attention-reader) need
another dataset's train split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._reports import FEATURE_SUFFIXES, SLIDE_SUFFIXES
from pathkit_datasets._vqa_table import (
    SELECTION_OPTIONS,
    answer_option_audit,
    answer_position_audit,
    question_case,
)
from pathkit_datasets.tcga_pathtext import files_by_patient
from pathkit_sdk.cohort import CohortDataset
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA
from pathkit_tasks.vqa.cases import normalise_text

QUESTION_FILE = "WsiVQA_test.json"
OPEN_REASON = "open question (no choices): excluded from closed-set scoring"


def answer_choice(answer: Any, choices: list[str]) -> int | None:
    """The index of the choice the answer text names: exact, then white-space/case-normalised."""
    if isinstance(answer, str):
        if answer in choices:
            return choices.index(answer)
        normalised = [normalise_text(c) for c in choices]
        if normalise_text(answer) in normalised:
            return normalised.index(normalise_text(answer))
    return None


class WsiVQA(CohortDataset):
    """WSI-VQA closed questions (a test split) over a user's TCGA slide or feature folder."""

    name = "wsi-vqa"
    description = "WSI-VQA closed questions (390 of 735; open ones counted and left out) over your TCGA slides"
    task = TASK_MULTIPLE_CHOICE_VQA
    license = "WSI-VQA annotations: no licence file (cpystan/WSI-VQA); TCGA slides: GDC open access"
    citation = ("Chen et al., WSI-VQA: Interpreting Whole Slide Images by Generative Visual Question Answering, "
                "ECCV 2024")
    default_metrics: ClassVar[tuple[str, ...]] = ("vqa",)
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("questions", "path", None, f"the WSI-VQA question file (default: {QUESTION_FILE} in the root)"),
        DatasetOption("slides_dir", "path", None, "folder searched (recursively) for TCGA slides or feature files "
                      "named by patient barcode (default: the root)"),
        *SELECTION_OPTIONS,
    )
    layout: ClassVar[str] = (f"<root>/{QUESTION_FILE} (or option questions=FILE), TCGA slides or feature files "
                             "TCGA-XX-XXXX-*.svs / *.safetensors / *.h5 anywhere below the root (or slides_dir)")

    @property
    def task_defaults(self) -> dict[str, Any]:
        """WSI-VQA's readers see every patch; under pathkit's budget K its questions are served the
        way PathoArgus serves its own, by the hierarchical `pathoargus` selector (docs/pathoargus.md)."""
        return {"selector": "pathoargus"}

    def questions_file(self) -> Path:
        path = self.option_path("questions") or Path(self.root) / QUESTION_FILE
        if not path.is_file():
            raise PathkitError(f"wsi-vqa: no question file {path}; give it with --dataset-option questions=FILE "
                               f"(expected layout: {self.layout})")
        return path

    def _slides_by_patient(self) -> dict[str, list[Path]]:
        folder = self.option_path("slides_dir") or Path(self.root)
        return files_by_patient(folder, (*SLIDE_SUFFIXES, *FEATURE_SUFFIXES))

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        path = self.questions_file()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PathkitError(f"wsi-vqa: {path} is not a readable JSON file ({exc})") from None
        if not isinstance(data, list):
            raise PathkitError(f"wsi-vqa: {path} must hold a JSON list of question records")
        slides = self._slides_by_patient()
        cases: dict[str, Case] = {}
        excluded: dict[str, str] = {}
        unmatched: list[str] = []
        for i, record in enumerate(data):
            where = f"{path.name}, item {i}"
            if not isinstance(record, dict) or not all(k in record for k in ("Id", "Question", "Answer")):
                raise PathkitError(f"{where}: expected an object with \"Id\", \"Question\" and \"Answer\"")
            patient = str(record["Id"]).strip()
            case_id = f"{patient}-q{i:04d}"
            choices = record.get("Choice")
            if not choices:
                excluded[case_id] = OPEN_REASON
                continue
            if not isinstance(choices, list):
                raise PathkitError(f"{where} (question {case_id}): \"Choice\" must be a list, got {choices!r}")
            index = answer_choice(record["Answer"], choices)
            if index is None:
                unmatched.append(f"item {i} ({case_id}): answer {record['Answer']!r} not in {choices}")
                continue
            files = slides.get(patient.upper(), [])
            cases[case_id] = question_case(where=f"{where} (question {case_id})", case_id=case_id, patient_id=patient,
                                           question=record["Question"], choices=choices, answer=index,
                                           files=files, sets=None)
        if unmatched:
            raise PathkitError(f"wsi-vqa: {path}: {len(unmatched)} closed question(s) whose answer matches no choice "
                               f"(exactly or after normalising white space and case): {'; '.join(unmatched[:20])}")
        parts = {"test": list(cases)}
        self._split_facts = {"source": "published", "description": f"the WSI-VQA test file {path.name}",
                             "file": str(path), "counts": {"test": len(cases)},
                             "open_questions_excluded": len(excluded),
                             "answer_positions": answer_position_audit({"test": list(cases.values())}),
                             "answer_options": answer_option_audit({"test": list(cases.values())})}
        return cases, parts, excluded

    def validate(self) -> None:
        if not self._ensure():
            raise PathkitError(f"wsi-vqa: {self.questions_file()} holds no closed question")

    def answer_position_audit(self) -> dict[str, Any]:
        return self.split_facts()["answer_positions"]


@hookimpl
def register_datasets(register):
    register(WsiVQA)
