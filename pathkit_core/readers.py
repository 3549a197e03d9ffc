"""One reader for every state and result file pathkit writes (JSON records, JSON lines, parquet tables,
the pids of lock files): whatever a damaged or hostile file holds becomes one `DamagedFile` error naming
the file and the problem (docs/file-formats.md, "Reading state and result files back"). Callers that
can redo the work that wrote the file catch it and recompute."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError

# The largest pid a Linux kernel hands out (PID_MAX_LIMIT, 2**22) and the largest a process id
# may hold anywhere (a C int): a recorded pid above the second is no process at all.
PID_MAX = 2**31 - 1


class DamagedFile(PathkitError):
    """A state or result file that cannot be read as what pathkit writes there."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{path} {problem}")


def _text(path: Path, what: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DamagedFile(path, f"is missing (no {what})") from None
    except IsADirectoryError:
        raise DamagedFile(path, f"is a folder, not a {what}") from None
    except UnicodeDecodeError as exc:
        raise DamagedFile(path, f"is not UTF-8 text (byte {exc.start}); the {what} is damaged") from None
    # any other OSError (permission denied, an I/O error) is no damage: it reaches the user as the
    # one line `cli.common.user_errors` prints for a named path, and nothing is recomputed over it


def read_json_file(path: str | Path, what: str = "JSON record", *, expect: type | tuple[type, ...] = dict) -> Any:
    """The JSON value of `path`, which must be of type `expect` (an object by default)."""
    path = Path(path)
    text = _text(path, what)
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        kind = "a readable JSON object" if expect is dict else "readable JSON"
        raise DamagedFile(path, f"is not {kind} ({exc}); the {what} is damaged or truncated") from None
    if not isinstance(value, expect):
        raise DamagedFile(path, f"holds a {type(value).__name__}, not the {what} pathkit writes")
    return value


def read_jsonl_file(path: str | Path, what: str = "JSON-lines file") -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one a line (blank lines skipped)."""
    path = Path(path)
    rows = []
    for lineno, line in enumerate(_text(path, what).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise DamagedFile(path, f"line {lineno} is not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise DamagedFile(path, f"line {lineno} holds a {type(row).__name__}, not an object")
        rows.append(row)
    return rows


def read_parquet_file(path: str | Path, what: str = "table", *, columns: list[str] | None = None) -> Any:
    """The polars DataFrame of a parquet file (with `columns` when named, each required)."""
    import polars as pl

    path = Path(path)
    if path.is_dir():
        raise DamagedFile(path, f"is a folder, not a {what}")
    if not path.exists():
        raise DamagedFile(path, f"is missing (no {what})")
    try:
        frame = pl.read_parquet(path)
    except PermissionError:
        raise
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DamagedFile(path, f"is not a readable parquet {what} ({first[:160]}); it is damaged or truncated") \
            from None
    missing = [c for c in columns or () if c not in frame.columns]
    if missing:
        raise DamagedFile(path, f"lacks the column(s) {', '.join(missing)} of a {what}")
    return frame


def pid_problem(pid: Any) -> str | None:
    """Why `pid` (a lock file's recorded owner) is no process id (None when it can be one)."""
    if isinstance(pid, bool) or not isinstance(pid, int):
        return f"records pid {pid!r}, not a process id"
    if not 0 < pid <= PID_MAX:
        return f"records pid {pid}, which no process can have"
    return None


__all__ = ["PID_MAX", "DamagedFile", "pid_problem", "read_json_file", "read_jsonl_file", "read_parquet_file"]
