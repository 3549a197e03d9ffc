"""Benchmark suites (`pathkit bench --config suite.toml`): many datasets x encoders x generators x
seeds run as cells of `pathkit run`, one tidy leaderboard, paired comparisons within each task and
ranks across tasks (docs/comparisons.md).

- `config`: the suite TOML and its cells.
- `runner`: running the cells (resumable, shardable) and the tidy leaderboard.
- `analysis`: per-task pairwise tests and the across-task ranks, Friedman, Nemenyi, win/tie/loss.
"""

from pathkit_bench.suite.config import Cell, SuiteConfig, SuiteTask, load_suite

__all__ = ["Cell", "SuiteConfig", "SuiteTask", "load_suite"]
