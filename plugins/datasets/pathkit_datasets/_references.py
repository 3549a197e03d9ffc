"""Published scores a run is compared with: the paper's numbers as constants, each naming the model
the paper ran and the pathkit component that corresponds to it, shown in the run report beside the
run's own score (HepatoBench Figure 2a, PathoArgus section 5 / Table 5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PublishedScore:
    """One number of a paper: `value` of the paper's `column` for `model`, which pathkit scores as
    `metric`:`key`; `match` names the run components that correspond to the paper's model (e.g.
    {"encoder": "uni"}), so the report says which row this run is comparable with."""

    source: str
    model: str
    column: str
    metric: str
    key: str
    value: float
    match: Mapping[str, str] = field(default_factory=dict)
    note: str = ""

    def matches(self, run: Any) -> bool:
        return bool(self.match) and all(getattr(run, kind, None) == name for kind, name in self.match.items())


@dataclass(frozen=True)
class PublishedReference:
    """A paper's scores for the runs of `datasets`, shown under `title` with `note`."""

    datasets: tuple[str, ...]
    title: str
    note: str
    scores: tuple[PublishedScore, ...]

    def sections(self, run: Any) -> list[Any]:
        return reference_sections(run, self.datasets, self.scores, title=self.title, note=self.note)


def reference_sections(run: Any, datasets: Sequence[str], scores: Sequence[PublishedScore], *, title: str,
                       note: str) -> list[Any]:
    """A report section: every published score beside this run's value of the same key, the rows
    of the paper's model that corresponds to this run's components marked; a figure of the
    published values with this run's beside them."""
    if run.dataset.partition(":")[0] not in datasets or not scores:
        return []
    from pathkit_core.report import Section
    from pathkit_core.report.page import esc, table
    from pathkit_sdk.charts import bar_chart

    rows, figure_rows = [], []
    for ref in scores:
        mine = run.score(ref.key, ref.metric)
        comparable = ref.matches(run)
        rows.append([ref.source, ref.model, "yes" if comparable else "", ref.column, ref.value, mine,
                     None if mine is None else mine - ref.value, ref.note])
        figure_rows.append({"source": ref.source, "model": ref.model, "column": ref.column, "published": ref.value,
                            "this_run": mine, "comparable": comparable})
    columns = list(dict.fromkeys(r.column for r in scores))
    series: dict[str, list[float | None]] = {}
    for ref in scores:
        series.setdefault(ref.model, [None] * len(columns))[columns.index(ref.column)] = ref.value
    series[f"this run ({run.encoder} + {run.generator})"] = [
        run.score(next(r.key for r in scores if r.column == c), next(r.metric for r in scores if r.column == c))
        for c in columns]
    fig = bar_chart(columns, series, ylabel="score", ylim=(0, 1.05))
    body = f"<p class=note>{esc(note)}</p>"
    body += run.figures.figure("published_reference", fig, f"{title}: the paper's values and this run's", figure_rows)
    body += table(["source", "paper's model", "this run's counterpart", "score", "published", "this run",
                   "this run - published", "note"], rows, table_id="published-reference", sortable=True)
    return [Section(title, body, key="published-reference", order=95)]
