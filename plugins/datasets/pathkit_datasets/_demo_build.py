"""What the synthetic demos share: a folder built once (its marker written last), slides written in parallel."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def already_built(marker: Path, facts: Mapping[str, Any]) -> bool:
    """Whether the demo whose marker file records `facts` is complete (the marker is written last)."""
    if not marker.exists():
        return False
    try:
        return json.loads(marker.read_text()) == dict(facts)
    except (OSError, json.JSONDecodeError):
        return False


def write_slides(job: Callable[[dict[str, Any]], Any], jobs: Sequence[dict[str, Any]], workers: int) -> None:
    """Run the slide-writing `job` on every job dict, in `workers` processes when it pays off."""
    if workers > 1 and len(jobs) > 8:
        from concurrent.futures import ProcessPoolExecutor  # not at import: `pathkit --help` loads this module

        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(job, jobs, chunksize=4))
    else:
        for one in jobs:
            job(one)
