"""Progress bars and time estimates for the stages that take long: prediction, scoring, training."""

from __future__ import annotations

from collections.abc import Callable
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
            from rich import progress as rp
            from rich.text import Text

            from pathkit_core.console import err_console

            unit = self.unit

            class Rate(rp.ProgressColumn):
                def render(self, task: Any) -> Text:
                    speed = task.finished_speed or task.speed
                    return Text(f"{speed:,.0f} {unit}/s" if speed else f"- {unit}/s")

            columns = [rp.TextColumn("{task.description}"), rp.BarColumn(), rp.MofNCompleteColumn(),
                       Rate() if self.rate else rp.TextColumn(self.unit), rp.TextColumn("{task.fields[status]}"),
                       rp.TimeElapsedColumn(), rp.TimeRemainingColumn()]
            self._progress = rp.Progress(*columns, console=err_console)
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


class TrainingEstimate:
    """Time left in a training loop, from the periods (epochs, or validation periods by steps)
    measured so far.

    The first `warmup` periods a process runs are not used when later ones exist: they pay for
    lazy initialisation, allocator growth and cold caches, so a first-period estimate runs short
    or long by far more than the later periods vary. Training and validation are timed apart,
    because validation may run only at some periods (GOLDMARK's 2, 5, 10, ... epochs) and can
    cost more than the training pass (decoding reports). `validates_at(period)` says which ones.

    With early stopping, the loop can end at any validation after the patience runs out, so the
    total is not knowable in advance: the estimate then gives the longest it can take and the
    earliest period at which it could stop.
    """

    def __init__(self, n_periods: int, validates_at: Callable[[int], bool], patience: int | None, *,
                 warmup: int = 1, unit: str = "epoch") -> None:
        self.n_periods = n_periods
        self.validates_at = validates_at
        self.patience = patience
        self.warmup = warmup
        self.unit = unit
        self._train: list[float] = []
        self._val: list[float] = []
        self._val_warm: list[float] = []  # validations inside the warm-up periods

    def record(self, train_seconds: float, val_seconds: float | None) -> None:
        """One period done: its training seconds, and its validation seconds (None: not validated)."""
        if val_seconds is not None:
            (self._val if len(self._train) >= self.warmup else self._val_warm).append(float(val_seconds))
        self._train.append(float(train_seconds))

    @property
    def measured(self) -> int:
        """Periods measured in this process."""
        return len(self._train)

    @property
    def ready(self) -> bool:
        """Whether a period after the warm-up has been measured (until then there is no estimate)."""
        return len(self._train) > self.warmup

    @staticmethod
    def _mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    def _paces(self) -> tuple[float, float]:
        """Seconds per training period and per validation, after the warm-up when measured."""
        train = self._train[self.warmup:] or self._train
        return self._mean(train), self._mean(self._val or self._val_warm)

    def seconds_for(self, first: int, last: int) -> float:
        """Estimated seconds for periods `first`..`last` (1-based, inclusive)."""
        train, val = self._paces()
        n_val = sum(1 for p in range(first, last + 1) if self.validates_at(p))
        return max(0, last - first + 1) * train + n_val * val

    def earliest_stop(self, period: int, bad_validations: int) -> int | None:
        """The first period at which early stopping could end training, if no validation after
        `period` improves; None when it cannot end before the last period."""
        if self.patience is None:
            return None
        needed = self.patience - bad_validations
        p = period
        while needed > 0 and p < self.n_periods:
            p += 1
            needed -= self.validates_at(p)
        return p if needed <= 0 and p < self.n_periods else None

    def _outlook(self, period: int, bad_validations: int) -> tuple[str, int | None, str] | None:
        """(time to the last period, earliest stop, time to it) after `period`; None during the
        warm-up or after the last period."""
        if not self.ready or period >= self.n_periods:
            return None
        stop = self.earliest_stop(period, bad_validations)
        soonest = "" if stop is None else duration(self.seconds_for(period + 1, stop))
        return duration(self.seconds_for(period + 1, self.n_periods)), stop, soonest

    def left(self, period: int, bad_validations: int) -> str:
        """A short "time left" for the progress bar ("" during the warm-up)."""
        outlook = self._outlook(period, bad_validations)
        if outlook is None:
            return ""
        full, stop, soonest = outlook
        return f"~{full} left" if stop is None else f"{soonest}-{full} left (early stopping)"

    def line(self, period: int, bad_validations: int) -> str:
        """The line printed once the warm-up is over: the measured pace and the time left."""
        outlook = self._outlook(period, bad_validations)
        if outlook is None:
            return ""
        (full, stop, soonest), (train, val) = outlook, self._paces()
        validated = self._val or self._val_warm
        pace = f"{duration(train)} per {self.unit}" + (f" + {duration(val)} per validation" if validated else "")
        left = f"{self.n_periods - period} {self.unit}(s) left"
        head = f"{self.unit} {period}/{self.n_periods}: {pace} (measured after {self.warmup} warm-up {self.unit}(s))"
        if stop is None:
            why = (f" (no early stopping in this protocol: all {self.n_periods} {self.unit}s run)"
                   if self.patience is None else "")
            return f"{head}; about {full} for the {left}{why}"
        return (f"{head}; at most {full} for the {left}. Early stopping (patience {self.patience}) may end it "
                f"from {self.unit} {stop} on (in {soonest}), so the total cannot be known in advance")


def early_stop_line(epoch: int, patience: int, best_epoch: int, unit: str = "epoch") -> str:
    """The line printed when early stopping ends training."""
    return (f"early stopping after {unit} {epoch}: no better validation score in {patience} validation(s) "
            f"(patience {patience}); the best {unit} is {best_epoch}")
