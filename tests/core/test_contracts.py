"""`pathkit_core.contracts`: `MetricResult.per_case` given as a table or as a builder (`DeferredTable`)."""

from __future__ import annotations

import dataclasses
import threading
import time

import polars as pl
import pytest

from pathkit_core.contracts import MetricResult


def test_a_table_is_kept_as_given():
    table = pl.DataFrame({"id": ["a"], "x": [1.0]})
    result = MetricResult({"x": 1.0}, table)
    assert result.per_case is table
    assert MetricResult({"x": 1.0}).per_case is None
    assert [f.name for f in dataclasses.fields(MetricResult)] == ["summary", "per_case", "details"]


def test_a_builder_is_called_on_the_first_read_only():
    calls = []

    def build():
        calls.append(1)
        return pl.DataFrame({"id": ["a", "b"]})

    result = MetricResult(summary={"x": 1.0}, per_case=build, details={"k": [1]})
    assert calls == []
    first = result.per_case
    assert first.height == 2 and result.per_case is first and calls == [1]
    # a copy made after the build holds the table, not the builder
    assert dataclasses.replace(result, summary={}).per_case is first and calls == [1]
    assert MetricResult({}, lambda: None).per_case is None  # a builder may find no table


def test_a_failing_builder_fails_on_each_read():
    calls = []

    def build():
        calls.append(1)
        raise ValueError("table broken")

    result = MetricResult({}, build)
    for _ in range(2):
        with pytest.raises(ValueError, match="table broken"):
            _ = result.per_case
    assert calls == [1, 1]
    result.per_case = pl.DataFrame({"id": ["a"]})  # and may be replaced by a table
    assert result.per_case.height == 1


def test_threads_reading_at_once_build_once():
    calls = []

    def build():
        calls.append(1)
        time.sleep(0.05)  # a slow build: the other threads read while it runs
        return pl.DataFrame({"id": ["a"]})

    result = MetricResult({}, build)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(result.per_case)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1] and len(seen) == 4 and all(table is seen[0] for table in seen)
