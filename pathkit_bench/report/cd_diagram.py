"""The critical-difference diagram of Demšar (2006, figure 1): an axis of average ranks (1, the best,
on the left), each model's name joined to its rank, the critical difference drawn above the axis,
and a thick bar under each group of models whose ranks differ by less than it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def cd_diagram(names: Sequence[str], ranks: Sequence[float], cd: float, cliques: Sequence[Sequence[int]], *,
               title: str = ""):
    """A matplotlib Figure (no pyplot) of the diagram."""
    import math

    from pathkit_core.report.figures import new_figure

    k = len(names)
    order = sorted(range(k), key=lambda i: ranks[i])
    half = math.ceil(k / 2)
    left, right = order[:half], order[half:]
    rows = max(len(left), len(right))
    fig, axes = new_figure(7.2, 1.5 + 0.32 * rows + 0.18 * len(cliques))
    ax = axes[0][0]
    lo, hi = 1, max(k, 2)
    margin = max(1.6, 0.3 * k)  # room for the names beside the axis
    ax.set_xlim(lo - margin, hi + margin)
    top = 1.0
    ax.set_ylim(-(rows + 1.2 + 0.25 * len(cliques)) * 0.32, top + 0.55)
    ax.axis("off")
    ax.plot([lo, hi], [0, 0], color="black", lw=1)
    for r in range(lo, hi + 1):
        ax.plot([r, r], [0, 0.1], color="black", lw=1)
        ax.text(r, 0.16, str(r), ha="center", va="bottom", fontsize="small")
    # the critical difference, above the axis from rank 1
    if math.isfinite(cd):
        ax.plot([lo, lo + cd], [top, top], color="black", lw=1.5)
        for x in (lo, lo + cd):
            ax.plot([x, x], [top - 0.06, top + 0.06], color="black", lw=1.5)
        ax.text(lo + cd / 2, top + 0.1, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize="small")
    # cliques: thick bars just under the axis
    for n, group in enumerate(cliques):
        y = -0.12 - 0.16 * n
        ax.plot([ranks[group[0]] - 0.03, ranks[group[-1]] + 0.03], [y, y], color="black", lw=3.5,
                solid_capstyle="round")
    base = -0.2 - 0.16 * len(cliques)
    for n, i in enumerate(left):
        y = base - 0.32 * (n + 1)
        ax.plot([ranks[i], ranks[i], lo - 0.1], [0, y, y], color="#444444", lw=0.8)
        ax.text(lo - 0.15, y, f"{names[i]} ({ranks[i]:.2f})", ha="right", va="center", fontsize="small")
    for n, i in enumerate(reversed(right)):
        y = base - 0.32 * (n + 1)
        ax.plot([ranks[i], ranks[i], hi + 0.1], [0, y, y], color="#444444", lw=0.8)
        ax.text(hi + 0.15, y, f"({ranks[i]:.2f}) {names[i]}", ha="left", va="center", fontsize="small")
    if title:
        ax.set_title(title, fontsize="medium")
    return fig


def cd_data(names: Sequence[str], ranks: Sequence[float], cd: float, cliques: Sequence[Sequence[int]]) -> Any:
    """The diagram's data: one row per model (rank, the cliques it belongs to, the CD)."""
    return [{"name": names[i], "average_rank": float(ranks[i]), "critical_difference": float(cd),
             "groups": "; ".join(str(n + 1) for n, g in enumerate(cliques) if i in g)} for i in range(len(names))]


__all__ = ["cd_data", "cd_diagram"]
