"""Task `report`: a slide (or a patient's slides) in, the pathology report text out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pathkit_core.contracts import Case, Dataset, Task
from pathkit_tasks import TASK_REPORT
from pathkit_tasks._common import most_frequent


class ReportTask(Task):
    """Report generation (PathReportEval): the reference is the dataset's cleaned report text."""

    name: ClassVar[str] = TASK_REPORT
    description: ClassVar[str] = "report generation: slide features in, report text out (REG 2025, HistAI, TCGA)"
    target_format: ClassVar[str] = "the reference report: a non-empty string"
    prediction_format: ClassVar[str] = "the generated report: a string"
    baselines: ClassVar[tuple[str, ...]] = ("most-frequent-report",)
    evaluate_inputs: ClassVar[tuple[str, ...]] = ("text", "multi_reference")

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        if not isinstance(case.target, str) or not case.target.strip():
            return f"target {case.target!r} is not a non-empty report string"
        return None

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        return None if isinstance(prediction, str) else f"prediction {prediction!r} is not report text"

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        report = most_frequent(list(train_targets))
        return None if report is None else {case.case_id: report for case in test_cases}

    def run_summary(self, predictions: Mapping[str, Any], references: Mapping[str, Any]) -> dict[str, Any]:
        # Only a few hundred REG reports are distinct: a model that collapses to a handful of
        # reports can still score well on n-gram metrics (docs/report-generation.md, "Datasets").
        distinct = len({str(p) for p in predictions.values()})
        return {"distinct_prediction_fraction": distinct / max(len(predictions), 1)}

    def report_sections(self, run: Any) -> list[Any]:
        """Every case's reference and generated report with its scores and CRQS evidence, the
        distinct-prediction fraction, the per-case score distribution and CRQS per field."""
        from pathkit_tasks.report.sections import report_sections

        return report_sections(run)
