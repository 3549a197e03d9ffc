"""Hooks the bench package adds for other plugins (through `add_hookspecs`): sections of the
leaderboard (matrix) report and of the suite report."""

from __future__ import annotations

from typing import Any

import pluggy

from pathkit_core import PROJECT_NAME

hookspec = pluggy.HookspecMarker(PROJECT_NAME)


@hookspec
def matrix_report_sections(board: Any) -> list[Any] | None:
    """Sections this plugin adds to the report of a leaderboard folder (`board`: a
    `pathkit_bench.report.matrix.Leaderboards`; the goldmark plugin adds encoder rank-sums)."""


@hookspec
def suite_report_sections(suite: Any) -> list[Any] | None:
    """Sections this plugin adds to a suite report (`suite`: a `pathkit_bench.suite.analysis.SuiteAnalysis`,
    with its tidy leaderboard `suite.frame` and figure writer `suite.figures`; the goldmark plugin adds
    its encoder rank-sums)."""


__all__ = [
    "hookspec", "matrix_report_sections", "suite_report_sections"
]
