"""Reading prediction and reference files (REG JSON, JSONL, PathBench) and joining them by id."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError, brief_list, regular_file_problem, repeats_text

# Keys that may hold a record's value, in order of preference.
VALUE_KEYS = ("report", "prediction", "pred", "answer", "label", "target", "text", "caption")
ID_KEYS = ("id", "case_id")


@dataclass
class RecordFile:
    """Values keyed by id; `references` is set when the file carries both (PathBench format)."""

    path: Path
    values: dict[str, Any]
    references: dict[str, Any] | None = None
    format: str = ""


def _record_value(path: Path, where: str, record: Any, whole: bool = False) -> tuple[str, Any]:
    if not isinstance(record, Mapping):
        raise PathkitError(
            f"{path}: {where}: expected an object with \"id\" and \"report\", got {type(record).__name__}"
        )
    rid = next((record[k] for k in ID_KEYS if k in record), None)
    if rid is None:
        raise PathkitError(f"{path}: {where}: record has no \"id\" key (keys: {sorted(record)})")
    if not isinstance(rid, str | int):
        raise PathkitError(f"{path}: {where}: \"id\" must be a string, got {type(rid).__name__}")
    if whole:  # the metric reads every field of the record (VQA: answer, capability, group)
        return str(rid), {k: v for k, v in record.items() if k not in ID_KEYS}
    key = next((k for k in VALUE_KEYS if k in record), None)
    if key is None:
        raise PathkitError(
            f"{path}: {where} (id {rid!r}): no value key; expected one of {', '.join(VALUE_KEYS)}"
        )
    if key in ("label", "prediction", "pred") and "probabilities" in record:
        # a classification record: its class and its class probabilities travel together
        return str(rid), {"label": record[key], "probabilities": record["probabilities"]}
    return str(rid), record[key]


class _Repeats:
    """Ids seen more than once while reading one file, with where each was seen."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where: dict[str, list[str]] = {}

    def add(self, values: dict[str, Any], rid: str, value: Any, where: str) -> None:
        self.where.setdefault(rid, []).append(where)
        values.setdefault(rid, value)

    def check(self, what: str = "id") -> None:
        repeated = {rid: places for rid, places in self.where.items() if len(places) > 1}
        if repeated:
            raise PathkitError(
                f"{self.path}: {len(repeated)} {what}(s) appear more than once, so it is unclear which "
                f"value to score: {repeats_text({repr(k): v for k, v in repeated.items()})}"
            )


