"""Report sections of the `ordinal` task: the grade confusion matrix (the classification task's
section over the ordinal metric's matrix) and the distribution of signed grade errors."""

from __future__ import annotations

from typing import Any

from pathkit_core.report.figures import new_figure
from pathkit_core.report.page import Section, esc
from pathkit_tasks.classification.sections import confusion_section, details_section


def grade_error_section(run: Any) -> Section | None:
    """How many test cases were graded k steps too low or too high, for each k."""
    found = run.details("confusion_matrix")
    if not found or "ordinal" not in (run.metrics.get("details") or {}):
        return None
    import numpy as np

    details = run.metrics["details"]["ordinal"]
    counts = np.asarray(details["confusion_matrix"], dtype=float)
    k = counts.shape[0]
    steps = np.arange(-(k - 1), k)
    per_step = [float(np.trace(counts, offset=int(s))) for s in steps]  # offset s: predicted = reference + s
    fig, axes = new_figure(5.6, 3.4)
    ax = axes[0][0]
    ax.bar(steps, per_step, color=["#0072B2" if s == 0 else "#D55E00" for s in steps])
    ax.set_xlabel("predicted grade - reference grade (steps)")
    ax.set_ylabel("test cases")
    ax.set_xticks(steps)
    data = [{"steps": int(s), "cases": int(n)} for s, n in zip(steps, per_step, strict=True)]
    body = run.figures.figure("grade_errors", fig, "Signed grade error of the test cases (0: the right grade)", data)
    total = sum(per_step)
    off_by_more = sum(n for s, n in zip(steps, per_step, strict=True) if abs(s) > 1)
    body += (f'<p class="note">{esc(int(off_by_more))} of {esc(int(total))} test cases are more than one grade '
             "off; quadratic weighted kappa weighs an error by the square of its steps.</p>")
    return Section("Grade errors", body, key="ordinal-errors", order=125)


def ordinal_sections(run: Any) -> list[Section]:
    found = (details_section(run, "confusion_matrix", confusion_section), grade_error_section(run))
    return [s for s in found if s is not None]
