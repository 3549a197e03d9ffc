"""`legacy-words`: a report metric, the task name imported from the contract as the 0.1.0 guide showed."""

from __future__ import annotations

from pathkit_core import hookimpl
from pathkit_core.contracts import TASK_REPORT, Metric, MetricResult


class WordCount(Metric):
    """Mean number of words of the generated reports."""

    name = "legacy-words"
    tasks = (TASK_REPORT,)
    description = "mean words per generated report"

    def compute(self, predictions, references, *, ids=None, context=None):
        counts = [len(str(p).split()) for p in predictions]
        return MetricResult(summary={"words": sum(counts) / len(counts) if counts else 0.0})


@hookimpl
def register_metrics(register):
    register(WordCount)
