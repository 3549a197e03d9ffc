"""`pathkit report PATH`: (re)build the HTML report of a run folder or of a leaderboard from what is on disk."""

from __future__ import annotations

from pathlib import Path

import typer

from pathkit_core.cli.common import console, user_errors
from pathkit_core.contracts import PathkitError


def build_reports(path: Path) -> list[Path]:
    """The reports `path` calls for: a run folder's, a leaderboard folder's (one dataset's or the
    folder of all), or, for a workspace, every run's and its leaderboards'."""
    from pathkit_core.report.html import write_run_report
    from pathkit_core.report.matrix import is_leaderboard, write_matrix_report
    from pathkit_core.report.run_folder import is_run_folder

    path = Path(path)
    if not path.exists():
        raise PathkitError(f"{path} does not exist")
    if is_run_folder(path):
        return [write_run_report(path)]
    if is_leaderboard(path):
        return [write_matrix_report(path)]
    if (path / "runs").is_dir():
        written = [write_run_report(m.parent) for m in sorted((path / "runs").rglob("metrics.json"))]
        if is_leaderboard(path / "leaderboards"):
            written.append(write_matrix_report(path / "leaderboards"))
        if written:
            return written
    raise PathkitError(f"{path} is neither a run folder (with metrics.json), a leaderboard folder (with "
                       "leaderboard.parquet) nor a workspace with finished runs")


def register(app: typer.Typer) -> None:
    @app.command("report")
    @user_errors
    def report_cmd(
        path: Path = typer.Argument(..., help="A run folder, a leaderboard folder, or a workspace (--workdir)."),
    ) -> None:
        """(Re)build report.html of a run folder or a leaderboard (matrix) from what is on disk."""
        for written in build_reports(path):
            console.print(f"report written to {written}", highlight=False)
