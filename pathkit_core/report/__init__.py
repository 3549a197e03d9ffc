"""HTML reports and their figures: the run report and the pieces a task or plugin builds its own
report sections from.

- `RunFolder`: a run folder's artifacts, what `Task.report_sections(run)` and the
  `report_sections` hook receive;
- `Section`: one part of a page (title, HTML body, order);
- `run.figures` (a `FigureWriter`): saves a matplotlib figure as PNG beside its data (CSV) and
  returns the HTML that embeds it; `pathkit_core.report.figures` has the shared plots;
- `pathkit_core.report.page`: tables (sortable, filterable), folded parts, escaping.
"""

from pathkit_core.report.figures import FigureWriter
from pathkit_core.report.page import Section
from pathkit_core.report.run_folder import RunFolder

__all__ = ["FigureWriter", "RunFolder", "Section"]
