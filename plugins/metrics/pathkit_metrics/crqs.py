"""The `crqs` metric plugin: Clinical Report Quality Score (PathReportEval) with per-case clinical evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult
from pathkit_tasks import TASK_REPORT

CITATION = (
    "PathReportEval: A Systematic Benchmark for Pathology Report Generation "
    "(CRQS, section 3.4 and appendix A.7); https://github.com/surykntsingh/PathBench"
)


class CRQSMetric(Metric):
    """CRQS = (0.3*CFC + 0.4*KIR - 0.2*HR - 0.4*CDS) / 0.7 over rule-extracted clinical fields.

    Context (top level or under "options"): `clinical_schema` (a ClinicalSchema, a schema dict
    or a name), `dataset` (reg2025 / histai / tcga-pathtext, also "reg", "tcga"),
    `vocabulary` (a saved vocabulary JSON path or a Vocabulary), `train_reports` (report
    texts to learn the vocabulary from, or a reports file: a splits JSON, whose `train_split`
    part is read, default "train", or a records file), `vocabulary_min_count` (2),
    `bootstrap_resamples` (1000; 0 for no intervals), `seed` (0), `confidence_level` (0.95),
    `variants` (false; true adds CRQS_raw, CRQS_eq6, CRQS_eq6_raw to the summary).
    """

    name: ClassVar[str] = "crqs"
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("clinical_schema", "any", None, "a ClinicalSchema, a schema dict or a schema name"),
        DatasetOption("dataset", "any", None, "reg2025, histai, tcga-pathtext (also reg, tcga), or a dataset"),
        DatasetOption("vocabulary", "file", None, "a saved vocabulary JSON file (or a Vocabulary)"),
        DatasetOption("train_reports", "file", None, "reports file (or texts) to learn the vocabulary from"),
        DatasetOption("train_split", "str", "train", "the part of a splits file train_reports reads"),
        DatasetOption("vocabulary_min_count", "int", 2, "reports a phrase must appear in to become a term"),
        DatasetOption("bootstrap_resamples", "int", 1000, "bootstrap resamples (0: no intervals)"),
        DatasetOption("seed", "int", 0, "bootstrap seed"),
        DatasetOption("confidence_level", "float", 0.95, "confidence level of the intervals"),
        DatasetOption("variants", "bool", False, "add CRQS_raw, CRQS_eq6, CRQS_eq6_raw to the summary"),
    )
    description: ClassVar[str] = (
        "Clinical Report Quality Score: clinical fact coverage, key-field recall, hallucination and "
        "discordance over fields extracted by rule (dataset schemas of PathReportEval Tables 7-12)"
    )
    tasks: ClassVar[tuple[str, ...]] = (TASK_REPORT,)
    higher_is_better: ClassVar[bool] = True
    headline_scores: ClassVar[tuple[str, ...]] = ("CRQS",)
    case_scores: ClassVar[tuple[str, ...]] = ("CRQS",)
    case_evidence: ClassVar[tuple[str, ...]] = ("matched", "missed", "hallucinated", "discordant")
    # hallucination rate and clinical discordance are penalties (PathReportEval section 3.4)
    lower_is_better: ClassVar[tuple[str, ...]] = ("HR", "CDS")
    # CRQS = CRQS_raw / 0.7; Eq. 6 as printed adds 0.2 and 0.4 (docs/metrics.md, "Formula")
    score_ranges: ClassVar[dict[str, tuple[float, float]]] = {
        "CRQS": (-6 / 7, 1.0), "CFC": (0.0, 1.0), "KIR": (0.0, 1.0), "HR": (0.0, 1.0), "CDS": (0.0, 1.0),
        "CRQS_raw": (-0.6, 0.7), "CRQS_eq6": (0.0, 1.3 / 0.7), "CRQS_eq6_raw": (0.0, 1.3),
    }
    citation: ClassVar[str] = CITATION

    def compute(self, predictions: Sequence[Any], references: Sequence[Any], *, ids: Sequence[str] | None = None,
                context: Mapping[str, Any] | None = None) -> MetricResult:
        from pathkit_metrics._crqs.scoring import score_reports

        return score_reports(predictions, references, ids=ids, context=context)


def extract_fields(report: str, *, dataset: str | None = None, clinical_schema: Any = None,
                   vocabulary: Any = None, train_reports: Sequence[str] | None = None) -> dict[str, str]:
    """The clinical fields CRQS reads from one report, restricted to the selected schema."""
    from pathkit_metrics._crqs.schemas import resolve_schema
    from pathkit_metrics._crqs.scoring import extractor_for, resolve_vocabulary

    context = {"dataset": dataset, "clinical_schema": clinical_schema, "vocabulary": vocabulary,
               "train_reports": train_reports}
    schema = resolve_schema(context)
    extraction = extractor_for(resolve_vocabulary(context)).extract(report)
    return {name: extraction.fields[name] for name in schema.fields if name in extraction.fields}


@hookimpl
def register_metrics(register):  # noqa: ANN001 - pluggy passes the registry's callable
    register(CRQSMetric)


@hookimpl
def register_commands(app):  # noqa: ANN001 - the typer app
    from pathkit_metrics._crqs.cli import register

    register(app)


__all__ = ["CRQSMetric", "extract_fields", "register_metrics", "register_commands"]
