"""The generic Hugging Face `evaluate` wrapper for pathkit metrics (defined locally, nothing fetched)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import Metric, MetricResult, PathkitError
from pathkit_tasks import TASK_REPORT, TASK_SLIDE_CLASSIFICATION

evaluate = pytest.importorskip("evaluate")

from pathkit_interop.evaluate_modules import as_evaluate_module  # noqa: E402


class ExactMatch(Metric):
    """Records what it was called with, so the tests can check the context it receives."""

    name: ClassVar[str] = "exact-match"
    description: ClassVar[str] = "fraction of identical texts"
    tasks: ClassVar[tuple[str, ...]] = (TASK_REPORT,)
    calls: ClassVar[list[dict[str, Any]]] = []

    def compute(self, predictions, references, *, ids=None, context=None):
        import polars as pl

        type(self).calls.append({"ids": ids, "context": context, "n": len(predictions)})
        if not predictions:
            raise PathkitError("exact-match: no cases to score")
        hits = [float(p == r) for p, r in zip(predictions, references, strict=True)]
        per_case = pl.DataFrame({"id": ids or [str(i) for i in range(len(hits))], "exact": hits})
        return MetricResult({"exact": sum(hits) / len(hits)}, per_case)


class MeanProbability(Metric):
    name: ClassVar[str] = "mean-prob"
    description: ClassVar[str] = "mean probability given to the reference class"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_CLASSIFICATION,)

    def compute(self, predictions, references, *, ids=None, context=None):
        values = [p[r] if isinstance(p, list) else float(p == r) for p, r in zip(predictions, references, strict=True)]
        return MetricResult({"mean_prob": sum(values) / len(values)})


@pytest.fixture(autouse=True)
def _reset_calls():
    ExactMatch.calls.clear()
    yield


def test_compute_is_a_real_evaluate_module():
    module = as_evaluate_module(ExactMatch)
    assert isinstance(module, evaluate.Metric)
    out = module.compute(predictions=["a", "b", "c"], references=["a", "x", "c"])
    assert out == {"exact": pytest.approx(2 / 3)}
    assert module.description == "fraction of identical texts"
    # inputs were kept in memory: no arrow cache file left behind
    assert module.buf_writer is None


def test_context_ids_and_options_are_passed_through():
    module = as_evaluate_module(ExactMatch())
    module.compute(
        predictions=["a"],
        references=["a"],
        ids=["case-1"],
        dataset="reg2025",
        clinical_schema={"fields": []},
        options={"alpha": 1},
        beta=2,
    )
    (call,) = ExactMatch.calls
    assert call["ids"] == ["case-1"]
    assert call["context"] == {
        "options": {"alpha": 1, "beta": 2, "clinical_schema": {"fields": []}},
        "dataset": "reg2025",
    }


def test_per_case_rows_on_request():
    module = as_evaluate_module(ExactMatch)
    out = module.compute(predictions=["a", "b"], references=["a", "c"], ids=["x", "y"], return_per_case=True)
    assert out["per_case"] == [{"id": "x", "exact": 1.0}, {"id": "y", "exact": 0.0}]


def test_add_batch_accumulates():
    module = as_evaluate_module(ExactMatch)
    module.add_batch(predictions=["a", "b"], references=["a", "b"])
    module.add(prediction="c", reference="d")
    assert module.compute() == {"exact": pytest.approx(2 / 3)}
    assert ExactMatch.calls[-1]["n"] == 3


def test_combine_with_other_modules():
    combined = evaluate.combine([as_evaluate_module(ExactMatch), as_evaluate_module(ExactMatch)])
    out = combined.compute(predictions=["a"], references=["a"])
    assert set(out.values()) == {1.0} and len(out) == 2


def test_classification_inputs_accept_probability_lists_and_labels():
    module = as_evaluate_module(MeanProbability)
    assert module.compute(predictions=[[0.2, 0.8], [0.6, 0.4]], references=[1, 0]) == {
        "mean_prob": pytest.approx(0.7)
    }
    module = as_evaluate_module(MeanProbability)
    assert module.compute(predictions=[1, 0], references=[1, 1]) == {"mean_prob": 0.5}


def test_declared_features_take_precedence():
    from datasets import Value

    class Declared(ExactMatch):
        name: ClassVar[str] = "declared"
        evaluate_features: ClassVar[list[dict[str, Any]]] = [
            {"predictions": Value("int64"), "references": Value("int64")}
        ]

    module = as_evaluate_module(Declared)
    assert module.compute(predictions=[1, 2], references=[1, 3]) == {"exact": 0.5}


def test_text_metric_rejects_wrong_input_types():
    module = as_evaluate_module(ExactMatch)
    with pytest.raises((ValueError, TypeError)):
        module.compute(predictions=[[1.0, 2.0]], references=["a"])


def test_metric_errors_surface_unchanged():
    module = as_evaluate_module(ExactMatch)
    with pytest.raises(PathkitError, match="no cases"):
        module.compute(predictions=[], references=[])


def test_lookup_by_registered_name(fresh_registry):
    class Plugin:
        @hookimpl
        def register_metrics(self, register):
            register(ExactMatch)

    fresh_registry({"inline": Plugin()})
    module = as_evaluate_module("exact-match")
    assert module.compute(predictions=["a"], references=["a"]) == {"exact": 1.0}
    with pytest.raises(PathkitError):
        as_evaluate_module("no-such-metric")


def test_rejects_things_that_are_not_metrics():
    with pytest.raises(PathkitError, match="Metric class"):
        as_evaluate_module(42)  # type: ignore[arg-type]
