"""Report releases shipped as one JSON file of records (REG 2025, HISTAI's metadata, PathText):
find the file, read it with errors that name it, and check its records (docs/api/sdk.md,
"Report JSON files"; the layouts are in docs/report-generation.md, "Datasets").

A release's report file is a JSON list of objects (`[{"id": ..., "report": ...}, ...]`), a list
wrapped in an object under a named key (`{"cases": [...]}`), or the REG/PathBench split layout
`{"train": [...], "val": [...], "test": [...]}`, whose keys then say each record's part.
`find_json_file` picks the file (an option, then the release's usual names, then the only
`*.json` in the root), `read_json` parses any JSON file naming the file and the position of a
bad byte or a syntax error, and `read_report_records` returns the records with the part each was
listed under. What a run is keyed by is the cases made from the records (their ids, targets and
inputs), not the whole file, so a field no case uses changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_sdk.cohort import SPLIT_LAYOUT_KEYS


@dataclass(frozen=True)
class ReportRecords:
    """The records of a report file, each an object, and the part (train, val, test) each was
    listed under when the file has the split layout (`parts` empty otherwise)."""

    path: Path
    records: list[dict[str, Any]]
    parts: list[str]


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file, naming the file and the position of any UTF-8 or syntax error."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise PathkitError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise PathkitError(f"{what} {path} cannot be read: {exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PathkitError(f"{what} {path} is not UTF-8 text: byte {exc.start} (line {line}) is "
                           f"{raw[exc.start:exc.start + 1]!r}; re-save the file as UTF-8") from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f": {exc.msg} at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) \
            else " (nested too deeply)"
        raise PathkitError(f"{what} {path} is not valid JSON{where}") from None


def find_json_file(dataset: str, root: Path, names: Sequence[str], given: Path | None, what: str, *, option: str,
                   layout: str) -> Path:
    """The report file of dataset `dataset`: `given` (its option `option`) when set, else the first
    of `names` in `root`, else the only `*.json` in `root`; errors say what was found and how to
    choose."""
    if given is not None:
        return given
    for name in names:
        if (root / name).is_file():
            return root / name
    found = sorted(p for p in root.glob("*.json") if p.is_file())
    if len(found) == 1:
        return found[0]
    if not found:
        raise PathkitError(f"{dataset}: no {what} in {root}; expected layout: {layout}")
    listing = ", ".join(p.name for p in found)
    raise PathkitError(f"{dataset}: several JSON files in {root} ({listing}); choose the {what} with the dataset "
                       f"option {option}=FILE")


def read_report_records(path: Path, what: str, *, keys: Sequence[str] = (), wrappers: Sequence[str] = (),
                        split_layout: bool = False) -> ReportRecords:
    """The records of the report file `path` (`what` names it in errors): a JSON list, the list
    under the first of `wrappers` an object holds, or (with `split_layout`) the train/val/test
    layout. Each record must be an object holding every one of `keys`."""
    path = Path(path)
    data = read_json(path, what)
    parts: list[str] = []
    if split_layout and isinstance(data, dict) and all(isinstance(data.get(p), list) for p in SPLIT_LAYOUT_KEYS):
        records = [r for p in SPLIT_LAYOUT_KEYS for r in data[p]]
        parts = [p for p in SPLIT_LAYOUT_KEYS for _ in data[p]]
    elif isinstance(data, dict) and any(w in data for w in wrappers):
        records = data[next(w for w in wrappers if w in data)]
    else:
        records = data
    shape = "{" + ", ".join(f'"{k}"' for k in keys) + "} " if keys else ""
    if not isinstance(records, list):
        raise PathkitError(f"{what} {path}: expected a JSON list of {shape}records, found a {type(records).__name__}")
    for i, record in enumerate(records):
        if not isinstance(record, dict) or any(k not in record for k in keys):
            holding = " with " + " and ".join(f'"{k}"' for k in keys) if keys else ""
            raise PathkitError(f"{what} {path}: record {i} is not an object{holding} ({str(record)[:80]!r})")
    return ReportRecords(path, records, parts)


__all__ = ["ReportRecords", "find_json_file", "read_json", "read_report_records"]
