"""Shared CLI helpers: consoles, error reporting and table printing."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pathkit_core.cli.plain import parse_key_values, print_json, split_names
from pathkit_core.console import PIPE_RULE_WIDTH as PIPE_RULE_WIDTH
from pathkit_core.console import PIPE_WIDTH as PIPE_WIDTH
from pathkit_core.console import PathkitConsole, console, err_console
from pathkit_core.contracts import PathkitError

__all__ = ["console", "err_console", "user_errors", "report_user_error", "print_table", "print_scores",
           "print_json", "split_names", "parse_key_values", "INTERRUPTED", "PathkitConsole"]


F = TypeVar("F", bound=Callable[..., Any])

INTERRUPTED = "interrupted; rerun the same command to resume"


def user_errors(func: F) -> F:
    """Turn a PathkitError into a one-line message and exit status 2 (no traceback); so too a
    write the filesystem refused (full, read-only) wherever it happened, and any other OS error
    about a named path (a file this user may not read, a path through a file). Ctrl-C prints one
    line (`INTERRUPTED`) and exits with 130, the shell's status for SIGINT, without a traceback:
    every stage resumes from what it finished."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (KeyboardInterrupt, PathkitError, OSError) as exc:
            status = report_user_error(exc)
            if status is None:
                raise
            import typer

            raise typer.Exit(status) from None

    return wrapper  # type: ignore[return-value]


def report_user_error(exc: BaseException) -> int | None:
    """Print the one line `user_errors` prints for `exc` and return the exit status; None when
    `exc` is no user error (an OSError about no named path), to be raised as it is."""
    from pathkit_core.workspace import storage_error

    if isinstance(exc, KeyboardInterrupt):
        err_console.print(INTERRUPTED, highlight=False, soft_wrap=True)
        return 130
    if isinstance(exc, OSError) and not isinstance(exc, PathkitError):
        err = storage_error(exc, exc.filename or "a file being written", permission=False)
        if err is None:
            if exc.filename is None:
                return None
            # a path that is not a folder, a file this user may not read: named, no traceback
            where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 else "")
            err = PathkitError(f"{where}: {exc.strerror or exc}")
        exc = err
    err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)  # "[[tasks]]" is text
    return 2


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *,
                target: Console | None = None) -> None:
    target = target or console
    if title and not target.is_terminal:
        # rich wraps a title to its table's width, splitting a path in it; a log gets it whole
        # (up to the console's width: PIPE_WIDTH, or COLUMNS when set)
        target.print(escape(title), highlight=False)
        title = None
    elif title:
        title = escape(title)  # "(mean [mean of the cells' CI bounds])" is text, not a markup tag
    table = Table(title=title, show_lines=False, header_style="bold")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        # cells are text, not rich markup: "[ids]" or "[0.1, 0.2]" must print as written
        table.add_row(*("" if v is None else (f"{v:.4f}" if isinstance(v, float) else escape(str(v))) for v in row))
    target.print(table)


def print_scores(title: str, summary: dict[str, dict[str, float]],
                 baselines: dict[str, dict[str, dict[str, float]]] | None = None, *, headline_only: bool = False,
                 target: Console | None = None, details: dict[str, dict[str, Any]] | None = None) -> int:
    """The scores as the run report shows them: one row per score named by the metric (BLEU-4,
    CRQS, AUROC), its CI as a column ("not estimable" where the metric could not estimate one),
    each baseline beside it and the direction; headline scores first; under the table, each
    metric's small-sample warning (`details`: the metrics' details). Returns how many scores
    were left out (`headline_only`)."""
    from pathkit_core.evaluation.scores import sample_warnings, score_rows, table_cells, table_headers

    rows = score_rows(summary, baselines, details=details)
    shown = [r for r in rows if r.headline] if headline_only else rows
    names = list(baselines or {})
    with_ci = any(r.ci_text for r in shown)
    print_table(title, table_headers(names, with_ci_column=with_ci),
                [table_cells(r, names, with_ci_column=with_ci) for r in shown], target=target)
    for metric, text in sample_warnings(details).items():
        (target or console).print(f"[yellow]WARNING ({escape(metric)}): {escape(text)}[/]", highlight=False)
    return len(rows) - len(shown)
