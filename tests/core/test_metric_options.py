"""Metric options checked once for every metric by the runner (`Metric.option_table`)."""

from __future__ import annotations

import os

import pytest

from pathkit_core.contracts import PathkitError
from tests._pipes import without_blocking


def test_a_named_pipe_as_a_file_option_is_refused_without_blocking(tmp_path, fresh_registry):
    from pathkit_core.evaluation.runner import score

    fresh_registry(autoload=True)
    fifo = tmp_path / "train.json"
    os.mkfifo(fifo)
    found = without_blocking(lambda: score(["crqs"], {"a": "carcinoma"}, {"a": "carcinoma"}, context={
        "options": {"train_reports": str(fifo), "bootstrap_resamples": 0}}), fifo)
    assert isinstance(found, PathkitError)
    assert str(found) == (f"metric 'crqs': option train_reports={str(fifo)!r}: {fifo} is not a regular file "
                          "(a named pipe)")


def test_an_option_table_types_the_options_of_any_metric(fresh_registry):
    from pathkit_core.contracts import DatasetOption, Metric, MetricResult

    class Counted(Metric):
        name = "counted"
        option_table = (DatasetOption("n", "int", 1), DatasetOption("mode", "a|b", "a"),
                        DatasetOption("given", "any", None))
        seen: dict = {}

        def compute(self, predictions, references, *, ids=None, context=None):
            Counted.seen = dict(context["options"])
            return MetricResult({"n": 1.0})

    parsed = Counted.checked_options({"n": "3", "mode": "b", "given": [1, 2]})
    assert parsed == {"n": 3, "mode": "b", "given": [1, 2]}
    with pytest.raises(PathkitError, match=r"metric 'counted': option mode='c': choose one of a, b"):
        Counted.checked_options({"mode": "c"})
    with pytest.warns(UserWarning, match=r"counted: ignoring unknown option\(s\) typo; known: n, mode, given"):
        assert Counted.checked_options({"typo": 1}) == {}

    class Free(Metric):  # no table: options pass unchecked, as before
        name = "free"

    assert Free.checked_options({"anything": "x"}) == {"anything": "x"}
