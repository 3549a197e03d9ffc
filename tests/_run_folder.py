"""A `pathkit run` folder and the files of it the end-to-end tests read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path


@dataclass
class RunFolder:
    path: Path

    @cached_property
    def metrics(self) -> dict:
        return json.loads((self.path / "metrics.json").read_text())

    def scores(self, task: str, baseline: str) -> tuple[dict, dict]:
        """The model's and the baseline's summary of the task's metric, from metrics.json."""
        return self.metrics["metrics"][task], self.metrics["baselines"][baseline][task]

    @cached_property
    def per_case(self):
        import polars as pl

        return pl.read_parquet(self.path / "per_case.parquet")

    @cached_property
    def predictions(self) -> list[dict]:
        return [json.loads(line) for line in (self.path / "predictions.jsonl").read_text().splitlines()]

    @cached_property
    def report(self) -> str:
        return (self.path / "report.html").read_text()
