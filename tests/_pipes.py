"""Calls that must not block on a named pipe."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def without_blocking(call: Callable[[], Any], fifo: Path, seconds: float = 60) -> Any:
    """`call()` in a thread, returning its result or the exception it raised; a call still blocked
    reading the named pipe `fifo` after `seconds` fails the test (the pipe is then opened for
    writing, so that the blocked reader and the test process can end). Not for readers that hold
    the interpreter lock while they open (HDF5): run those in a subprocess with a timeout."""
    done: list[Any] = []

    def run() -> None:
        try:
            done.append(call())
        except Exception as exc:  # noqa: BLE001 - handed to the test
            done.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        with open(fifo, "wb"):
            pass
        pytest.fail(f"blocked reading the named pipe {fifo}")
    return done[0]
