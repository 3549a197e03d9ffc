"""The survival target `{"time", "event"}` and the risk prediction `{"risk"}`: their checks, shared
by the task, the cohort reader and the metric (docs/survival.md)."""

from __future__ import annotations

import math
from typing import Any

MISSING = {"", "na", "nan", "none", "null", "n/a"}
EVENT_VALUES = {"0": 0, "1": 1, "0.0": 0, "1.0": 1, "true": 1, "false": 0}


def parse_time(value: Any) -> float:
    """A follow-up time: a finite number >= 0; ValueError saying why not."""
    if isinstance(value, bool) or value is None or (isinstance(value, str) and value.strip().lower() in MISSING):
        raise ValueError(f"time {value!r} is missing")
    try:
        time = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"time {value!r} is not a number") from None
    if not math.isfinite(time):
        raise ValueError(f"time {value!r} is missing or not finite")
    if time < 0:
        raise ValueError(f"time {value!r} is negative")
    return time


def parse_event(value: Any) -> int:
    """An event indicator: 1 (the event was observed) or 0 (censored); ValueError otherwise."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in EVENT_VALUES:
        return EVENT_VALUES[value.strip().lower()]
    raise ValueError(f"event {value!r} is not 0 (censored) or 1 (event observed)")


def parse_target(target: Any) -> tuple[float, int]:
    """(time, event) of a target dict; ValueError naming what is wrong."""
    if not isinstance(target, dict) or "time" not in target or "event" not in target:
        raise ValueError(f'target {target!r} is not {{"time": number >= 0, "event": 0 or 1}}')
    return parse_time(target["time"]), parse_event(target["event"])


def parse_risk(prediction: Any) -> float:
    """The risk score of a prediction (a number, or {"risk": number}); higher = earlier event."""
    value = prediction.get("risk") if isinstance(prediction, dict) else prediction
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"risk {value!r} is not a finite number")
    return float(value)
