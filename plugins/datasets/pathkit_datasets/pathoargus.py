"""`pathoargus`: PathoArgus-Bench-style budgeted VQA over whole cases (arXiv 2608.17607).

The release's file format and field names are not public; this dataset reads a documented
question table (docs/pathoargus.md, "The pathoargus layout") and maps other names onto it with
option `field_map`. One row per question: id (unique), patient_id (the target case's patient),
split (train, val, test or bench; else option splits_file, else a drawn patient-disjoint split),
question, choices (a JSON list), answer (0-based index or letter), capability (GR, MA, FGR, RR,
CSI, ESG), group and condition (ESG quartet id and evidence state; metric-only), candidate_sets
(a JSON list of sets, each a list of slide or feature files relative to the table's folder or
option slides_dir) and evidence (planted evidence of synthetic data; metric-only).

The answer-position audit per split and capability is in the split facts (metrics.json) and
printed by `pathkit vqa audit --dataset pathoargus`. With no root, `pathkit run` builds the
synthetic miniature (`_pathoargus_synthetic`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._references import PublishedReference, PublishedScore
from pathkit_datasets._vqa_table import (
    SELECTION_OPTIONS,
    JsonOption,
    QuestionRow,
    answer_option_audit,
    answer_position_audit,
    candidate_sets,
    check_groups,
    check_slides_disjoint,
    question_case,
)
from pathkit_sdk.cohort import (
    CaseRows,
    CohortDataset,
    CohortRow,
    cell,
    check_duplicates,
    choose_split,
    find_table,
    option,
    read_table,
    require_columns,
    resolve_file,
)
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA

TABLE_NAMES = ("questions.jsonl", "questions.parquet", "questions.json", "questions.csv")
FIELDS_REQUIRED = ("id", "patient_id", "question", "choices", "answer", "candidate_sets")
FIELDS_OPTIONAL = ("split", "capability", "group", "condition", "evidence")
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "question_id", "qid"),
    "patient_id": ("patient_id", "patient", "case_id", "target_case"),
    "split": ("split", "partition", "subset"),
    "question": ("question", "query", "prompt"),
    "choices": ("choices", "options"),
    "answer": ("answer", "answer_index", "label"),
    "capability": ("capability", "category", "task_type"),
    "group": ("group", "group_id", "quartet_id"),
    "condition": ("condition", "evidence_state"),
    "candidate_sets": ("candidate_sets", "slides", "wsi_sets"),
    "evidence": ("evidence", "planted_evidence"),
}
# PathoArgus calls its test split "bench"
SPLIT_NAMES = {"bench": "test"}


class PathoArgus(CohortDataset):
    """Questions over whole cases (GR, MA, FGR, RR, CSI, ESG) read under an evidence budget."""

    name = "pathoargus"
    description = ("PathoArgus-Bench-style budgeted VQA over whole cases and candidate WSI sets (synthetic "
                   "miniature with planted evidence when no root is given)")
    task = TASK_MULTIPLE_CHOICE_VQA
    license = "the release's terms (TCGA: GDC open access); the synthetic miniature is generated locally"
    citation = ("PathoArgus: Advancing Evidence-Grounded Long-Context Visual Reasoning across Gigapixel "
                "Whole-Slide and Multi-Slide Case Contexts, arXiv 2608.17607")
    default_metrics: ClassVar[tuple[str, ...]] = ("vqa",)
    selection_metric: ClassVar[str | None] = "vqa:Overall"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        option("table"),
        JsonOption("field_map", "json", None, "the release's column names, as a JSON object {field: column}, e.g. "
                   "'{\"question\": \"q_text\", \"choices\": \"options\"}'"),
        DatasetOption("slides_dir", "path", None, "folder the candidate_sets paths are relative to (default: the "
                      "table's folder)"),
        option("splits_file"), option("split_seed"), option("val_fraction"), option("test_fraction"),
        DatasetOption("demo_cases", "str", "40,8,16", "synthetic miniature: cases in train,val,test (6 questions "
                      "each: GR, CSI and an ESG quartet)"),
        DatasetOption("workers", "int", 2, "synthetic miniature: processes writing its slides"),
        *SELECTION_OPTIONS,
    )
    layout: ClassVar[str] = ("<root>/questions.jsonl (or .parquet/.json/.csv; one row per question: id, patient_id, "
                             "split, question, choices, answer, capability, group, condition, candidate_sets, "
                             "evidence), slide or feature files named in candidate_sets; optional protocol.json "
                             "{\"budget\": K, \"candidates\": M}")
    # The miniature's demo: the attention reader on tiny-vit features under its K = 16, M = 48.
    demo_run: ClassVar[dict[str, Any] | None] = {"encoder": "tiny-vit", "generator": "attention-reader"}

    @property
    def task_defaults(self) -> dict[str, Any]:
        """PathoArgus's hierarchical evidence selector (paper section 3.3), and the K and M a release
        states in protocol.json (the miniature's: 16 and 48)."""
        path = Path(self.root) / "protocol.json" if self.root is not None else None
        if path is None or not path.is_file():
            return {"selector": "pathoargus"}
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise PathkitError(f"pathoargus: {path} is not valid JSON ({exc})") from None
        if not isinstance(data, dict) or set(data) - {"budget", "candidates", "selector"}:
            raise PathkitError(f"pathoargus: {path} must be an object with budget, candidates (and selector)")
        return {"selector": "pathoargus", **data}

    def make_demo(self, path: str | Path) -> Path:
        from pathkit_datasets._pathoargus_synthetic import DEMO_VERSION, build_demo, parse_counts

        counts = parse_counts(self.options.get("demo_cases") or "40,8,16")
        folder = Path(path) / f"v{DEMO_VERSION}-{'-'.join(map(str, counts))}"
        return build_demo(folder, counts, workers=int(self.options.get("workers") or 1))

    def _columns(self, table: Any) -> dict[str, str | None]:
        field_map = self.options.get("field_map") or {}
        unknown = sorted(set(field_map) - set(FIELD_ALIASES))
        if unknown:
            raise PathkitError(f"pathoargus: field_map names unknown field(s) {', '.join(unknown)}; the fields are "
                               f"{', '.join(FIELD_ALIASES)}")
        return require_columns(table, FIELDS_REQUIRED, FIELDS_OPTIONAL, aliases=FIELD_ALIASES,
                               what="pathoargus question table", explicit=field_map)

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        root = Path(self.root)
        table = read_table(find_table(root, TABLE_NAMES, self.option_path("table"), "pathoargus question table",
                                      self.layout), "pathoargus question table")
        col = self._columns(table)
        base = self.option_path("slides_dir") or table.path.parent
        rows: list[QuestionRow] = []
        for i, record in enumerate(table.rows):
            def get(key: str, record: dict[str, Any] = record) -> Any:
                return record.get(col[key]) if col.get(key) else None

            qid = cell(get("id"))
            where = f"{table.where(i)}" + (f" (question {qid})" if qid else "")
            if not qid:
                raise PathkitError(f"{where}: no question id")
            patient = cell(get("patient_id"))
            if not patient:
                raise PathkitError(f"{where}: no patient_id (the target case's patient; splits are patient-disjoint)")
            sets = candidate_sets(get("candidate_sets"), where)
            files = [resolve_file(name, base) for members in sets for name in members]
            case = question_case(where=where, case_id=qid, patient_id=patient, question=get("question"),
                                 choices=get("choices"), answer=get("answer"), files=files, sets=sets,
                                 capability=cell(get("capability")) or None, group=cell(get("group")) or None,
                                 condition=cell(get("condition")) or None, evidence=get("evidence"))
            split = cell(get("split")).lower() or None
            rows.append(QuestionRow(table.places[i], case, SPLIT_NAMES.get(split, split) if split else None))
        cohort_rows = [CohortRow(i, r.place, r.case.case_id, r.case.patient_id, split=r.split)
                       for i, r in enumerate(rows)]
        check_duplicates(cohort_rows, lambda r: r.case_id, "question id", table.path)
        check_groups(rows, table.path)
        cases = {r.case.case_id: r.case for r in rows}
        grouped = {r.case_id: CaseRows(r.case_id, r.patient_id, [r]) for r in cohort_rows}
        parts, facts = choose_split(self.name, grouped, self.options, root=root, table=table.path)
        check_slides_disjoint(parts, cases, table.path)
        facts["answer_positions"] = answer_position_audit({p: [cases[c] for c in ids] for p, ids in parts.items()})
        facts["answer_options"] = answer_option_audit({p: [cases[c] for c in ids] for p, ids in parts.items()})
        self._split_facts = facts
        return cases, parts, {}

    def answer_position_audit(self) -> dict[str, Any]:
        return self.split_facts()["answer_positions"]


@hookimpl
def register_datasets(register):
    register(PathoArgus)


@hookimpl
def register_commands(app):
    # `pathkit vqa audit`: answer positions per split and capability of any VQA dataset
    from pathkit_datasets._vqa_cli import register

    register(app)


# PathoArgus section 5 (Table 5 values quoted in the text): the bench split's accuracies of named
# systems; the paper's own PathoArgus row (CONCH features, Qwen2.5-7B reader, K = 512) is in its
# Table 5, which the seed text does not quote, so it is not here.
TABLE_5 = PublishedReference(
    ("pathoargus",), "PathoArgus published accuracies",
    "Bench-split accuracies the paper reports (section 5, from Table 5; 4,281 questions, QExact over 483 "
    "quartets). The synthetic miniature is not PathoArgus-Bench: compare only runs on the release.",
    tuple(PublishedScore("PathoArgus Sec. 5 / Table 5", model, column, "vqa", column, value, match, note)
          for model, match, note, values in (
              ("Qwen2.5-7B text-only control", {"generator": "text-only"}, "no visual input (section 3)",
               (("Overall", 0.2439), ("FGR", 0.3087), ("QExact", 0.0))),
              ("GPT-5.6", {}, "1024 px overview + 16 views at 5x and 20x",
               (("GR", 0.8520), ("ESG", 0.5704), ("FGR", 0.2416))),
              ("WSI-LLaVA", {}, "its native WSI features", (("GR", 0.5174),)),
              ("MedVLM-R1-2B", {}, "", (("RR", 0.4268),)),
              ("PathAgent (adapted)", {}, "question-conditioned traversal", (("CSI", 0.3469),)))
          for column, value in values))


@hookimpl
def report_sections(run):
    return TABLE_5.sections(run)
