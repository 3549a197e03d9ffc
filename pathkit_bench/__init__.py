"""Comparing cells: benchmark suites (`pathkit bench`), paired comparisons of two runs (`pathkit
compare`), and the statistics they rest on (docs/comparisons.md). Shipped in the `pathkit`
distribution outside the core and registered through its `pathkit` entry point like any plugin:
it builds on `pathkit run` and adds commands, nothing the run needs.

- `stats`: paired bootstrap, sign-flip, McNemar, DeLong, Holm / Benjamini-Hochberg, ranks,
  Friedman and Nemenyi (arrays in, numbers out);
- `compare`: paired comparisons of two run folders scored on the same test cases;
- `suite`: the suite TOML, its cells, the tidy leaderboard and the across-task analysis;
- `leaderboard`: the leaderboard of one dataset's cells (`pathkit run` with several encoders or
  generators) and its paper-style views; `report`: its matrix report, the suite report and the
  critical-difference diagram; `cli`: the two commands; `hookspecs`: the report hooks it adds.
"""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def register_commands(app):
    from pathkit_bench.cli import bench, compare

    bench.register(app)
    compare.register(app)


@hookimpl
def add_hookspecs(add):
    from pathkit_bench import hookspecs

    add(hookspecs)


@hookimpl
def cells_finished(results, workdir, dataset, console):
    if len(results) > 1:
        from pathkit_bench.report.matrix import write_leaderboard

        write_leaderboard(results, workdir, dataset, console=console)


@hookimpl
def folder_reports(path):
    from pathkit_bench.report.matrix import is_leaderboard, write_matrix_report
    from pathkit_bench.suite.runner import is_suite_folder

    if is_suite_folder(path):  # a suite's report is rebuilt as a suite report, never as a matrix one
        return [_suite_report(path)]
    if path.is_dir() and any(is_suite_folder(p) for p in path.iterdir() if p.is_dir()):
        from pathkit_core.contracts import PathkitError

        raise PathkitError(f"{path} holds suite folders; give one of them (`pathkit report {path}/<suite>`)")
    if is_leaderboard(path):
        return [write_matrix_report(path)]
    if (path / "runs").is_dir() and is_leaderboard(path / "leaderboards"):
        return [write_matrix_report(path / "leaderboards")]
    return None


def _suite_report(folder):
    from pathkit_bench.report.suite import write_suite_report
    from pathkit_bench.suite.analysis import SuiteAnalysis
    from pathkit_bench.suite.runner import read_suite_options

    return write_suite_report(SuiteAnalysis(folder, **read_suite_options(folder)))
