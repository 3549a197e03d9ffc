"""`length-ratio`: how long generated reports are relative to their references, in words."""

from __future__ import annotations

from pathkit_core import hookimpl
from pathkit_core.contracts import Metric, MetricResult, PathkitError
from pathkit_tasks import TASK_REPORT


class LengthRatio(Metric):
    """Mean of len(prediction words) / len(reference words); 1.0 means equally long."""

    name = "length-ratio"
    tasks = (TASK_REPORT,)
    description = "Generated / reference report length in whitespace-separated words"

    def compute(self, predictions, references, *, ids=None, context=None):
        import polars as pl

        if len(predictions) != len(references):
            raise PathkitError(f"{len(predictions)} predictions for {len(references)} references")
        ratios = []
        for pred, ref in zip(predictions, references, strict=True):
            ref_words = len(str(ref).split())
            ratios.append(len(str(pred).split()) / ref_words if ref_words else 0.0)
        per_case = pl.DataFrame({"id": list(ids) if ids is not None else
                                 [str(i) for i in range(len(ratios))], "length_ratio": ratios})
        mean = sum(ratios) / len(ratios) if ratios else 0.0
        return MetricResult(summary={"length_ratio": mean}, per_case=per_case)


@hookimpl
def register_metrics(register):
    register(LengthRatio)
