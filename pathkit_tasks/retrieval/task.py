"""Task `retrieval`: each test case is a query against the train split's cases (the keys); a model
returns the classes of the keys it ranks first, most similar first. Nothing is trained.

Targets are class names (as in slide classification); a prediction is
`{"retrieved": [class index, ...], "neighbours": [train case id, ...], "similarity": [...]}`,
ranked. The metric `retrieval` scores the ranked classes against the query's class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pathkit_core.contracts import INPUT_FEATURES, INPUT_IMAGES, INPUT_SLIDES, Case, Dataset, RunFacts, Task
from pathkit_tasks import TASK_RETRIEVAL
from pathkit_tasks._common import ClassNameTarget, most_frequent

# How many keys a baseline returns per query (the metric reads at most its largest k).
BASELINE_DEPTH = 10


class RetrievalTask(ClassNameTarget, Task):
    """Slide retrieval by feature similarity (Patho-Bench's retrieval tasks, docs/retrieval.md)."""

    name: ClassVar[str] = TASK_RETRIEVAL
    description: ClassVar[str] = "each test slide queried against the train slides by feature similarity"
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES, INPUT_IMAGES)  # images: patch-retrieval
    target_format: ClassVar[str] = "a class name of the dataset's class_names()"
    prediction_format: ClassVar[str] = ('{"retrieved": [class index of each retrieved train case, most similar '
                                        'first], "neighbours": [their case ids], "similarity": [their scores]}')
    baselines: ClassVar[tuple[str, ...]] = ("majority-class",)

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        n = len(dataset.class_names())
        ranked = prediction.get("retrieved") if isinstance(prediction, dict) else None
        if not isinstance(ranked, list) or not ranked:
            return 'a prediction needs "retrieved": a non-empty list of class indices'
        if any(isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < n for c in ranked):
            return f"retrieved {ranked[:10]} holds a value that is not a class index 0..{n - 1}"
        return None

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        out = {"retrieved": [int(c) for c in prediction["retrieved"]]}
        for key in ("neighbours", "similarity"):
            if key in prediction:
                out[key] = list(prediction[key])
        return out

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        """`majority-class`: every query retrieves the train split's most frequent class only."""
        labels = [t for t in train_targets if t is not None]
        if name != "majority-class" or not labels:
            return None
        top = int(most_frequent(labels))
        return {case.case_id: {"retrieved": [top] * BASELINE_DEPTH} for case in test_cases}

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        return {"class_names": list(dataset.class_names())}

    def report_sections(self, run: Any) -> list[Any]:
        """Each query's class beside the classes and ids of its nearest train cases."""
        from pathkit_tasks.retrieval.sections import retrieval_sections

        return retrieval_sections(run)
