"""Intervals a small test set can honestly carry: Wilson or exact (Clopper-Pearson) intervals of
proportions (`scipy.stats.binomtest`) and the small-sample thresholds of the bootstrap (`MIN_CASES`,
`MIN_CASES_PER_CLASS`) with the facts a metric records about its test set's size; why these methods and
thresholds: docs/metrics.md, "Small test sets". The words the tables use when an interval cannot be
estimated are the core's (`pathkit_core.evaluation.scores.not_estimable_text`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pathkit_core.contracts import PathkitError

MIN_CASES = 20
MIN_CASES_PER_CLASS = 10
PROPORTION_METHODS = {"wilson": "wilson", "exact": "exact", "clopper-pearson": "exact"}
# details key under which a metric records its test set's size (`sample_facts`)
SAMPLE_KEY = "sample"


def proportion_ci(successes: int, n: int, level: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """Two-sided interval of the proportion successes/n: Wilson score (default) or exact
    Clopper-Pearson; (nan, nan) when n is 0 (no proportion to bound)."""
    from scipy.stats import binomtest

    chosen = PROPORTION_METHODS.get(str(method).lower())
    if chosen is None:
        raise PathkitError(f"proportion interval: unknown method {method!r} (expected wilson or exact)")
    if not 0.0 < float(level) < 1.0:
        raise PathkitError(f"proportion interval: level must lie strictly between 0 and 1, got {level!r}")
    successes, n = int(successes), int(n)
    if n < 0 or not 0 <= successes <= n:
        raise PathkitError(f"proportion interval: {successes} successes out of {n} trials")
    if n == 0:
        return (math.nan, math.nan)
    found = binomtest(successes, n).proportion_ci(confidence_level=float(level), method=chosen)
    return (float(found.low), float(found.high))


def small_sample_warning(n_cases: int, class_counts: Mapping[str, int] | None = None) -> str:
    """The sentence the tables print beside a score of a test set too small for the bootstrap
    ("" when it is large enough): fewer than `MIN_CASES` cases, or a class with fewer than
    `MIN_CASES_PER_CLASS`."""
    problems = []
    if n_cases < MIN_CASES:
        problems.append(f"{n_cases} test case(s) (fewer than {MIN_CASES})")
    few = {str(k): int(v) for k, v in (class_counts or {}).items() if int(v) < MIN_CASES_PER_CLASS}
    if few:
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(few.items(), key=lambda kv: (kv[1], kv[0]))[:6])
        more = f" and {len(few) - 6} more" if len(few) > 6 else ""
        problems.append(f"class(es) with fewer than {MIN_CASES_PER_CLASS} test cases ({shown}{more})")
    if not problems:
        return ""
    return ("small test set: " + "; ".join(problems) + ". Bootstrap intervals are unreliable at this size "
            "(proportions carry Wilson/exact intervals); read the scores as anecdotal")


def sample_facts(n_cases: int, class_counts: Mapping[str, int] | None = None) -> dict[str, Any]:
    """What a metric records under details["sample"]: the test set's size, its class counts and,
    when it is small, the warning (`small_sample_warning`) the tables show beside its scores."""
    out: dict[str, Any] = {"n_cases": int(n_cases), "min_cases": MIN_CASES}
    if class_counts is not None:
        out["class_counts"] = {str(k): int(v) for k, v in class_counts.items()}
        out["min_cases_per_class"] = MIN_CASES_PER_CLASS
    warning = small_sample_warning(n_cases, class_counts)
    out["small"] = bool(warning)
    if warning:
        out["warning"] = warning
    return out


__all__ = ["MIN_CASES", "MIN_CASES_PER_CLASS", "PROPORTION_METHODS", "SAMPLE_KEY", "proportion_ci", "sample_facts",
           "small_sample_warning"]
