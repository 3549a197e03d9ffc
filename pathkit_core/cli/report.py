"""`pathkit report PATH`: (re)build the HTML report of a run folder or of a leaderboard from what is on disk."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, user_errors
from pathkit_core.contracts import PathkitError


def build_reports(path: Path) -> list[Path]:
    """The reports `path` calls for: a run folder's; for a workspace every run's; and those
    plugins build for folders they write (`folder_reports`: a leaderboard's, a suite's)."""
    from pathkit_core.plugins import get_plugin_manager
    from pathkit_core.report.html import write_run_report
    from pathkit_core.report.run_folder import is_run_folder

    path = Path(path)
    if not path.exists():
        raise PathkitError(f"{path} does not exist")
    if is_run_folder(path):
        return [write_run_report(path)]
    written = []
    if (path / "runs").is_dir():
        written = [write_run_report(m.parent) for m in sorted((path / "runs").rglob("metrics.json"))]
    for found in get_plugin_manager().pm.hook.folder_reports(path=path):
        written.extend(found or [])
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
            console.print(f"report written to {escape(str(written))}", highlight=False)
