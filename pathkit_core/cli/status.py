"""`pathkit status [PATH]` of a folder of any kind pathkit writes (docs/user-guide.md, "A cluster")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, print_json, print_table, user_errors
from pathkit_core.contracts import PathkitError

_MAX_ROWS = 40


def suite_statuses(folder: Path) -> list[Any]:
    """Each cell of a suite folder (cells.csv) with its run folder's stages."""
    import polars as pl

    from pathkit_core.readers import DamagedFile
    from pathkit_core.status import RunStatus, run_status

    try:
        cells = pl.read_csv(folder / "cells.csv", infer_schema_length=0)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise DamagedFile(folder / "cells.csv", f"is not a readable cells table ({str(exc)[:120]})") from None
    out = []
    for row in cells.iter_rows(named=True):
        label = "/".join(str(row.get(k) or "") for k in ("task", "encoder", "generator")) + f"/seed{row.get('seed')}"
        run_dir = Path(row.get("run_dir") or "")
        if row.get("error") or not row.get("run_dir"):
            out.append(RunStatus(label, [], f"failed: {row.get('error') or 'no run folder'}"))
        elif not run_dir.is_dir():
            out.append(RunStatus(label, [], f"its run folder {run_dir} is gone"))
        else:
            out.append(run_status(run_dir, label))
    return out


def _store_summary(folder: Path, kind: str) -> dict[str, Any]:
    """Files and bytes of a dataset store or an image-feature store (what it holds, not its state)."""
    files = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]
    shards = [p for p in files if p.name.startswith("shard-") and p.suffix == ".safetensors"]
    return {"kind": kind, "files": len(files), "bytes": sum(p.stat().st_size for p in files),
            **({"shards": len(shards)} if kind == "image-feature store" else {})}


def read_status(path: Path, verify: bool = False) -> dict[str, Any]:
    """{"path", "kind", "stores", "runs"[, "summary"]} of a folder of any kind pathkit writes."""
    from pathkit_core.folder_kind import folder_kind
    from pathkit_core.status import collect, run_status

    if not path.is_dir():
        raise PathkitError(f"{path} is not a folder (give a workspace, a run, a suite, a tile or a feature store)")
    kind = folder_kind(path)
    if kind == "run":
        return {"path": str(path), "kind": kind, "stores": [], "runs": [run_status(path, str(path))]}
    if kind == "suite":
        return {"path": str(path), "kind": kind, "stores": [], "runs": suite_statuses(path)}
    if kind in ("dataset store", "image-feature store"):
        return {"path": str(path), "kind": kind, "stores": [], "runs": [], "summary": _store_summary(path, kind)}
    report = collect(path, verify=verify)
    return {**report, "kind": kind or "workspace"}


def _default_folder() -> Path:
    from pathkit_core.folder_kind import default_status_folder
    from pathkit_core.workspace import DEFAULT_WORKDIR

    found = default_status_folder(Path.cwd())
    if found is None:
        raise PathkitError(f"no workspace here or above ({DEFAULT_WORKDIR}/, tiles/, features/ or runs/ in no "
                           "folder up to the root): give the path of one, e.g. the --workdir of `pathkit run`")
    return found


def _print(report: dict[str, Any]) -> None:
    console.print(escape(f"{report['path']}: read as a {report['kind']}"), highlight=False)
    stores = report["stores"]
    if stores:
        print_table(f"status of {report['path']}", ["stage", "store", "done", "failed", "pending", "locked"],
                    [(s.stage, s.name, *s.counts().values()) for s in stores])
    details = [(s.stage, s.name, "", "unreadable", s.unreadable) for s in stores if s.unreadable]
    details += [(s.stage, s.name, sid, "failed", why) for s in stores for sid, why in s.failed.items()]
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
    if report.get("summary"):
        summary = report["summary"]
        print_table(None, ["what", "value"], [(k, v) for k, v in summary.items() if k != "kind"])
    elif not stores and not report["runs"]:
        console.print("nothing recorded yet", highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("status")
    @user_errors
    def status_cmd(
        path: Path | None = typer.Argument(
            None, help="A workspace, a run or suite folder, an `extract --out` folder, a tile or feature store "
                       "(default: the nearest workspace at or above this folder, e.g. ./pathkit-work)."),
        as_json: bool = typer.Option(False, "--json", help="Print everything as JSON (ids of failed, "
                                                            "pending and locked slides included)."),
        verify: bool = typer.Option(False, "--verify", help="Also open every feature file's header: an "
                                    "unreadable or failed-QC file counts as failed (slower on big stores)."),
    ) -> None:
        """Show what every stage has done: slides done / failed / pending / locked, per tile spec
        and encoder, and the finished stages of each run. Reads the status records and folder
        listings only (`--verify` also reads each feature file's header; `pathkit qc` verifies
        the feature files themselves)."""
        report = read_status(_default_folder() if path is None else path, verify=verify)
        if as_json:
            print_json({"path": report["path"], "kind": report["kind"],
                        "stores": [s.as_dict() for s in report["stores"]],
                        "runs": [vars(r) for r in report["runs"]],
                        **({"summary": report["summary"]} if report.get("summary") else {})})
            return
        _print(report)
