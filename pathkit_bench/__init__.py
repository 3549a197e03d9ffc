"""Comparing cells: benchmark suites (`pathkit bench`), paired comparisons of two runs (`pathkit
compare`), and the statistics they rest on (docs/comparisons.md). Shipped in the `pathkit`
distribution outside the core and registered through its `pathkit` entry point like any plugin:
it builds on `pathkit run` and adds commands, nothing the run needs.

- `stats`: paired bootstrap, sign-flip, McNemar, DeLong, Holm / Benjamini-Hochberg, ranks,
  Friedman and Nemenyi (arrays in, numbers out);
- `compare`: paired comparisons of two run folders scored on the same test cases;
- `suite`: the suite TOML, its cells, the tidy leaderboard and the across-task analysis;
- `report`: the suite report and its critical-difference diagram; `cli`: the two commands.
"""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_commands(app):
    from pathkit_bench.cli import bench, compare

    bench.register(app)
    compare.register(app)
