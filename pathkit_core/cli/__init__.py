"""The `pathkit` command line: a typer app assembled from one module per command group."""

from __future__ import annotations

import importlib
import sys

import typer

from pathkit_core.contracts import PathkitError

# Core command modules; each exposes `register(app)`. Plugins add theirs via `register_commands`.
COMMAND_MODULES = ("listing", "doctor", "score", "run", "report", "tile", "extract", "status")


def _version_callback(value: bool) -> None:
    if value:
        import pathkit_core

        typer.echo(f"pathkit {pathkit_core.__version__}")
        raise typer.Exit()


def build_app(*, with_plugins: bool = True) -> typer.Typer:
    app = typer.Typer(
        name="pathkit",
        help="Benchmark computational-pathology models under one reproducible protocol.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", callback=_version_callback, is_eager=True, help="Show the version."
        ),
    ) -> None:
        """pathkit: tile, extract, train, decode and score, resumably."""

    for name in COMMAND_MODULES:
        importlib.import_module(f"pathkit_core.cli.{name}").register(app)
    if with_plugins:
        from pathkit_core.plugins import get_plugin_manager

        get_plugin_manager().call_register_commands(app)
    return app


# Third-party warnings pathkit knows to be harmless, kept from the user (message regex, category).
# PyTorch's "NumPy array is not writable": torch.from_numpy / as_tensor over a read-only array
# (pixels decoded into an immutable buffer, a column read from Arrow) shares memory it may not
# write; pathkit never writes into an input tensor (every transform makes a new one).
HARMLESS_WARNINGS = ((r"The given NumPy array is not writable", UserWarning),)


def quiet_harmless_warnings() -> None:
    import warnings

    for message, category in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def main(argv: list[str] | None = None) -> None:
    quiet_harmless_warnings()
    app = build_app()
    try:
        app(args=argv, prog_name="pathkit", standalone_mode=True)
    except PathkitError as exc:  # raised outside a command's own handling
        from pathkit_core.cli.common import err_console

        err_console.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
