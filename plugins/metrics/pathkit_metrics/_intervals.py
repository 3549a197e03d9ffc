"""The case bootstrap the ordinal, retrieval and survival metrics share: its options
(`n_resamples`, 0 for none; `ci_level`; `seed`; `selection`, set while epochs are selected: no
intervals) and the `<score>_ci_low` / `<score>_ci_high` percentile intervals it adds to a summary."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pathkit_core.contracts import DatasetOption

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
RESAMPLE_OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("n_resamples", "int", DEFAULT_RESAMPLES, "bootstrap resamples (0: no CI)"),
    DatasetOption("ci_level", "float", DEFAULT_LEVEL, "confidence level of the CIs"),
    DatasetOption("seed", "int", 0, "bootstrap seed"),
)
SELECTION_OPTION = DatasetOption("selection", "bool", False, "epoch selection: no CIs")


def n_resamples(options: Mapping[str, Any]) -> int:
    """The resamples the options ask for; none while epochs are selected."""
    return 0 if options.get("selection") else int(options.get("n_resamples", DEFAULT_RESAMPLES))


def add_intervals(summary: dict[str, float], details: dict[str, Any], intervals: Mapping[str, tuple[float, float]],
                  described: Iterable[str], n: int, of: str) -> None:
    """Write each (low, high) of `intervals` into `summary`, and name the method in
    `details["intervals"]` for the `described` scores (`n` resamples of the `of`)."""
    for key, (low, high) in intervals.items():
        summary[f"{key}_ci_low"], summary[f"{key}_ci_high"] = low, high
    details["intervals"] = {key: f"percentile bootstrap ({n} resamples of the {of})" for key in described}


def case_intervals(statistics: Callable[[Any], Mapping[str, Any]], n_cases: int, options: Mapping[str, Any],
                   n: int) -> dict[str, tuple[float, float]]:
    """Percentile intervals of the statistics over `n` resamples of the cases (one set for all)."""
    from pathkit_sdk.bootstrap import bootstrap_statistics_ci

    return bootstrap_statistics_ci(statistics, n_cases, n, int(options.get("seed", 0)),
                                   float(options.get("ci_level", DEFAULT_LEVEL)))
