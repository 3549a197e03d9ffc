"""The command line's public surface: every command of `pathkit` (core and the installed pathkit
distributions' plugins) with its arguments and option spellings, read from the click tree typer
builds. tests/compat/test_cli_surface.py compares it with the committed cli_surface.json.

After adding a command or flag on purpose, rewrite the snapshot (docs/api/stability.md):

    .venv/bin/python -m tests.compat.cli_surface --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SNAPSHOT = Path(__file__).with_name("cli_surface.json")
# Distributions of the pathkit project: their commands are promised; a third party's are not.
PATHKIT_DISTRIBUTIONS = ("pathkit", "pathkit-encoders", "pathkit-generators", "pathkit-datasets", "pathkit-metrics")


def _parameters(command) -> dict[str, list[str]]:
    options, arguments = [], []
    for param in command.params:
        if param.param_type_name == "argument":
            arguments.append(param.name)
        else:
            options.extend(sorted([*param.opts, *param.secondary_opts]))
    return {"arguments": arguments, "options": sorted(options)}


def _walk(command, path: str, out: dict[str, dict[str, list[str]]]) -> None:
    out[path] = _parameters(command)
    if getattr(command, "commands", None):  # a group (typer's click, which it may vendor)
        for name in sorted(command.commands):
            _walk(command.commands[name], f"{path} {name}", out)


def pathkit_app():
    """The `pathkit` app with the core commands and those of the pathkit project's plugins only."""
    from pathkit_core.cli import build_app
    from pathkit_core.plugins import get_plugin_manager

    app = build_app(with_plugins=False)
    registry = get_plugin_manager()
    for impl in registry.pm.hook.register_commands.get_hookimpls():
        record = registry.records.get(impl.plugin_name)
        if record is not None and record.distribution in PATHKIT_DISTRIBUTIONS:
            impl.function(app=app)
    return app


def surface() -> dict[str, dict[str, list[str]]]:
    """{"pathkit CMD [SUB]": {"arguments": [...], "options": [...]}} for the whole app."""
    import typer.main

    out: dict[str, dict[str, list[str]]] = {}
    _walk(typer.main.get_command(pathkit_app()), "pathkit", out)
    return out


def main(argv: list[str]) -> int:
    text = json.dumps(surface(), indent=1, sort_keys=True) + "\n"
    if argv == ["--write"]:
        SNAPSHOT.write_text(text, encoding="utf-8")
        print(f"wrote {SNAPSHOT}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
