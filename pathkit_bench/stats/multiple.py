"""Adjusted p-values over a family of comparisons: Holm's step-down (Holm 1979), controlling the
family-wise error rate, and Benjamini-Hochberg's step-up (Benjamini & Hochberg 1995, via
`scipy.stats.false_discovery_control`), controlling the false discovery rate.

NaN p-values (a comparison that could not be made) stay NaN and do not count in the family.
"""

from __future__ import annotations

from typing import Any

from pathkit_core.contracts import PathkitError

METHODS = ("holm", "bh", "none")


def _as_pvalues(pvalues: Any):
    import numpy as np

    p = np.asarray(pvalues, dtype=np.float64)
    finite = p[~np.isnan(p)]
    if ((finite < 0) | (finite > 1)).any():
        raise PathkitError(f"p-values must lie in [0, 1]; got {finite[(finite < 0) | (finite > 1)][:5].tolist()}")
    return p


def holm(pvalues: Any):
    """Holm-adjusted p-values, same shape: the i-th smallest of m becomes
    max over j <= i of min(1, (m - j + 1) p_(j)) (Holm 1979, the step-down rule written as adjusted values)."""
    import numpy as np

    p = _as_pvalues(pvalues)
    flat = p.reshape(-1)
    out = np.full(flat.shape, np.nan)
    present = np.flatnonzero(~np.isnan(flat))
    m = present.size
    if m:
        order = present[np.argsort(flat[present], kind="stable")]
        scaled = np.minimum(1.0, (m - np.arange(m)) * flat[order])
        out[order] = np.maximum.accumulate(scaled)
    return out.reshape(p.shape)


def benjamini_hochberg(pvalues: Any):
    """Benjamini-Hochberg adjusted p-values (q-values), same shape."""
    import numpy as np
    from scipy.stats import false_discovery_control

    p = _as_pvalues(pvalues)
    flat = p.reshape(-1)
    out = np.full(flat.shape, np.nan)
    present = ~np.isnan(flat)
    if present.any():
        out[present] = false_discovery_control(flat[present], method="bh")
    return out.reshape(p.shape)


def adjust_pvalues(pvalues: Any, method: str = "holm"):
    """`holm` (default), `bh` or `none` (the raw values, copied)."""
    import numpy as np

    if method == "holm":
        return holm(pvalues)
    if method == "bh":
        return benjamini_hochberg(pvalues)
    if method == "none":
        return np.array(_as_pvalues(pvalues), copy=True)
    raise PathkitError(f"unknown p-value correction {method!r}; choose one of {', '.join(METHODS)}")


__all__ = ["METHODS", "adjust_pvalues", "benjamini_hochberg", "holm"]
