"""Charts of report sections, drawn alike in every task's and plugin's section: grouped bars with interval
whiskers (`bar_chart`) and annotated heatmaps (`heatmap`), on the core's figures (`pathkit_core.report.figures`:
`new_figure`, `PALETTE`, imported on first use: the CLI's start loads this package; docs/reports.md, "Adding a
task's or a plugin's own sections")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def bar_chart(labels: Sequence[str], series: Mapping[str, Sequence[float | None]], *, ylabel: str,
              title: str = "", errors: Mapping[str, Sequence[tuple[float, float] | None]] | None = None,
              ylim: tuple[float, float] | None = None, horizontal: bool = False, width: float | None = None):
    """Grouped bars (one group per label, one bar per series) with optional interval whiskers."""
    import numpy as np

    from pathkit_core.report.figures import PALETTE, new_figure

    n = max(len(labels), 1)
    k = max(len(series), 1)
    if horizontal:
        fig, axes = new_figure(width or 6.8, max(2.2, 0.32 * n * max(1, k * 0.7) + 1.1))
    else:
        fig, axes = new_figure(width or max(4.8, min(11.0, 0.55 * n * k + 2.0)), 3.8)
    ax = axes[0][0]
    pos = np.arange(n)
    step = 0.8 / k
    for i, (name, values) in enumerate(series.items()):
        vals = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
        offset = pos - 0.4 + step * (i + 0.5)
        err = None
        if errors and errors.get(name):
            lows = [np.nan if e is None else vals[j] - e[0] for j, e in enumerate(errors[name])]
            highs = [np.nan if e is None else e[1] - vals[j] for j, e in enumerate(errors[name])]
            err = np.clip(np.array([lows, highs], dtype=float), 0, None)
        # a horizontal bar's thickness is its height and its whisker on x; a vertical one's the other way
        size = {"height": step * 0.92, "xerr": err} if horizontal else {"width": step * 0.92, "yerr": err}
        (ax.barh if horizontal else ax.bar)(offset, vals, **size, color=PALETTE[i % len(PALETTE)], label=name,
                                            capsize=3)
    if horizontal:
        ax.set_yticks(pos, labels)
        ax.invert_yaxis()
    else:
        ax.set_xticks(pos, labels, rotation=30 if n > 4 or max((len(s) for s in labels), default=0) > 8 else 0,
                      ha="right" if n > 4 else "center")
    (ax.set_xlabel if horizontal else ax.set_ylabel)(ylabel)
    if ylim:
        (ax.set_xlim if horizontal else ax.set_ylim)(*ylim)
    ax.grid(axis="x" if horizontal else "y", alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if title:
        ax.set_title(title, fontsize="medium")
    return fig


def heatmap(matrix: Any, row_labels: Sequence[str], col_labels: Sequence[str], *, xlabel: str, ylabel: str,
            title: str = "", fmt: str = "{:.0f}", colorbar: str = "", vmin: float | None = None,
            vmax: float | None = None, ax: Any = None, fig: Any = None, cmap: str = "Blues"):
    """A labelled heatmap, each cell annotated with its value."""
    import numpy as np

    from pathkit_core.report.figures import new_figure

    values = np.asarray(matrix, dtype=float)
    if ax is None:
        rows, cols = values.shape
        fig, axes = new_figure(max(3.6, 0.62 * cols + 2.4), max(3.0, 0.5 * rows + 1.8))
        ax = axes[0][0]
    finite = values[np.isfinite(values)]
    lo = vmin if vmin is not None else (float(finite.min()) if finite.size else 0.0)
    hi = vmax if vmax is not None else (float(finite.max()) if finite.size else 1.0)
    if hi <= lo:
        # one value in the panel (one cell, or every cell equal): each is the best, drawn at the
        # dark end as the caption's "darker is better" says (not at the pale end, i.e. white)
        lo, hi = (lo, lo + 1.0) if cmap.endswith("_r") else (lo - 1.0, lo)
    image = ax.imshow(values, cmap=cmap, vmin=lo, vmax=hi, aspect="auto")
    ax.set_xticks(range(len(col_labels)), col_labels, rotation=35 if len(col_labels) > 3 else 0,
                  ha="right" if len(col_labels) > 3 else "center")
    ax.set_yticks(range(len(row_labels)), row_labels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize="medium")
    for (i, j), v in np.ndenumerate(values):
        text = "n/a" if not math.isfinite(v) else fmt.format(v)
        # white on a dark cell, whichever end of the colour map is dark (reversed maps included)
        red, green, blue, _ = image.cmap(image.norm(v)) if math.isfinite(v) else (1.0, 1.0, 1.0, 1.0)
        ax.text(j, i, text, ha="center", va="center", fontsize="small",
                color="white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black")
    if colorbar and fig is not None:
        fig.colorbar(image, ax=ax, label=colorbar, shrink=0.85)
    return fig


__all__ = ["bar_chart", "heatmap"]
