"""Survival metrics: Harrell's C (lifelines' rules), Uno's censoring-weighted C and the cumulative/
dynamic time-dependent AUC at stated horizons (scikit-survival), each with a percentile bootstrap CI;
for predictions that carry a survival curve (a discrete-time head's), the Brier score at each
horizon and the integrated Brier score over them (scikit-survival) (docs/survival.md).

Predictions are risk scores (higher = earlier event), references `{"time", "event"}`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, Metric, MetricResult, PathkitError
from pathkit_metrics._intervals import RESAMPLE_OPTIONS, SELECTION_OPTION, add_intervals, case_intervals, n_resamples
from pathkit_tasks import TASK_SURVIVAL

if TYPE_CHECKING:
    import numpy as np

# Horizons when none are given: the 25th, 50th and 75th percentiles of the test cases' event times.
DEFAULT_HORIZON_QUANTILES = (0.25, 0.5, 0.75)


def survival_arrays(predictions: Sequence[Any], references: Sequence[Any]) -> tuple[np.ndarray, ...]:
    """(risk, time, event) arrays; a PathkitError naming the case that is not of the form."""
    import numpy as np

    from pathkit_tasks.survival.target import parse_risk, parse_target

    if len(predictions) != len(references):
        raise PathkitError(f"survival: {len(predictions)} predictions for {len(references)} references")
    if not references:
        raise PathkitError("survival: no cases to score")
    risk, time, event = [], [], []
    for i, (p, r) in enumerate(zip(predictions, references, strict=True)):
        try:
            risk.append(parse_risk(p))
            t, e = parse_target(r)
        except ValueError as exc:
            raise PathkitError(f"survival: case {i}: {exc}") from None
        time.append(t)
        event.append(e)
    return np.asarray(risk, np.float64), np.asarray(time, np.float64), np.asarray(event, np.int64)


def concordance_pairs(risk: np.ndarray, time: np.ndarray, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(comparable, concordant) pair matrices of Harrell's C by lifelines' rules: (i, j) is
    comparable when i had the event and either T_i < T_j or T_i = T_j with j censored; concordant
    scores 1 when risk_i > risk_j and 1/2 when the risks tie."""
    import numpy as np

    died = event.astype(bool)[:, None]
    earlier = time[:, None] < time[None, :]
    censored_tie = (time[:, None] == time[None, :]) & ~event.astype(bool)[None, :]
    comparable = died & (earlier | censored_tie)
    diff = risk[:, None] - risk[None, :]
    concordant = comparable * ((diff > 0) + 0.5 * (diff == 0))
    return comparable.astype(np.float64), concordant


def harrell_c(risk: np.ndarray, time: np.ndarray, event: np.ndarray) -> float:
    """Harrell's C: equal to `lifelines.utils.concordance_index(time, -risk, event)`; NaN with no
    comparable pair."""
    comparable, concordant = concordance_pairs(risk, time, event)
    total = comparable.sum()
    return float(concordant.sum() / total) if total else math.nan


