"""Append-only status records: one JSON line per event, folded into the latest record per slide on
read (`tiling_status.json`, `<encoder>/extraction_status.json`; the line kinds, compaction and the
pathkit 0.1 files: docs/scale.md, "Status records")."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import FileLock, atomic_write_text, canonical_json, remove_stale_temporaries, warn_corrupt

_COMPACT_SLACK = 256  # a file is compacted when its lines exceed twice its records plus this


@dataclass
class StatusLog:
    """A status file folded: per-slide latest record, planned slides, the header, lines read."""

    slides: dict[str, dict[str, Any]] = field(default_factory=dict)
    planned: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    lines: int = 0
    legacy: bool = False  # a pathkit 0.1 file (one pretty-printed object)
    bad: list[str] = field(default_factory=list)  # slide ids (or line numbers) of corrupt records


def _events(text: str, path: Path, what: str) -> tuple[list[Any], bool, list[str]]:
    """The JSON values of `text`: its lines, or the one object of a pathkit 0.1 file."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return [], False, []
    try:
        return json.loads("[" + ",".join(lines) + "]"), False, []
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return [json.loads(text)], True, []  # pathkit 0.1: one indented object
    except (json.JSONDecodeError, RecursionError):
        pass
    events, bad = [], []
    for number, line in enumerate(lines, 1):
        try:
            events.append(json.loads(line))
        except (json.JSONDecodeError, RecursionError):
            bad.append(f"line {number}")
    if not events:
        raise PathkitError(f"{path}: unreadable {what} (no line of it is JSON)")
    return events, False, bad


def _fold(log: StatusLog, event: Any) -> None:
    if not isinstance(event, dict):
        log.bad.append(f"a {type(event).__name__} line")
        return
    if "slide" in event:
        record = event.get("record")
        if isinstance(record, dict):
            log.slides[str(event["slide"])] = record
        else:
            log.slides.pop(str(event["slide"]), None)
            log.bad.append(str(event["slide"]))
        return
    if "format" in event and not log.header:
        log.header = {k: v for k, v in event.items() if k not in ("slides", "planned")}
    slides = event.get("slides")
    if slides is not None:
        if isinstance(slides, dict):
            for sid, record in slides.items():
                if isinstance(record, dict):
                    log.slides[str(sid)] = record
                else:
                    log.bad.append(str(sid))
        else:
            log.bad.append(f"its records ({type(slides).__name__})")
    planned = event.get("planned")
    if isinstance(planned, dict):
        log.planned.update(planned)
    if not {"format", "slides", "planned"} & set(event):
        log.bad.append(f"a line of no known kind (keys {sorted(map(str, event))[:5]})")


def read_log(path: str | Path, what: str) -> StatusLog:
    """Fold the status file at `path` ({} parts when there is none). Corrupt records (not JSON
    objects) are named in one warning and treated as absent, so those slides are done again."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return StatusLog()
    except (OSError, UnicodeDecodeError) as exc:
        raise PathkitError(f"{p}: unreadable {what} ({exc})") from None
    events, legacy, bad = _events(text, p, what)
    log = StatusLog(lines=len(events), legacy=legacy, bad=bad)
    for event in events:
        _fold(log, event)
    if log.bad:
        warn_corrupt(what, p, log.bad)
    return log


def slide_events(records: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"slide": sid, "record": dict(rec)} for sid, rec in records.items()]


def _write_all(path: Path, data: bytes) -> None:
    from pathkit_core.workspace import _storage_errors

    with _storage_errors(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            if os.write(fd, data) != len(data):  # one write: O_APPEND puts the whole line at the end
                raise OSError(28, "No space left on device (short write)")
            os.fsync(fd)
        finally:
            os.close(fd)


def _ends_a_line(path: Path) -> bool:
    with open(path, "rb") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return True
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _is_legacy(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"{\n"


def append_events(path: str | Path, lock_path: str | Path, header: Mapping[str, Any],
                  events: Iterable[Mapping[str, Any]]) -> None:
    """Append `events` (one JSON line each, one write) to the status file; the first write
    creates it atomically with `header`, and a pathkit 0.1 file is first rewritten as lines."""
    body = "".join(canonical_json(e) + "\n" for e in events)
    if not body:
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_path, timeout=300.0):
        if not p.is_file():
            remove_stale_temporaries(p)
            atomic_write_text(p, canonical_json(dict(header)) + "\n" + body)
        elif _is_legacy(p):
            _rewrite(p, read_log(p, str(header.get("format", "status"))), header, body)
        else:
            # a writer that died mid-line left no newline: start on a line of our own, so only
            # the torn record is lost, not the one appended after it
            _write_all(p, (b"" if _ends_a_line(p) else b"\n") + body.encode("utf-8"))


def _rewrite(p: Path, log: StatusLog, header: Mapping[str, Any], tail: str = "") -> None:
    remove_stale_temporaries(p)
    snapshot = {"slides": log.slides, "planned": log.planned}
    atomic_write_text(p, canonical_json({**log.header, **dict(header)}) + "\n" + canonical_json(snapshot) + "\n" + tail)


def compact(path: str | Path, lock_path: str | Path, header: Mapping[str, Any], what: str) -> StatusLog:
    """Fold the file and, when it holds many more lines than records (or is a pathkit 0.1
    file), rewrite it as a header and one snapshot, under the lock appenders take. Returns the
    folded records."""
    p = Path(path)
    log = read_log(p, what)
    if not (log.legacy or log.lines > 2 * (len(log.slides) + 1) + _COMPACT_SLACK):
        return log
    with FileLock(lock_path, timeout=300.0):
        log = read_log(p, what)
        if p.is_file():
            _rewrite(p, log, header)
    return log
