"""The `pathkit` command line: a typer app assembled from one module per command group.

Two command lines skip typer: `pathkit --version`, and a plugin command that also runs without
typer (`plain_commands`, answered by the built-in plugins: `pathkit score`), which reads
its plain options itself and leaves anything else (help, unusual spellings) to typer."""

from __future__ import annotations

import contextlib
import importlib
import sys
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError

if TYPE_CHECKING:
    import typer

# Core command modules; each exposes `register(app)`. Plugins add theirs via `register_commands`.
COMMAND_MODULES = ("listing", "doctor", "run", "report", "tile", "extract", "status")
# Which module registers each core command (tests/core/test_cli.py checks it against the modules):
# a process running one core command imports and builds that module only.
CORE_COMMANDS = {"list": "listing", "info": "listing", "doctor": "doctor", "run": "run", "report": "report",
                 "tile": "tile", "extract": "extract", "qc": "extract", "status": "status"}


def _version_text() -> str:
    import pathkit_core

    return f"pathkit {pathkit_core.__version__}"


def _version_callback(value: bool) -> None:
    if value:
        import typer

        typer.echo(_version_text())
        raise typer.Exit()


def build_app(*, with_plugins: bool = True, command: str | None = None) -> typer.Typer:
    """The whole command line; with `command` a core command's name, only the module that
    registers it (and no plugin commands): what a process running that command needs."""
    import typer

    app = typer.Typer(name="pathkit", help="Benchmark computational-pathology models under one reproducible protocol.",
                      no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

    @app.callback()
    def _root(version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                           help="Show the version.")) -> None:
        """pathkit: tile, extract, train, decode and score, resumably."""

    only = CORE_COMMANDS.get(command or "")
    if only:
        importlib.import_module(f"pathkit_core.cli.{only}").register(app)
        return app
    if with_plugins and command and _builtin_command(app, command):
        return app  # a command of the pathkit distribution's own plugins (`pathkit score`): nothing else loaded
    for name in COMMAND_MODULES:
        importlib.import_module(f"pathkit_core.cli.{name}").register(app)
    if with_plugins:
        from pathkit_core.plugins import get_plugin_manager

        get_plugin_manager().call_register_commands(app)
    return app


def _builtin_command(app: typer.Typer, command: str) -> bool:
    """Add the commands of the built-in plugins (the `pathkit` distribution's own entry points) to
    `app` when one of them is `command`; else leave `app` as it was and return False."""
    import typer

    from pathkit_core.plugins import build_registry

    trial = typer.Typer()
    build_registry(autoload=False).call_register_commands(trial)
    if command not in {c.name for c in trial.registered_commands} | {g.name for g in trial.registered_groups}:
        return False
    app.registered_commands.extend(trial.registered_commands)
    app.registered_groups.extend(trial.registered_groups)
    return True


def _requested_command(argv: list[str]) -> str | None:
    """The command a command line runs: its first word that is no option (the root's options
    take no values)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


# Third-party warnings pathkit knows to be harmless, kept from the user (message regex, category).
# PyTorch's "NumPy array is not writable": torch.from_numpy / as_tensor over a read-only array
# (pixels decoded into an immutable buffer, a column read from Arrow) shares memory it may not
# write; pathkit never writes into an input tensor (every transform makes a new one).
HARMLESS_WARNINGS = ((r"The given NumPy array is not writable", UserWarning),)


def quiet_harmless_warnings() -> None:
    import warnings

    for message, category in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def one_line_warnings() -> None:
    """User warnings the command line shows are one line each (`warning: <message>`), not the
    file, line and source text Python prints: they are addressed to the user. Other categories
    (a DeprecationWarning naming a plugin's own line) keep Python's form, for its author."""
    import warnings

    python_form = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        if not issubclass(category, UserWarning):
            python_form(message, category, filename, lineno, file, line)
            return
        text = " ".join(str(message).split())
        with contextlib.suppress(OSError, ValueError):
            (file or sys.stderr).write(f"warning: {text}\n")

    warnings.showwarning = show


def _without_typer(args: list[str]) -> int | None:
    """The exit status of a command line run without typer, or None when typer is to run it."""
    if args == ["--version"]:
        sys.stdout.write(_version_text() + "\n")
        return 0
    if not args or args[0].startswith("-") or args[0] in CORE_COMMANDS:
        return None
    from pathkit_core.plugins import plain_command

    run = plain_command(args[0])
    return None if run is None else run(args[1:])


def main(argv: list[str] | None = None) -> None:
    quiet_harmless_warnings()
    one_line_warnings()
    args = sys.argv[1:] if argv is None else list(argv)
    status = _without_typer(args)
    if status is not None:
        sys.stdout.flush()
        if status:
            sys.exit(status)
        return
    app = build_app(command=_requested_command(args))
    try:
        app(args=argv, prog_name="pathkit", standalone_mode=True)
    except PathkitError as exc:  # raised outside a command's own handling
        from pathkit_core.cli.common import report_user_error

        sys.exit(report_user_error(exc))