def harrell_c_resampled(comparable: np.ndarray, concordant: np.ndarray, block: np.ndarray) -> np.ndarray:
    """Harrell's C of each resample (a row of case indices): a resample weights pair (i, j) by the
    product of the two cases' counts, so the pair matrices are built once."""
    import numpy as np

    n = comparable.shape[0]
    counts = np.stack([np.bincount(row, minlength=n) for row in block]).astype(np.float64)
    num = np.einsum("ri,ij,rj->r", counts, concordant, counts)
    den = np.einsum("ri,ij,rj->r", counts, comparable, counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def c_index_statistic(block: np.ndarray) -> np.ndarray:
    """Harrell's C of resampled rows (resamples, cases, 3: risk, time, event): `pathkit compare`'s
    paired bootstrap of the C-index difference (`SurvivalMetric.paired_statistic`)."""
    import numpy as np

    return np.asarray([harrell_c(rows[:, 0], rows[:, 1], rows[:, 2]) for rows in block])


def structured(time: np.ndarray, event: np.ndarray) -> np.ndarray:
    from sksurv.util import Surv

    return Surv.from_arrays(event=event.astype(bool), time=time)


def horizons(option: Any, time: np.ndarray, event: np.ndarray, train: np.ndarray) -> list[float]:
    """The stated horizons (option `horizons`), else the event-time quartiles; each must lie inside
    the test follow-up and the train follow-up (where the censoring estimate is defined)."""
    import numpy as np

    if option:
        given = option.split(",") if isinstance(option, str) else list(option) if isinstance(option, list | tuple) \
            else [option]
        try:
            values = [float(v) for v in given if not isinstance(v, bool)]
        except (TypeError, ValueError):
            values = []
        if len(values) != len(given) or not all(map(math.isfinite, values)):
            raise PathkitError(f"survival: horizons {option!r} must be finite times, comma-separated (e.g. 12,24,36)")
    else:
        events = time[event == 1]
        if events.size == 0:
            return []
        values = sorted({float(v) for v in np.quantile(events, DEFAULT_HORIZON_QUANTILES)})
    low, high = float(time.min()), min(float(time.max()), float(train["time"].max()))
    bad = [v for v in values if not low <= v < high]
    if bad and option:
        raise PathkitError(f"survival: horizon(s) {bad} outside the follow-up [{low:g}, {high:g}) of the test "
                           "cases (and the train cases' censoring estimate); choose horizons inside it")
    return [v for v in values if low <= v < high]


def censored_at(last: float, time: np.ndarray, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Test follow-up past `last` (the train split's last time, beyond which the censoring
    distribution is unknown) censored at `last`, as scikit-survival's IPCW estimates require."""
    import numpy as np

    over = time > last
    return np.where(over, last, time), np.where(over, 0, event)


def sksurv_scores(risk: np.ndarray, time: np.ndarray, event: np.ndarray, train: np.ndarray, at: list[float],
                  tau: float | None) -> dict[str, float]:
    """Uno's C and the time-dependent AUC at each horizon (NaN where scikit-survival cannot)."""
    import numpy as np

    time, event = censored_at(float(train["time"].max()), time, event)
    test = structured(time, event)
    out: dict[str, float] = {}
    with np.errstate(invalid="ignore", divide="ignore"):  # a resample without events: NaN, said once as NaN
        return _sksurv_scores(out, risk, train, test, at, tau)


def _sksurv_scores(out: dict[str, float], risk: np.ndarray, train: np.ndarray, test: np.ndarray, at: list[float],
                   tau: float | None) -> dict[str, float]:
    import numpy as np
    from sksurv.metrics import concordance_index_ipcw, cumulative_dynamic_auc

    try:
        out["uno_c"] = float(concordance_index_ipcw(train, test, risk, tau=tau)[0])
    except (ValueError, ZeroDivisionError):
        out["uno_c"] = math.nan
    if at:
        try:
            aucs, mean_auc = cumulative_dynamic_auc(train, test, risk, np.asarray(at))
            out.update({f"auc@{h:g}": float(a) for h, a in zip(at, aucs, strict=True)})
            out["mean_auc"] = float(mean_auc)
        except ValueError:
            out.update({f"auc@{h:g}": math.nan for h in at})
            out["mean_auc"] = math.nan
    return out


def survival_at(predictions: Sequence[Any], at: list[float]) -> np.ndarray | None:
    """(cases, horizons) survival probabilities read from each prediction's `survival` curve at
    `bin_ends` (a step that drops at each bin's end: S(t) is the survival past every bin that ended
    by t); None when a prediction carries no curve."""
    import numpy as np

    rows = []
    for p in predictions:
        if not isinstance(p, dict) or "survival" not in p or "bin_ends" not in p:
            return None
        ends = np.asarray([np.inf if e is None else float(e) for e in p["bin_ends"]])
        padded = np.concatenate([[1.0], np.asarray(p["survival"], dtype=np.float64)])
        rows.append(padded[np.searchsorted(ends, np.asarray(at), side="right")])
    return np.asarray(rows)


def brier_scores(curves: np.ndarray, time: np.ndarray, event: np.ndarray, train: np.ndarray,
                 at: list[float]) -> dict[str, float]:
    """scikit-survival's Brier score at each horizon and the integrated Brier score over them (two
    horizons at least); NaN where it cannot."""
    import numpy as np
    from sksurv.metrics import brier_score, integrated_brier_score

    time, event = censored_at(float(train["time"].max()), time, event)
    test = structured(time, event)
    out: dict[str, float] = {}
    try:
        _, scores = brier_score(train, test, curves, np.asarray(at))
        out.update({f"brier@{h:g}": float(b) for h, b in zip(at, scores, strict=True)})
    except ValueError:
        out.update({f"brier@{h:g}": math.nan for h in at})
    if len(at) >= 2:
        try:
            out["ibs"] = float(integrated_brier_score(train, test, curves, np.asarray(at)))
        except ValueError:
            out["ibs"] = math.nan
    return out


class SurvivalMetric(Metric):
    """Harrell's and Uno's concordance and the time-dependent AUC of a risk score, with bootstrap CIs."""

    name: ClassVar[str] = "survival"
    description: ClassVar[str] = "Harrell's C (lifelines), Uno's C and time-dependent AUC (scikit-survival), CIs"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SURVIVAL,)
    headline_scores: ClassVar[tuple[str, ...]] = ("c_index", "uno_c", "mean_auc")
    score_ranges: ClassVar[dict[str, tuple[float, float]]] = {"c_index": (0.0, 1.0), "uno_c": (0.0, 1.0),
                                                              "mean_auc": (0.0, 1.0), "ibs": (0.0, 1.0)}
    lower_is_better: ClassVar[tuple[str, ...]] = ("ibs",)
    informational: ClassVar[tuple[str, ...]] = ("n_events",)
    whole_records: ClassVar[bool] = True
    # the C-index is a statistic of pairs: compared by a paired bootstrap recomputing it per resample
    paired_scores: ClassVar[dict[str, tuple[str, str]]] = {"c_index": ("statistic", "risk,time,event")}
    citation: ClassVar[str] = ("Harrell FE et al. Evaluating the yield of medical tests. JAMA 1982; Uno H et al. "
                               "On the C-statistics for evaluating overall adequacy of risk prediction procedures "
                               "with censored survival data. Stat Med 2011")
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *RESAMPLE_OPTIONS,
        DatasetOption("horizons", "any", None, "times of the time-dependent AUC, comma-separated, in the "
                      "dataset's time unit (default: the quartiles of the test event times)"),
        DatasetOption("tau", "float", None, "truncation time of Uno's C (default: none)"),
        SELECTION_OPTION,
    )

    @staticmethod
    def paired_statistic(key: str) -> Any:
        """The corpus statistic `pathkit compare` recomputes per resample for `key`."""
        return c_index_statistic if key == "c_index" else None

    def compute(self, predictions, references, *, ids=None, context=None) -> MetricResult:
        import numpy as np
        import polars as pl

        options = self.checked_options(dict((context or {}).get("options") or {}))
        risk, time, event = survival_arrays(predictions, references)
        given = (context or {}).get("train_survival")
        if given:
            pairs = np.asarray(given, dtype=np.float64)
            train = structured(pairs[:, 0], pairs[:, 1].astype(int))
        else:
            train = structured(time, event)
        at = horizons(options.get("horizons"), time, event, train)
        tau = options.get("tau")
        if tau is not None and not (math.isfinite(float(tau)) and float(tau) > 0):
            raise PathkitError(f"survival: tau {tau!r} must be a positive finite time (the truncation time of Uno's C)")
        summary = {"c_index": harrell_c(risk, time, event), **sksurv_scores(risk, time, event, train, at, tau),
                   "n_cases": float(risk.size), "n_events": float(event.sum())}
        curves = survival_at(predictions, at) if at else None
        if curves is not None:
            summary.update(brier_scores(curves, time, event, train, at))
        n = n_resamples(options)
        details: dict[str, Any] = {"horizons": at, "censoring_from": "train split" if given else "test cases",
                                   "censored_at_train_end": int((time > float(train["time"].max())).sum())}
        if n > 0:
            self._intervals(summary, details, risk, time, event, train, at, tau, n, options)
        case_ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(risk.size)]
        per_case = pl.DataFrame({"id": case_ids, "risk": risk, "time": time, "event": event})
        return MetricResult(summary, per_case, details)

    @staticmethod
    def _intervals(summary: dict[str, float], details: dict[str, Any], risk: np.ndarray, time: np.ndarray,
                   event: np.ndarray, train: np.ndarray, at: list[float], tau: float | None, n: int,
                   options: dict[str, Any]) -> None:
        """Percentile bootstrap CIs over one set of resamples of the test cases."""
        import numpy as np

        comparable, concordant = concordance_pairs(risk, time, event)

        def statistics(block: np.ndarray) -> dict[str, np.ndarray]:
            out: dict[str, list[float]] = {}
            for row in block:
                for key, value in sksurv_scores(risk[row], time[row], event[row], train, at, tau).items():
                    out.setdefault(key, []).append(value)
            return {"c_index": harrell_c_resampled(comparable, concordant, block),
                    **{k: np.asarray(v) for k, v in out.items()}}

        add_intervals(summary, details, case_intervals(statistics, int(risk.size), options, n),
                      ("c_index", "uno_c", "mean_auc"), n, "test cases")


@hookimpl
def register_metrics(register):
    register(SurvivalMetric)
