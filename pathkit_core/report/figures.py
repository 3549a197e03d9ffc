"""Figures of a report: drawn with matplotlib (imported inside each function, without pyplot), embedded
as PNG and written beside the page with the data behind them as CSV (`FigureWriter`), and the plots every
task shares: curves, bars with intervals, heatmaps, images."""

from __future__ import annotations

import base64
import io
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core.report.page import esc
from pathkit_core.workspace import atomic_write_bytes, atomic_write_with

# Colours of the series in every figure (colour-blind safe, Okabe-Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
DPI = 110


def new_figure(width: float = 6.4, height: float = 4.0, ncols: int = 1, nrows: int = 1, **kwargs: Any):
    """(figure, axes) without pyplot: a figure owned by no GUI, freed when dropped."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def png_bytes(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def data_uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "figure"


class FigureWriter:
    """Saves a report's figures and their data under one folder and gives their HTML.

    `relative_to` is the folder of the HTML page (links from the page to the files are relative,
    so the page and its folder can be moved together)."""

    def __init__(self, folder: str | Path, relative_to: str | Path | None = None) -> None:
        self.folder = Path(folder)
        self.relative_to = Path(relative_to) if relative_to is not None else self.folder.parent
        self.written: list[Path] = []

    def href(self, path: Path) -> str:
        return Path(os.path.relpath(path, self.relative_to)).as_posix()

    def write_data(self, name: str, data: Any) -> Path | None:
        """The data as CSV: a polars DataFrame, a list of row dicts or a dict of columns."""
        import polars as pl

        if data is None:
            return None
        frame = data if isinstance(data, pl.DataFrame) else pl.DataFrame(data)
        frame = frame.select([c for c, t in frame.schema.items() if not isinstance(t, pl.List | pl.Struct)] +
                             [pl.col(c).cast(pl.List(pl.Utf8)).list.join("; ") for c, t in frame.schema.items()
                              if isinstance(t, pl.List)])
        path = self.folder / f"{safe_name(name)}.csv"
        atomic_write_with(path, frame.write_csv)
        self.written.append(path)
        return path

    def figure(self, name: str, fig: Any, caption: str, data: Any = None, *, alt: str = "") -> str:
        """Save `fig` (PNG) and `data` (CSV) as `<name>.*`; the `<figure>` HTML that embeds it."""
        png = png_bytes(fig)
        path = self.folder / f"{safe_name(name)}.png"
        atomic_write_bytes(path, png)
        self.written.append(path)
        csv = self.write_data(name, data)
        width, height = (int(round(v * DPI)) for v in fig.get_size_inches())
        files = [f'<a href="{esc(self.href(path))}">PNG</a>']
        if csv is not None:
            files.append(f'<a href="{esc(self.href(csv))}">data (CSV)</a>')
        return (f'<figure class="plot" data-name="{esc(safe_name(name))}"><img src="{data_uri(png)}" '
                f'width="{width}" height="{height}" alt="{esc(alt or caption)}">'
                f"<figcaption>{esc(caption)} ({' · '.join(files)})</figcaption></figure>")

    def image(self, name: str, image: Any, caption: str, *, max_side: int = 480, min_side: int = 240) -> str:
        """An existing picture (a heatmap PNG, a patch) embedded, shrunk to `max_side` pixels (a
        small one, such as a heatmap on a blank canvas, enlarged pixel by pixel to `min_side`)."""
        from PIL import Image

        img = image if isinstance(image, Image.Image) else Image.open(image)
        img = img.convert("RGB")
        img.thumbnail((max_side, max_side))
        if max(img.size) < min_side:
            factor = math.ceil(min_side / max(img.size))
            img = img.resize((img.width * factor, img.height * factor), Image.Resampling.NEAREST)
        buf = io.BytesIO()
        img.save(buf, format="PNG", optimize=True)
        link = ""
        if not isinstance(image, Image.Image):
            link = f' (<a href="{esc(self.href(Path(image)))}">full size</a>)'
        return (f'<figure class="picture" data-name="{esc(safe_name(name))}"><img src="{data_uri(buf.getvalue())}" '
                f'width="{img.width}" height="{img.height}" alt="{esc(caption)}">'
                f"<figcaption>{esc(caption)}{link}</figcaption></figure>")


# --------------------------------------------------------------------------- shared plots


def integer_bins(values: Sequence[float], most: int = 30) -> Any:
    """Histogram bins: one per integer for a few whole numbers, else `most` equal bins."""
    import numpy as np

    vals = np.asarray([v for v in values if v is not None and v == v], dtype=float)
    if vals.size and np.all(vals == np.round(vals)) and vals.max() - vals.min() < most:
        return np.arange(vals.min(), vals.max() + 2) - 0.5
    return most if vals.size > 60 else max(5, min(most, int(vals.size // 2) or 5))


def bar_chart(labels: Sequence[str], series: Mapping[str, Sequence[float | None]], *, ylabel: str,
              title: str = "", errors: Mapping[str, Sequence[tuple[float, float] | None]] | None = None,
              ylim: tuple[float, float] | None = None, horizontal: bool = False, width: float | None = None):
    """Grouped bars (one group per label, one bar per series) with optional interval whiskers."""
    import numpy as np

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


def line_chart(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], *, xlabel: str, ylabel: str,
               title: str = "", diagonal: bool = False, square: bool = False, ax: Any = None):
    """Lines (x, y) per named series; `diagonal` draws the chance / identity line."""
    fig = None
    if ax is None:
        fig, axes = new_figure(4.6 if square else 6.4, 4.2 if square else 3.8)
        ax = axes[0][0]
    for i, (name, (xs, ys)) in enumerate(series.items()):
        ax.plot(list(xs), list(ys), color=PALETTE[i % len(PALETTE)], label=name, linewidth=1.8)
    if diagonal:
        ax.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1, label="chance")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if square:
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    if title:
        ax.set_title(title, fontsize="medium")
    return fig


__all__ = ["DPI", "PALETTE", "FigureWriter", "bar_chart", "data_uri", "heatmap", "line_chart", "new_figure",
           "png_bytes", "safe_name"]
