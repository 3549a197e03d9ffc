"""Bootstrap confidence intervals for metric summaries: per-case means and corpus-level statistics
(docs/metrics.md, "Bootstrap confidence intervals"); an interval of no width is (nan, nan), "not estimable"."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError

if TYPE_CHECKING:
    import numpy as np

# Resamples are drawn in blocks so that memory stays bounded (block x n_cases indices) on large corpora.
_MAX_BLOCK_ELEMENTS = 4_000_000

NAN_POLICIES = ("omit", "raise")


def _check_args(n_resamples: int, level: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise PathkitError(f"bootstrap: n_resamples must be a positive integer, got {n_resamples!r}")
    if not isinstance(level, int | float) or not 0.0 < float(level) < 1.0:
        raise PathkitError(f"bootstrap: level must lie strictly between 0 and 1, got {level!r}")


def _as_float_array(values: Sequence[float] | Any, nan_policy: str) -> np.ndarray:
    import numpy as np

    if nan_policy not in NAN_POLICIES:
        raise PathkitError(f"bootstrap: nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PathkitError(f"bootstrap: values must be numbers ({exc})") from exc
    if array.ndim != 1:
        raise PathkitError(f"bootstrap: values must be one-dimensional, got shape {array.shape}")
    if np.isinf(array).any():
        raise PathkitError("bootstrap: values contain an infinite number")
    missing = np.isnan(array)
    if missing.any():
        if nan_policy == "raise":
            raise PathkitError(f"bootstrap: {int(missing.sum())} value(s) are NaN (nan_policy='raise')")
        array = array[~missing]
    return array


def resample_indices(n_cases: int, n_resamples: int = 1000, seed: int = 0) -> Iterator[np.ndarray]:
    """Yield blocks of case indices, shape (block, n_cases), drawn with replacement.

    The blocks together hold `n_resamples` rows; the same `seed` gives the same rows
    whatever the block size, so results do not depend on the corpus size cut-off.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    block = max(1, min(n_resamples, _MAX_BLOCK_ELEMENTS // max(n_cases, 1)))
    done = 0
    while done < n_resamples:
        rows = min(block, n_resamples - done)
        yield rng.integers(0, n_cases, size=(rows, n_cases))
        done += rows


def _percentile_interval(distribution: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of the finite resample values; (nan, nan), not estimable, when there is none
    or when it has no width (docs/metrics.md, "Bootstrap confidence intervals")."""
    import numpy as np

    finite = distribution[np.isfinite(distribution)]
    if finite.size == 0:
        return (math.nan, math.nan)
    alpha = (1.0 - float(level)) / 2.0
    low, high = np.quantile(finite, (alpha, 1.0 - alpha)).tolist()
    if low == high:
        return (math.nan, math.nan)
    return (float(low), float(high))


def bootstrap_distribution(values: Sequence[float] | Any, n_resamples: int = 1000, seed: int = 0, *,
                           nan_policy: str = "omit") -> np.ndarray:
    """The `n_resamples` bootstrap means of `values` (empty when there is no finite value)."""
    import numpy as np

    _check_args(n_resamples, 0.5)
    array = _as_float_array(values, nan_policy)
    if array.size == 0:
        return np.empty(0, dtype=np.float64)
    means = [array[idx].mean(axis=1) for idx in resample_indices(array.size, n_resamples, seed)]
    return np.concatenate(means)


def bootstrap_ci(values: Sequence[float] | Any, n_resamples: int = 1000, seed: int = 0, level: float = 0.95, *,
                 nan_policy: str = "omit") -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of per-case `values`.

    NaN values (a case where the metric is undefined, e.g. no key field in the reference)
    are left out, as a `nanmean` summary leaves them out; `nan_policy="raise"` refuses them.
    With no value left, or when the percentile interval has no width (one value, all values
    equal), the interval is (nan, nan): not estimable (pathkit_core.evaluation.scores).
    """
    _check_args(n_resamples, level)
    distribution = bootstrap_distribution(values, n_resamples, seed, nan_policy=nan_policy)
    return _percentile_interval(distribution, level)


def bootstrap_statistic_ci(statistic: Callable[[np.ndarray], float | np.ndarray], n_cases: int, n_resamples: int = 1000,
                           seed: int = 0, level: float = 0.95, *, vectorized: bool = False) -> tuple[float, float]:
    """Percentile bootstrap interval of a corpus-level statistic (corpus BLEU, AUROC, ...).

    `statistic(indices)` receives the case indices of one resample (an int array of length
    `n_cases`, with repeats) and returns the statistic on those cases. With
    `vectorized=True` it receives a block of resamples, shape (block, n_cases), and returns
    one value per row, which is much faster for statistics built from summed per-case counts.
    Resamples where the statistic is NaN (e.g. AUROC of a one-class resample) are left out;
    when the others all agree the interval is (nan, nan): not estimable.
    """
    name = getattr(statistic, "__name__", "statistic")
    if vectorized:
        found = bootstrap_statistics_ci(lambda block: {name: statistic(block)}, n_cases, n_resamples, seed, level)
    else:
        found = bootstrap_statistics_ci(lambda block: {name: [float(statistic(row)) for row in block]}, n_cases,
                                        n_resamples, seed, level)
    return found.get(name, (math.nan, math.nan))


def bootstrap_statistics_ci(statistics: Callable[[np.ndarray], Mapping[str, np.ndarray]], n_cases: int,
                            n_resamples: int = 1000, seed: int = 0,
                            level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of several statistics over one set of resamples.

    `statistics(block)` receives a block of resamples, shape (block, n_cases), and returns a
    mapping of name -> one value per row (e.g. every macro score from one confusion matrix per
    resample). Each interval equals what `bootstrap_statistic_ci(..., vectorized=True)` gives for
    that statistic alone (same seed, same resamples); the resamples are drawn and the shared work
    done once. NaN resamples are left out per statistic.
    """
    import numpy as np

    _check_args(n_resamples, level)
    if isinstance(n_cases, bool) or not isinstance(n_cases, int) or n_cases < 0:
        raise PathkitError(f"bootstrap: n_cases must be a non-negative integer, got {n_cases!r}")
    collected: dict[str, list[np.ndarray]] = {}
    for block in resample_indices(n_cases, n_resamples, seed) if n_cases else ():
        for name, values in statistics(block).items():
            out = np.asarray(values, dtype=np.float64).reshape(-1)
            if out.shape[0] != block.shape[0]:
                raise PathkitError(f"bootstrap: statistic {name!r} must return one value per resample "
                                   f"({block.shape[0]}), got {out.shape[0]}")
            collected.setdefault(name, []).append(out)
    return {name: _percentile_interval(np.concatenate(parts), level) for name, parts in collected.items()}


__all__ = ["bootstrap_ci", "bootstrap_distribution", "bootstrap_statistic_ci", "bootstrap_statistics_ci",
           "resample_indices"]
