"""`pathkit status [PATH]`: per stage and encoder, the slides done, failed (why), pending and locked (by whom)."""

from __future__ import annotations

from pathlib import Path

import typer

from pathkit_core.cli.common import console, print_json, print_table, user_errors
from pathkit_core.contracts import PathkitError

_MAX_ROWS = 40


def register(app: typer.Typer) -> None:
    @app.command("status")
    @user_errors
    def status_cmd(
        path: Path | None = typer.Argument(
            None, help="A workspace, an `extract --out` folder, a tile or feature store (default: the "
                       "workspace `pathkit run` uses, ./pathkit-work)."),
        as_json: bool = typer.Option(False, "--json", help="Print everything as JSON (ids of failed, "
                                                            "pending and locked slides included)."),
        verify: bool = typer.Option(False, "--verify", help="Also open every feature file's header: an "
                                    "unreadable or failed-QC file counts as failed (slower on big stores)."),
    ) -> None:
        """Show what every stage has done: slides done / failed / pending / locked, per tile spec
        and encoder, and the finished stages of each run. Reads the status records and folder
        listings only (`--verify` also reads each feature file's header; `pathkit qc` verifies
        the feature files themselves)."""
        from pathkit_core.status import collect
        from pathkit_core.workspace import DEFAULT_WORKDIR

        if path is None and not DEFAULT_WORKDIR.is_dir():
            raise PathkitError(f"no workspace here ({DEFAULT_WORKDIR}/ does not exist): give the path of one, "
                               "e.g. the --workdir of `pathkit run`")
        report = collect(DEFAULT_WORKDIR if path is None else path, verify=verify)
        if as_json:
            print_json({"path": report["path"], "stores": [s.as_dict() for s in report["stores"]],
                        "runs": [vars(r) for r in report["runs"]]})
            return
        stores = report["stores"]
        if stores:
            print_table(f"status of {report['path']}", ["stage", "store", "done", "failed", "pending", "locked"],
                        [(s.stage, s.name, *s.counts().values()) for s in stores])
        details = [(s.stage, s.name, sid, "failed", why) for s in stores for sid, why in s.failed.items()]
        details += [(s.stage, s.name, sid, "locked", who) for s in stores for sid, who in s.locked.items()]
        details += [(s.stage, s.name, sid, "stale lock", f"{who} (gone; the next run breaks it)")
                    for s in stores for sid, who in s.stale_locks.items()]
        if details:
            print_table(None, ["stage", "store", "slide", "state", "reason / held by"], details[:_MAX_ROWS])
            if len(details) > _MAX_ROWS:
                console.print(f"... {len(details) - _MAX_ROWS} more (--json lists them all)")
        if report["runs"]:
            print_table("runs", ["run", "finished stages", "held by"],
                        [(r.path, ", ".join(r.stages), r.locked) for r in report["runs"]])
