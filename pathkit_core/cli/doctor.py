"""`pathkit doctor`: what this machine can run (Python, torch devices, OpenSlide, weights, and each
plugin's own checks through the `doctor_checks` hook, e.g. Java for METEOR)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from pathkit_core.cli.common import print_json, print_table, user_errors


def _torch() -> tuple[str, str]:
    try:
        import torch
    except ImportError as exc:
        return "missing", f"torch cannot be imported: {exc}"
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        devices.append("mps")
    return "ok", f"torch {torch.__version__}; devices: {', '.join(devices)}"


def _openslide() -> tuple[str, str]:
    try:
        import openslide
    except Exception as exc:  # noqa: BLE001 - a missing shared library raises OSError
        return "missing", f"openslide cannot be imported ({exc}); pip install openslide-python openslide-bin"
    return "ok", f"OpenSlide library {openslide.__library_version__}, openslide-python {openslide.__version__}"


def _workspace(workdir: Path) -> tuple[str, str]:
    from pathkit_core.contracts import PathkitError
    from pathkit_core.workspace import check_writable_dir, free_space

    try:
        check_writable_dir(workdir, "workspace")
    except PathkitError as exc:
        return "error", str(exc)
    return "ok", f"{workdir.resolve()} writable, {free_space(workdir)}"


def _encoder_weights() -> list[tuple[str, str, str]]:
    from pathkit_core.features.weights import find_weights
    from pathkit_core.plugins import get_plugin_manager

    registry = get_plugin_manager()
    rows = []
    for name in registry.names("encoder"):
        cls = registry.get("encoder", name)
        if cls.weights is None or not cls.weights.hf_hub_id and not cls.weights.filename:
            rows.append((f"weights {name}", "ok", "built in (no checkpoint needed)"))
            continue
        path, looked = find_weights(cls)
        found = ("ok", str(path)) if path is not None else ("missing", "looked in: " + "; ".join(looked))
        rows.append((f"weights {name}", *found))
    return rows


def _plugin_versions_and_names(registry: Any) -> list[tuple[str, str, str]]:
    """A row per plugin whose pathkit requirement the installed pathkit does not meet (still loaded),
    and a warning for names two third-party plugins share (docs/plugin-authors.md, "Names and
    collisions"), and one for each plugin that imports a moved name (still served, with a warning)."""
    from pathkit_core._deprecation import REMOVED_IN

    rows = [(f"plugin {r.name}", "incompatible", f"{r.distribution} {r.version} requires {r.requires_pathkit}; "
             f"installed pathkit is {r.pathkit_version} (loaded anyway)")
            for r in sorted(registry.records.values(), key=lambda r: r.name) if r.status == "incompatible"]
    rows += [(f"plugin {r.name} imports", "warn",
              f"names that pathkit {REMOVED_IN} removes: " + "; ".join(r.deprecations))
             for r in sorted(registry.records.values(), key=lambda r: r.name) if r.deprecations]
    shared = registry.third_party_clashes()
    if shared:
        rows.append(("plugin names", "warn", "shared by two third-party plugins, the distribution that sorts first "
                     "keeps the plain name: " + "; ".join(shared)))
    return rows


def run_checks(workdir: Path) -> list[tuple[str, str, str]]:
    from pathkit_core.plugins import get_plugin_manager

    registry = get_plugin_manager()
    broken = "; ".join(f"{r.name}: {r.error}" for r in registry.records.values() if r.status == "error")
    loaded = f"{len(registry.records)} loaded" + (f"; broken: {broken}" if broken else "")
    return [("python", "ok", sys.version.split()[0]), ("torch", *_torch()), ("openslide", *_openslide()),
            ("workspace", *_workspace(workdir)), ("plugins", "error" if broken else "ok", loaded),
            *_plugin_versions_and_names(registry), *_encoder_weights(), *registry.doctor_rows()]


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    @user_errors
    def doctor_cmd(workdir: Path = typer.Option(Path("pathkit-work"), "--workdir", help="Workspace to check."),
                   as_json: bool = typer.Option(False, "--json")) -> None:
        """Check the environment: Python, torch devices, OpenSlide, encoder weights, workspace, plugin checks."""
        rows = run_checks(workdir)
        if as_json:
            out: dict[str, Any] = {name: {"status": status, "detail": detail} for name, status, detail in rows}
            print_json(out)
            return
        print_table("pathkit doctor", ["check", "status", "detail"], rows)
