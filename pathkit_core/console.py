"""The consoles pathkit prints through (rich), below the command line: what the CLI, the progress
bars and the trainer share."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleDimensions

# Width of output that goes to a file or a pipe when COLUMNS does not say: wide enough that no table
# folds a path or a metric name (a log keeps every line whole), not so wide that rules fill a screen.
PIPE_WIDTH = 1000
# A rule (`pathkit run`'s heading per cell) is never longer than this outside a terminal.
PIPE_RULE_WIDTH = 100


class PathkitConsole(Console):
    """A rich console that is plain and full-width when its stream is not a terminal: `COLUMNS`
    when set, else `PIPE_WIDTH` (rich's own default there is 80 columns or the width of whichever
    std stream is a terminal, which folds tables and breaks paths in a log)."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = Console.size.fget(self)  # type: ignore[attr-defined]
        columns = self._environ.get("COLUMNS", "")
        if self._width is None and not columns.isdigit() and not self.is_terminal:
            return ConsoleDimensions(PIPE_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def rule(self, title: Any = "", **kwargs: Any) -> None:
        if self.is_terminal:
            return super().rule(title, **kwargs)
        from rich.rule import Rule

        self.print(Rule(title, **kwargs), width=min(self.width, PIPE_RULE_WIDTH))
        return None


console = PathkitConsole()
err_console = PathkitConsole(stderr=True)

__all__ = ["PIPE_RULE_WIDTH", "PIPE_WIDTH", "PathkitConsole", "console", "err_console"]
