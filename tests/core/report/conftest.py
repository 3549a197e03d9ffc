"""Synthetic run folders of every task and a small leaderboard, built once per test session."""

from __future__ import annotations

import pytest

from ._runs import BUILDERS, matrix


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for the module's page checks (skips where none is installed)."""
    from ._browser import Browser, find_browser

    if find_browser() is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium; CI installs it)")
    b = Browser()
    yield b
    b.close()


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """{task name: run folder with report.html} for every built-in task."""
    from pathkit_core.report.html import write_run_report

    root = tmp_path_factory.mktemp("report-runs")
    out = {}
    for name, build in BUILDERS.items():
        out[name] = build(root / "runs" / name)
        write_run_report(out[name])
    return out


@pytest.fixture(scope="session")
def board(tmp_path_factory):
    """A demo-reports leaderboard of 2 encoders x 2 generators (its matrix report written)."""
    return matrix(tmp_path_factory.mktemp("report-matrix") / "ws")


@pytest.fixture(scope="session")
def suite_report(planted_suite):
    """The report of a suite of planted classification cells (no training), written once."""
    from pathkit_bench.report.suite import write_suite_report
    from pathkit_bench.suite.analysis import SuiteAnalysis

    return write_suite_report(SuiteAnalysis(planted_suite, resamples=300))
