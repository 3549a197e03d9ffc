"""`slides-survival`: your own slides and a table of slide, time, event: survival without a plugin;
`demo-survival`: the same reader over synthetic slides whose hazard is set by their tumour share.

Layout (docs/survival.md): `<root>/survival.csv` with columns slide_path, time (follow-up, in the
unit of option `time_unit`), event (1 = event observed, 0 = censored), optional patient_id, split,
mpp, case_id; other columns are kept in the case's meta (and so reach the model: leave outcome
columns out). A drawn split is stratified by event, so that every part holds events.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._cards import Carded
from pathkit_datasets._variants import slide_cohort, synthetic_demo
from pathkit_sdk.cohort import (
    COHORT_OPTIONS,
    CohortDataset,
    check_duplicates,
    choose_split,
    cohort_rows,
    find_column,
)
from pathkit_tasks import TASK_SURVIVAL

TABLE_NAMES = ("survival.csv", "survival.tsv", "survival.parquet", "survival.jsonl", "survival.json")


def row_targets(table: Any, rows: list[Any], path: Path) -> None:
    """Each row's value as {"time", "event"}; a PathkitError naming the file and every bad row."""
    from pathkit_tasks.survival.target import parse_event, parse_time

    event_column = find_column(table.columns, "event")
    bad = []
    for r in rows:
        try:
            r.value = {"time": parse_time(r.value), "event": parse_event(table.rows[r.index].get(event_column))}
        except ValueError as exc:
            bad.append(f"{r.place}: {exc}")
    if bad:
        more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        raise PathkitError(f"survival table {path}: {len(bad)} row(s) without a valid time and event: "
                           f"{'; '.join(bad[:10])}{more} (time: a number >= 0; event: 1 observed, 0 censored)")


class SlidesSurvival(Carded, CohortDataset, card="slides-survival"):
    """A folder of slides with a table of slide, time, event (optionally patient, split, mpp)."""

    task: ClassVar[str] = TASK_SURVIVAL
    default_metrics: ClassVar[tuple[str, ...]] = ("survival",)
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        *COHORT_OPTIONS,
        DatasetOption("time_unit", "str", "months", "the unit of the time column (recorded with the results)"),
    )

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        path, table = self.read_cohort_table(TABLE_NAMES, "survival table")
        rows = cohort_rows(table, file_key="slide_path", value_key="time", required=("event",),
                           default_mpp=self.mpp_option(), what="survival table")
        row_targets(table, rows, path)
        check_duplicates(rows, lambda r: r.case_id, "case id", path)
        groups, excluded = self.cohort_groups(rows, table, path, value_name="time and event")
        events = {c: str(g.value["event"]) for c, g in groups.items()}
        parts, facts = choose_split(self.name, groups, self.options, root=Path(self.root), table=path, labels=events,
                                    excluded=excluded)
        self._split_facts = {**facts, "table": str(path), "time_unit": self.options["time_unit"],
                             "case": self.options["case"]}
        cases = {c: Case(case_id=c, patient_id=g.patient_id, target=dict(g.value), slides=g.files, meta=g.meta())
                 for c, g in groups.items()}
        return cases, parts, excluded


# --------------------------------------------------------------------------- synthetic demo

TUMOUR, STROMA = (150, 70, 150), (225, 150, 190)
SPLIT_COUNTS = {"train": 50, "val": 10, "test": 60}
# hazard = BASE_HAZARD * exp(LOG_HAZARD_RATIO * tumour share): a slide that is all tumour dies
# exp(5) = 148 times as fast as one without tumour; censoring is uniform on [0, CENSOR_MAX].
BASE_HAZARD, LOG_HAZARD_RATIO, CENSOR_MAX = 0.02, 5.0, 60.0


def draw_outcome(rng: random.Random, share: float) -> tuple[float, int]:
    """(time, event) of one case: an exponential event time with the hazard of its tumour share,
    observed when it precedes an independent uniform censoring time."""
    event_time = rng.expovariate(BASE_HAZARD * math.exp(LOG_HAZARD_RATIO * share))
    censor = rng.uniform(0.0, CENSOR_MAX)
    return (round(event_time, 3), 1) if event_time <= censor else (round(censor, 3), 0)


def _demo_row(rng: random.Random, split: str, i: int, slide: Any) -> str:
    from pathkit_sdk import Blob

    share = rng.uniform(0.05, 0.95)
    width = 0.42  # two ellipses side by side, their widths in the ratio share : 1 - share
    path = slide(f"SYN-SURV-{split}-{i:02d}", [
        Blob(0.5 - width * (1 - share) / 2, 0.5, width * share / 2 + 1e-3, 0.3, colour=TUMOUR, nuclei_density=2.0,
             nucleus_radius_um=4.5),
        Blob(0.5 + width * share / 2, 0.5, width * (1 - share) / 2 + 1e-3, 0.3, colour=STROMA, nuclei_density=0.4,
             nucleus_radius_um=2.5)])
    time, event = draw_outcome(rng, share)
    return f"{path},{time},{event},{split}"


SurvivalDemo = synthetic_demo("SurvivalDemo", SlidesSurvival, "demo-survival", "coxnet",
                              slide_cohort("survival.csv", "slide_path,time,event,split", SPLIT_COUNTS, _demo_row),
                              "synthetic slides whose hazard is set by their tumour share (NOT pathology)")


@hookimpl
def register_datasets(register):
    register(SlidesSurvival)
    register(SurvivalDemo)
