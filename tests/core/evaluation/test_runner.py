"""The metric runner (`pathkit_core.evaluation.runner`): per-case tables built and joined only
when read, damaged-text flags kept as a list, a bad table failing before anything is written."""

from __future__ import annotations

import polars as pl
import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import Metric, MetricResult, PathkitError
from pathkit_core.evaluation.runner import score, write_results
from pathkit_tasks import TASK_REPORT

BUILT: list[str] = []


class Words(Metric):
    """Words per prediction; its per-case table is a builder that records each call."""

    name = "words"
    tasks = (TASK_REPORT,)

    def compute(self, predictions, references, *, ids=None, context=None):
        counts = [float(len(p.split())) for p in predictions]

        def table():
            BUILT.append(self.name)
            return pl.DataFrame({"id": ids, "words": counts})

        return MetricResult({"words": sum(counts) / len(counts)}, table)


class Chars(Metric):
    """Characters per prediction, its table given as a DataFrame without ids (aligned by row)."""

    name = "chars"
    tasks = (TASK_REPORT,)

    def compute(self, predictions, references, *, ids=None, context=None):
        counts = [float(len(p)) for p in predictions]
        rows = counts[:-1] if (context or {}).get("options", {}).get("short") else counts
        return MetricResult({"chars": sum(counts) / len(counts)}, pl.DataFrame({"words": rows}))


SEEN: list[tuple[str, dict]] = []


class Watched(Metric):
    """Records the context `prepare` and `compute` see, and counts its option checks."""

    name = "watched"
    tasks = (TASK_REPORT,)
    checks = 0

    @classmethod
    def checked_options(cls, options):
        cls.checks += 1
        return super().checked_options(options)

    def prepare(self, context=None):
        SEEN.append(("prepare", context))

    def compute(self, predictions, references, *, ids=None, context=None):
        SEEN.append(("compute", context))
        return MetricResult({"n": float(len(predictions))})


class _Plugin:
    @hookimpl
    def register_metrics(self, register):
        register(Words)
        register(Chars)
        register(Watched)


@pytest.fixture
def metrics(fresh_registry):
    fresh_registry({"inline": _Plugin()})
    BUILT.clear()


PREDS = {"a": "invasive carcinoma grade 2", "b": "benign \ufffd", "c": "no tumour"}
REFS = {"a": "invasive carcinoma", "b": "benign breast tissue", "c": "benign \ud800"}
PREDS_FLAG_B = "prediction: U+FFFD replacement character at character 7"
REF_FLAG_C = "reference: lone surrogate U+D800 at character 7"


def test_the_joined_table_is_built_when_read_and_once(metrics):
    result = score(["words", "chars"], PREDS, REFS)
    assert BUILT == []  # scoring built no table
    assert result.summary == {"words": {"words": 8 / 3}, "chars": {"chars": 43 / 3}}
    assert result.input_flags == {"b": PREDS_FLAG_B, "c": REF_FLAG_C}
    table = result.per_case
    assert BUILT == ["words"]
    assert table.columns == ["id", "input_flags", "words", "chars:words"]  # a taken name gets the metric's
    assert table.rows() == [("a", "", 4.0, 26.0), ("b", PREDS_FLAG_B, 2.0, 8.0), ("c", REF_FLAG_C, 2.0, 9.0)]
    assert result.per_case is table and BUILT == ["words"]
    assert result.results["words"].per_case["words"].to_list() == [4.0, 2.0, 2.0] and BUILT == ["words"]


def test_clean_texts_have_no_flags(metrics):
    result = score(["words"], {"a": "x y"}, {"a": "x"})
    assert result.input_flags == {} and result.per_case.columns == ["id", "words"]


def test_a_bad_table_fails_before_anything_is_written(metrics, tmp_path):
    result = score(["chars"], PREDS, REFS, context={"options": {"short": True}})
    with pytest.raises(PathkitError, match="metric 'chars' returned 2 per-case rows for 3 cases"):
        write_results(result, tmp_path)
    assert list(tmp_path.iterdir()) == []  # no metrics.json without its table


def test_each_metric_checks_its_options_once_and_prepares_and_computes_with_one_context(metrics):
    Watched.checks = 0
    SEEN.clear()
    score(["watched"], PREDS, REFS, context={"options": {"level": 1}, "metric_options": {"watched": {"seed": 3}}})
    assert Watched.checks == 1
    assert [step for step, _ in SEEN] == ["prepare", "compute"]
    assert SEEN[0][1] is SEEN[1][1] and SEEN[1][1]["options"] == {"seed": 3, "level": 1}
