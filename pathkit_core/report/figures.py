"""Figures of a report: drawn with matplotlib (imported inside each function, without pyplot), embedded
as PNG and written beside the page with the data behind them as CSV (`FigureWriter`), images, and the
curves of the run report's training section (`line_chart`); the bar charts and heatmaps of the tasks' and
plugins' sections are the helper API's (`pathkit_sdk.charts`)."""

from __future__ import annotations

import base64
import io
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core._deprecation import moved_names
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


__all__ = ["DPI", "PALETTE", "FigureWriter", "data_uri", "line_chart", "new_figure", "png_bytes", "safe_name"]


# Moved in pathkit 0.2 to the helper API, the one the plugins' sections import them from (docs/plugin-authors.md,
# "Moved names"); importable from here with a DeprecationWarning until 0.3.
__getattr__ = moved_names(__name__, dict.fromkeys(("bar_chart", "heatmap"), "pathkit_sdk.charts"))
