"""One table of a plugin command's options, read two ways: as the typer command's parameters
(help, usage errors, every spelling click accepts) and by a small plain parser that a
start-up-bound command (`pathkit score`, named by the `plain_commands` hook) uses to run without
importing typer, click or pydantic. The parser takes only the plain spellings and answers
None for anything else, so typer decides every command line it is unsure of: the two cannot
disagree on what a command line means (docs/plugin-authors.md)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REQUIRED = ...  # the default of an option that must be given (typer's spelling)


@dataclass(frozen=True)
class CliOption:
    """A command option: the command function's parameter `name`, its `flags` ("--metric",
    "-m"), its `kind` (str, Path or bool; a bool is a flag), its `default` (REQUIRED: must be
    given), `multiple` (repeatable: a list) and its `help` text."""

    name: str
    flags: tuple[str, ...]
    kind: type
    default: Any
    help: str
    multiple: bool = False

    @property
    def annotation(self) -> Any:
        if self.multiple:
            return list[self.kind]
        return self.kind | None if self.default is None else self.kind


def typer_command(table: Sequence[CliOption], run: Callable[..., Any], doc: str) -> Callable[..., Any]:
    """A function typer reads as a command with the options of `table` (its signature is built
    from the table) that calls `run` with them by name."""
    import typer

    def command(**kwargs: Any) -> Any:
        return run(**kwargs)

    params = []
    for opt in table:
        default = opt.default
        if opt.multiple and default is not REQUIRED:
            default = list(default)
        params.append(inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY, annotation=opt.annotation,
                                        default=typer.Option(default, *opt.flags, help=opt.help)))
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {opt.name: opt.annotation for opt in table}
    command.__doc__ = doc
    command.__name__ = run.__name__
    return command


def parse_plain(table: Sequence[CliOption], argv: Sequence[str]) -> dict[str, Any] | None:
    """The option values of `argv` (`--long VALUE`, `--long=VALUE`, `-s VALUE`, a flag alone) by
    `table`, as typer would pass them; None for anything else (help, an unknown or missing
    option, a value that looks like an option, a positional word, `--`): typer handles those."""
    by_flag = {flag: opt for opt in table for flag in opt.flags}
    values: dict[str, Any] = {opt.name: [] if opt.multiple else opt.default for opt in table}
    given: set[str] = set()
    words = iter(argv)
    for arg in words:
        flag, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        opt = by_flag.get(flag)
        if opt is None or (opt.kind is bool and eq):
            return None
        if opt.kind is bool:
            value: Any = True
        else:
            raw = inline if eq else next(words, None)
            if raw is None or raw.startswith("-") or (opt.kind is Path and not raw):
                return None  # click may read these otherwise (or refuse them with its own message)
            value = Path(raw) if opt.kind is Path else raw
        if opt.multiple:
            values[opt.name].append(value)
        else:
            values[opt.name] = value
        given.add(opt.name)
    for opt in table:
        if opt.name not in given:
            if opt.default is REQUIRED:
                return None
            if opt.multiple:
                values[opt.name] = list(opt.default)
    return values


def run_plain(table: Sequence[CliOption], run: Callable[..., Any], argv: Sequence[str]) -> int | None:
    """Run a command without typer: `run` with the options `parse_plain` reads from `argv`, its
    user errors reported as `user_errors` reports them (rich is imported for that line only);
    the exit status, or None when the command line is typer's to read."""
    values = parse_plain(table, argv)
    if values is None:
        return None
    from pathkit_core.contracts import PathkitError

    try:
        run(**values)
    except (KeyboardInterrupt, PathkitError, OSError) as exc:
        from pathkit_core.cli.common import report_user_error

        status = report_user_error(exc)
        if status is None:
            raise
        return status
    return 0


__all__ = ["REQUIRED", "CliOption", "typer_command", "parse_plain", "run_plain"]