class _KeyCounter:
    """`object_pairs_hook` that notes the repeated keys of every JSON object, which
    `json.loads` alone would silently resolve to the last value."""

    def __init__(self) -> None:
        self.repeated: list[list[str]] = []  # per object, in the order objects close
        self.last_pairs: list[tuple[str, Any]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        made = dict(pairs)
        if len(made) == len(pairs):  # the usual case: no key twice, nothing to count
            self.repeated.append([])
        else:
            self.repeated.append([k for k, n in Counter(k for k, _ in pairs).items() if n > 1])
        self.last_pairs = pairs
        return made

    def inner(self, top_is_object: bool) -> list[str]:
        """Keys repeated inside records (objects close innermost first: the last is the top)."""
        objects = self.repeated[:-1] if top_is_object else self.repeated
        return sorted({k for keys in objects for k in keys})


def file_id(name: str) -> str:
    """A per-case file's id: its name without its extension (`s1.png`, `s1.ome.tiff` -> `s1`)."""
    lower = name.lower()
    for double in (".ome.tiff", ".ome.tif"):
        if lower.endswith(double) and len(name) > len(double):
            return name[: -len(double)]
    return name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name


def read_folder(path: Path) -> RecordFile:
    """A folder of one file per case (mask images, GeoJSON, ...): each file's path keyed by its id
    (`file_id`); hidden files and sub-folders are ignored, two files of one id are an error."""
    values: dict[str, Any] = {}
    for child in sorted(path.iterdir()):
        if child.name.startswith(".") or not child.is_file():
            continue
        rid = file_id(child.name)
        if rid in values:
            raise PathkitError(f"{path}: two files for id {rid!r} ({Path(values[rid]).name}, {child.name}); keep one")
        values[rid] = str(child)
    if not values:
        raise PathkitError(f"{path}: the folder holds no files")
    return RecordFile(path, values, format="folder")


def read_records(path: str | Path, *, whole: bool = False) -> RecordFile:
    """Parse a predictions or references file, or read a folder of per-case files (`read_folder`);
    errors name the file and the line or key.

    With `whole`, a list or JSON-lines record's value is the record itself without its id (for
    metrics that read several fields of a record, `Metric.whole_records`)."""
    path = Path(path)
    if path.is_dir():
        return read_folder(path)
    text = _read_text(path)
    keys = _KeyCounter()
    if path.suffix == ".jsonl" or (text.lstrip()[0] == "{" and "\n{" in text.strip() and _is_jsonl(text)):
        return _read_jsonl(path, text, keys, whole)
    data = _loads(path, text, keys)
    _check_inner(path, keys.inner(isinstance(data, Mapping)))
    if isinstance(data, list):
        values: dict[str, Any] = {}
        repeats = _Repeats(path)
        for index, record in enumerate(data):
            rid, value = _record_value(path, f"item {index}", record, whole)
            repeats.add(values, rid, value, f"item {index}")
        repeats.check()
        return RecordFile(path, values, format="json-list")
    if isinstance(data, Mapping):
        return _read_mapping(path, data, keys)
    raise PathkitError(f"{path}: expected a JSON list of {{\"id\", \"report\"}} records, got {type(data).__name__}")


def _read_text(path: Path) -> str:
    """The file's text; a missing, irregular, unreadable, non-UTF-8 or empty file is an error."""
    problem = regular_file_problem(path)
    if problem is not None:
        code, message = problem
        raise PathkitError(f"{path}: no such file" if code == "not-found" else f"{path} {message}; give a JSON file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PathkitError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise PathkitError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    if not text.strip():
        raise PathkitError(f"{path}: file is empty")
    return text


def _loads(path: Path, text: str, keys: _KeyCounter, lineno: int | None = None) -> Any:
    """The JSON value of `text` (the whole file, or its line `lineno`); errors name the position."""
    at = f"line {lineno}: " if lineno is not None else ""
    try:
        return json.loads(text, object_pairs_hook=keys)
    except json.JSONDecodeError as exc:
        where = at or f"line {exc.lineno}, column {exc.colno}: "
        raise PathkitError(f"{path}: {where}invalid JSON ({exc.msg})") from exc
    except RecursionError:
        raise PathkitError(f"{path}: {at}{_TOO_DEEP}") from None


def _read_jsonl(path: Path, text: str, keys: _KeyCounter, whole: bool) -> RecordFile:
    values: dict[str, Any] = {}
    repeats = _Repeats(path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = _loads(path, line, keys, lineno)
        rid, value = _record_value(path, f"line {lineno}", record, whole)
        repeats.add(values, rid, value, f"line {lineno}")
    _check_inner(path, keys.inner(top_is_object=False))
    repeats.check()
    return RecordFile(path, values, format="jsonl")


def _read_mapping(path: Path, data: Mapping[str, Any], keys: _KeyCounter) -> RecordFile:
    """A JSON object: PathBench's {id: {"pred", "target"}} or {id: value}."""
    repeats = _Repeats(path)
    for index, (key, _) in enumerate(keys.last_pairs):
        repeats.where.setdefault(str(key), []).append(f"entry {index + 1}")
    repeats.check()
    if data and all(isinstance(v, Mapping) and "pred" in v for v in data.values()):
        values: dict[str, Any] = {}
        refs: dict[str, Any] = {}
        for rid, entry in data.items():
            if "target" not in entry:
                raise PathkitError(f"{path}: key {rid!r}: PathBench entry has \"pred\" but no \"target\"")
            values[str(rid)] = entry["pred"]
            refs[str(rid)] = entry["target"]
        return RecordFile(path, values, refs, format="pathbench")
    bad = next((k for k, v in data.items() if isinstance(v, Mapping)), None)
    if bad is not None:
        raise PathkitError(
            f"{path}: key {bad!r}: expected PathBench entries {{\"pred\", \"target\"}} or plain values"
        )
    return RecordFile(path, {str(k): v for k, v in data.items()}, format="json-mapping")


_TOO_DEEP = "JSON nested too deeply to be read (records nest a few levels at most)"


def _check_inner(path: Path, repeated: list[str]) -> None:
    if repeated:
        raise PathkitError(
            f"{path}: a record repeats the key(s) {_show(repeated)}, so it is unclear which value to score"
        )


def _is_jsonl(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return True
    except RecursionError:
        return False  # one JSON value, too deep: the reader says so
    return False


def without_slide_extension(record_id: str) -> str:
    """`PIT_01_00002_01.tiff` -> `PIT_01_00002_01`: a slide file extension dropped (only a known
    one, so ids with dots such as TCGA UUIDs keep theirs)."""
    from pathkit_core.wsi.slide import SLIDE_EXTENSIONS

    lower = record_id.lower()
    for ext in (".ome.tiff", ".ome.tif", *SLIDE_EXTENSIONS):
        if lower.endswith(ext) and len(record_id) > len(ext):
            return record_id[: -len(ext)]
    return record_id


def match_extensions(predictions: Mapping[str, Any], references: Mapping[str, Any],
                     ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Predictions keyed by the references' ids where the two differ only by a slide file
    extension (`X.tiff` against `X`, either way round), and the (prediction id, reference id)
    pairs matched so; unchanged (no pairs) when the ids already agree or when dropping
    extensions would not pair them one to one."""
    if set(predictions) == set(references):
        return dict(predictions), []
    by_key: dict[str, str] = {}
    for rid in references:
        key = without_slide_extension(rid)
        if key in by_key:
            return dict(predictions), []  # two references would collapse into one id
        by_key[key] = rid
    out: dict[str, Any] = {}
    renamed: list[tuple[str, str]] = []
    for pid, value in predictions.items():
        target = pid if pid in references else by_key.get(without_slide_extension(pid))
        if target is None or target in out:
            return dict(predictions), []
        out[target] = value
        if target != pid:
            renamed.append((pid, target))
    return out, renamed


def join_by_id(
    predictions: Mapping[str, Any], references: Mapping[str, Any], *, pred_name: str = "predictions",
    ref_name: str = "references",
) -> list[str]:
    """The shared ids in reference order; any id on one side only is an error listing them."""
    missing = [i for i in references if i not in predictions]
    extra = [i for i in predictions if i not in references]
    parts = [f"{len(ids)} id(s) in {side} {relation} {other}: {_show(ids)}"
             for ids, side, relation, other in ((missing, ref_name, "missing from", pred_name),
                                                (extra, pred_name, "not in", ref_name)) if ids]
    if parts:
        raise PathkitError("; ".join(parts))
    return list(references)


def _show(ids: list[str], limit: int = 20) -> str:
    return brief_list(ids, limit)
