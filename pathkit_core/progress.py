"""Progress bars and time estimates for the stages that take long: prediction, scoring, training."""

from __future__ import annotations

from typing import Any


class ProgressBar:
    """A rich progress bar on stderr counting `unit`s, with the time left (or nothing when disabled).

    Used as a context manager: `with ProgressBar("predict", 120, "cases") as bar: bar.advance(8)`;
    `describe(text)` changes the label (e.g. which metric is being computed). `rate=True` adds a
    units-per-second column (extraction's tiles/s); `status(text)` shows a line of counts beside
    the bar (tiling's ok / skipped / failed).
    """

    def __init__(self, label: str, total: int, unit: str, *, enabled: bool = True, rate: bool = False) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.rate = rate
        self.enabled = enabled and total > 0
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                ProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.text import Text

            from pathkit_core.cli.common import err_console

            unit = self.unit

            class Rate(ProgressColumn):
                def render(self, task: Any) -> Text:
                    speed = task.finished_speed or task.speed
                    return Text(f"{speed:,.0f} {unit}/s" if speed else f"- {unit}/s")

            columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       Rate() if self.rate else TextColumn(self.unit), TextColumn("{task.fields[status]}"),
                       TimeElapsedColumn(), TimeRemainingColumn()]
            self._progress = Progress(*columns, console=err_console)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total, status="")
        return self

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def describe(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=text)

    def status(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, status=text)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)


def duration(seconds: float) -> str:
    """A rounded human duration: "40 s", "3.5 min", "2.1 h"."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def training_estimate(first_epoch_seconds: float, epochs_left: int, patience: int | None) -> str:
    """The line printed after the first epoch: how long the remaining epochs take at most."""
    if epochs_left <= 0:
        return ""
    stop = f" (early stopping after {patience} epochs without improvement may end it sooner)" if patience else ""
    return (f"epoch 1 took {duration(first_epoch_seconds)}: up to {epochs_left} more epoch(s), about "
            f"{duration(first_epoch_seconds * epochs_left)}{stop}")
