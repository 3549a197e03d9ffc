"""Score rows as every table shows them (terminal, run report, matrix report): a metric's headline
scores first, CI bounds (`<key>_ci_low`, `<key>_ci_high`) folded into their score's row ("not estimable
(n=...)" when not finite), each score's direction and range from its metric, and the metric's small-sample
warning (docs/reports.md, "The run report"; docs/metrics.md, "Small test sets")."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CI_SUFFIXES = ("_ci_low", "_ci_high")
# The sign shown beside a score: which way is better.
ARROWS = {"higher": "\u2191", "lower": "\u2193"}
# Beside a score of a test set too small for its interval method (the warning says why).
SMALL_FLAG = "small test set"
NOT_ESTIMABLE = "not estimable"


@dataclass
class ScoreRow:
    """One score of one metric: value, interval, direction and the same score of each baseline."""

    metric: str
    key: str
    value: float | None
    ci: tuple[float, float] | None = None
    direction: str | None = None  # "higher", "lower" or None (metric not installed)
    headline: bool = False
    score_range: tuple[float, float] | None = None
    baselines: dict[str, float | None] = field(default_factory=dict)
    baseline_cis: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    label: str = ""
    # "not estimable (n=3)" when the metric gave CI bounds it could not estimate; else ""
    ci_note: str = ""
    # the metric's small-sample warning (details["sample"]["warning"]); "" when the set is large enough
    note: str = ""

    @property
    def better(self) -> str:
        """The direction as the tables show it: "↑ higher" / "↓ lower" / "" (direction unknown, or
        an informational key such as a count)."""
        return f"{self.arrow} {self.direction}" if self.direction in ARROWS else ""

    @property
    def ci_text(self) -> str:
        """The CI cell: "[low, high]", "not estimable (n=...)" or "", then "· small test set" when
        the metric flagged its test set as too small for the interval method."""
        text = format_ci(self.ci) or self.ci_note
        return f"{text} \u00b7 {SMALL_FLAG}".lstrip(" \u00b7") if self.note else text

    @property
    def arrow(self) -> str:
        return ARROWS.get(self.direction or "", "")


def finite_number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def interval(values: Mapping[str, Any], key: str) -> tuple[float, float] | None:
    """(low, high) of `key` when both bounds are finite numbers, else None."""
    low, high = finite_number(values.get(f"{key}_ci_low")), finite_number(values.get(f"{key}_ci_high"))
    return (low, high) if low is not None and high is not None else None


def format_value(value: Any, digits: int = 4) -> str:
    """A score as tables print it: 4 decimals, counts as integers, "n/a" for NaN or missing."""
    number = finite_number(value)
    if number is None:
        return "n/a" if value is not None else ""
    if number.is_integer() and abs(number) >= 10:
        return f"{int(number)}"
    return f"{number:.{digits}f}"


def format_ci(ci: tuple[float, float] | None, digits: int = 4) -> str:
    return "" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def not_estimable_text(n_cases: int | None = None) -> str:
    """The CI cell of a score whose interval could not be estimated: "not estimable (n=3)"."""
    return f"{NOT_ESTIMABLE} (n={n_cases})" if n_cases is not None else NOT_ESTIMABLE


def format_bounds(low: Any, high: Any, digits: int = 3, sep: str = " ") -> str:
    """" [low, high]" of a leaderboard cell; " not estimable" when the bounds are there but not
    finite (an interval the metric could not estimate); "" when there are none."""
    if low is None or high is None:
        return ""
    lo, hi = finite_number(low), finite_number(high)
    if lo is None or hi is None:
        return f" {NOT_ESTIMABLE}"
    return f" [{lo:.{digits}f},{sep}{hi:.{digits}f}]"


def metric_classes(names: Any, registry: Any = None) -> dict[str, Any]:
    """The registered Metric class of each name; names no installed plugin provides are left out."""
    from pathkit_core.plugins import get_component

    lookup = get_component if registry is None else registry.get
    out = {}
    for name in names:
        try:
            out[name] = lookup("metric", name)
        except Exception:  # noqa: BLE001 - a score of an uninstalled metric is still shown
            continue
    return out


def _point_keys(values: Mapping[str, Any]) -> list[str]:
    return [k for k in values if not k.endswith(CI_SUFFIXES)]


def not_estimable(values: Mapping[str, Any], key: str) -> bool:
    """Whether `key` has CI bounds in `values` that are not finite numbers while the score is:
    the metric tried an interval and could not estimate it."""
    if f"{key}_ci_low" not in values or f"{key}_ci_high" not in values:
        return False
    return finite_number(values.get(key)) is not None and interval(values, key) is None


def sample_warning(details: Mapping[str, Any] | None) -> str:
    """The small-sample warning a metric recorded in its details ("" when none)."""
    sample = (details or {}).get("sample") if isinstance(details, Mapping) else None
    return str(sample.get("warning") or "") if isinstance(sample, Mapping) else ""


def sample_warnings(details: Mapping[str, Mapping[str, Any]] | None) -> dict[str, str]:
    """{metric: its small-sample warning} of the metrics that recorded one (metrics.json "details")."""
    return {metric: text for metric, found in (details or {}).items() if (text := sample_warning(found))}


def score_rows(summary: Mapping[str, Mapping[str, Any]],
               baselines: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None, *,
               registry: Any = None, headline_only: bool = False,
               details: Mapping[str, Mapping[str, Any]] | None = None) -> list[ScoreRow]:
    """Rows of every score in `summary` ({metric: {key: value}}), headline scores first.

    A metric that declares no headline scores has all of its scores (except informational keys)
    as headline. `baselines` is {baseline: {metric: {key: value}}}; `details` the metrics'
    details (metrics.json "details": the small-sample facts). A key two metrics share is
    labelled `key (metric)`."""
    baselines = baselines or {}
    classes = metric_classes(summary, registry)
    counts = Counter(key for values in summary.values() for key in _point_keys(values))
    headline_rows: list[ScoreRow] = []
    other_rows: list[ScoreRow] = []
    for metric, values in summary.items():
        cls = classes.get(metric)
        keys = _point_keys(values)
        declared = [k for k in cls.headline_scores if k in values] if cls is not None else []
        informational = cls.is_informational if cls is not None else (lambda k: k.startswith("n_"))
        headline = declared or [k for k in keys if not informational(k)]
        ranges = dict(cls.score_ranges) if cls is not None else {}
        own = (details or {}).get(metric) or {}
        warning = sample_warning(own)
        n_cases = (own.get("sample") or {}).get("n_cases") if isinstance(own.get("sample"), Mapping) else None
        for key in headline + [k for k in keys if k not in headline]:
            row = ScoreRow(metric=metric, key=key, value=finite_number(values.get(key)), ci=interval(values, key),
                           direction=cls.direction(key) if cls is not None else None, headline=key in headline,
                           score_range=tuple(ranges[key]) if key in ranges else None,  # type: ignore[arg-type]
                           label=key if counts.get(key, 0) == 1 else f"{key} ({metric})",
                           ci_note=not_estimable_text(n_cases) if not_estimable(values, key) else "",
                           note="" if informational(key) else warning)
            for name, scored in baselines.items():
                theirs = (scored or {}).get(metric) or {}
                row.baselines[name] = finite_number(theirs.get(key))
                row.baseline_cis[name] = interval(theirs, key)
            (headline_rows if row.headline else other_rows).append(row)
    return headline_rows if headline_only else headline_rows + other_rows


def table_cells(row: ScoreRow, baseline_names: list[str], *, with_ci_column: bool = True) -> list[str]:
    """A row as text cells: metric, value, CI, each baseline, direction (the terminal's columns)."""
    cells = [row.label, format_value(row.value)]
    if with_ci_column:
        cells.append(row.ci_text)
    cells += [format_value(row.baselines.get(b)) for b in baseline_names]
    cells.append(row.better)
    return cells


def table_headers(baseline_names: list[str], *, with_ci_column: bool = True) -> list[str]:
    return ["metric", "model", *(["CI"] if with_ci_column else []), *(f"baseline: {b}" for b in baseline_names),
            "better"]


__all__ = ["ARROWS", "CI_SUFFIXES", "NOT_ESTIMABLE", "ScoreRow", "format_bounds", "format_ci", "format_value",
           "interval", "metric_classes", "not_estimable", "not_estimable_text", "sample_warning", "sample_warnings",
           "score_rows", "table_cells", "table_headers"]
