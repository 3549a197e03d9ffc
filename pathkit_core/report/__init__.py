"""HTML reports and the pieces a task or plugin builds its report sections from: `RunFolder` (a run
folder's artifacts), `Section` (one part of a page) and `FigureWriter` (`run.figures`); the tables and
plots are in `pathkit_core.report.page` and `pathkit_core.report.figures`, the sections' charts in
`pathkit_sdk.charts` (docs/reports.md, "Adding a task's or a plugin's own sections")."""

from pathkit_core.report.figures import FigureWriter
from pathkit_core.report.page import Section
from pathkit_core.report.run_folder import RunFolder

__all__ = ["FigureWriter", "RunFolder", "Section"]
