"""The declared schema of a suite TOML and of the statistics options `pathkit compare` shares
with it: one typed model (pydantic), checked as a whole before any cell runs, whose every
problem is one line naming the key and, when the file's text is known, its TOML line.

The ranges (docs/comparisons.md, "Suite options"):

- `resamples`: at least `MIN_RESAMPLES` (fewer collapse the bootstrap intervals and p-values
  onto a handful of values: one resample gives p = 0) and at most `MAX_RESAMPLES` (beyond it
  the Monte Carlo error of a p-value, about sqrt(p(1-p)/B), is far below any decision and the
  run only takes longer);
- `alpha` and `level`: finite, strictly between 0 and 1;
- `seeds`: integers in [0, 2**32 - 1], the range numpy's and torch's seeding both take.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from pathkit_core.contracts import PathkitError

MIN_RESAMPLES = 100
MAX_RESAMPLES = 100_000
MAX_SEED = 2**32 - 1
MAX_SEED_COUNT = 1000


def _split_names(value: Any) -> Any:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


def _seed_list(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_SEED_COUNT:
            raise ValueError(f"a count of seeds is between 1 and {MAX_SEED_COUNT}, got {value}")
        return list(range(value))
    if not isinstance(value, list):
        raise ValueError(f"seeds must be a list of integers (or a count), got {value!r}")
    return value


def _unique(value: list[Any], what: str) -> list[Any]:
    twice = sorted({str(v) for v in value if value.count(v) > 1})
    if twice:
        raise ValueError(f"{what} {twice} more than once" if what == "names" else f"{what} repeat a value: {twice}")
    return value


def _plain_name(value: str) -> str:
    from pathkit_core.workspace import folder_name_problem

    problem = folder_name_problem(value)
    if problem:
        raise ValueError(f"{problem}; it names the suite's (or task's) folder")
    return value


Name = Annotated[str, Field(strict=True, min_length=1)]
# a suite's or a task's name, which names its folder
FolderName = Annotated[Name, AfterValidator(_plain_name)]
Names = Annotated[list[Name], BeforeValidator(_split_names), AfterValidator(lambda value: _unique(value, "names"))]
Seed = Annotated[int, Field(strict=True, ge=0, le=MAX_SEED)]
Probability = Annotated[float, Field(strict=True, gt=0.0, lt=1.0, allow_inf_nan=False)]
Resamples = Annotated[int, Field(strict=True, ge=MIN_RESAMPLES, le=MAX_RESAMPLES)]
Table = dict[str, Any]


class StatisticsOptions(BaseModel):
    """The options of the paired comparisons (a suite's, `pathkit compare`'s)."""

    model_config = ConfigDict(extra="forbid")

    correction: Name = "holm"
    alpha: Probability = 0.05
    level: Probability = 0.95
    resamples: Resamples = 2000

    @field_validator("correction")
    @classmethod
    def _known_correction(cls, value: str) -> str:
        from pathkit_bench.stats.multiple import METHODS

        if value not in METHODS:
            raise ValueError(f"correction {value!r} is not one of {', '.join(METHODS)}")
        return value


class TaskSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: Name
    name: FolderName | None = None
    dataset_root: Name | None = None
    dataset_options: Table | None = None
    encoders: Names | None = None
    generators: Names | None = None
    metrics: Names | None = None
    compare: Name | None = None
    hparams: Table | None = None
    train: Table | None = None
    tiling: Table | None = None
    options: Table | None = None


class ReferenceScoreSchema(BaseModel):
    """Published per-encoder scores of one task (`[[reference_scores]]`): the source's numbers,
    printed beside pathkit's cells in the suite report, never recomputed."""

    model_config = ConfigDict(extra="forbid")

    source: Name
    task: Name
    score: Name
    values: dict[str, Annotated[float, Field(strict=False, allow_inf_nan=False)]]
    generator: Name | None = None
    note: str | None = None


class SuiteSchema(StatisticsOptions):
    name: FolderName | None = None
    encoders: Names | None = None
    generators: Names | None = None
    metrics: Names | None = None
    seeds: Annotated[list[Seed], BeforeValidator(_seed_list), Field(min_length=1)] = [0]
    run: Table = {}
    tasks: Annotated[list[TaskSchema], Field(min_length=1)]
    reference_scores: list[ReferenceScoreSchema] = []
    baselines: Annotated[bool, Field(strict=True)] = False

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, value: list[int]) -> list[int]:
        return _unique(value, "seeds")


# ---------------------------------------------------------------------------- error lines

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\"' -]+?)\s*\]\]?\s*(#.*)?$")


def _sections(lines: list[str]) -> list[tuple[str, int]]:
    """(section, task number) of every line: "" for the top level, "tasks" inside the n-th [[tasks]]."""
    out, section, task = [], "", -1
    for line in lines:
        found = _HEADER.match(line)
        if found:
            section = found.group(1).replace('"', "").replace("'", "").strip()
            if section.removeprefix("suite.") == "tasks" and line.lstrip().startswith("[["):
                task += 1
        out.append((section.removeprefix("suite.").removeprefix("suite"), task))
    return out


def line_of(text: str | None, loc: tuple[Any, ...]) -> int | None:
    """The TOML line (1-based) of the key at pydantic location `loc`, when it can be found."""
    if not text or not loc:
        return None
    lines = text.splitlines()
    sections = _sections(lines)
    in_task = loc[0] == "tasks" and len(loc) > 1 and isinstance(loc[1], int)
    key = str(loc[2]) if in_task and len(loc) > 2 else (None if in_task else str(loc[0]))
    assign = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=") if key else None
    for n, (line, (section, task)) in enumerate(zip(lines, sections, strict=True), start=1):
        if in_task and task != loc[1]:
            continue
        top = section.split(".")[0] if section else ""
        if in_task and top != "tasks":
            continue
        if not in_task and top not in ("",):
            if key and section == key and _HEADER.match(line):
                return n  # a table key: its [header]
            continue
        if assign is None and _HEADER.match(line):
            return n  # the [[tasks]] header of the task itself
        if assign is not None and (assign.match(line) or (_HEADER.match(line) and section == f"tasks.{key}")):
            return n
    return None


def _where_key(loc: tuple[Any, ...]) -> str:
    parts = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part + 1}]" if parts and parts[-1] == "tasks" else f"[{part}]")
        else:
            parts.append(("." if parts else "") + str(part))
    return "".join(parts)


def _message(error: Mapping[str, Any]) -> str:
    kind, msg, value = error["type"], str(error["msg"]), error.get("input")
    msg = msg.removeprefix("Value error, ")
    if kind == "extra_forbidden":
        return "unknown key(s) [" + repr(str(error["loc"][-1])) + "]"
    if kind == "missing":
        return "is required"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    shown = repr(value)
    return f"{msg} (got {shown[:60]})" if kind not in ("value_error", "assertion_error") else msg


def schema_error(exc: ValidationError, where: str, text: str | None) -> PathkitError:
    """One line per problem of `exc`: `<file>: <key> (line N): <problem>`."""
    lines = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] == "missing" and loc == ("tasks",) or loc == ("tasks",) and error["type"] == "too_short":
            lines.append(f"{where}: no [[tasks]]; a suite names at least one dataset")
            continue
        if error["type"] == "extra_forbidden" and len(loc) == 1:
            from pathkit_bench.suite.config import SUITE_KEYS

            lines.append(f"{where}: unknown suite key(s) [{loc[0]!r}] (line {line_of(text, loc) or '?'}); known: "
                         f"{list(SUITE_KEYS)}")
            continue
        at = line_of(text, loc)
        lines.append(f"{where}: {_where_key(loc)}" + (f" (line {at})" if at else "") + f": {_message(error)}")
    return PathkitError("; ".join(lines) if len(lines) <= 1 else f"{len(lines)} problems: " + " | ".join(lines))


def check_suite_schema(data: Mapping[str, Any], where: str, text: str | None = None) -> SuiteSchema:
    """The suite mapping checked against `SuiteSchema` as a whole (every problem reported at once)."""
    try:
        return SuiteSchema.model_validate(dict(data))
    except ValidationError as exc:
        raise schema_error(exc, where, text) from None


def check_statistics_options(where: str = "options", **options: Any) -> StatisticsOptions:
    """`pathkit compare`'s (or any caller's) statistics options against the suite's rules; the
    error names each option as its caller spells it (`--level`)."""
    try:
        return StatisticsOptions.model_validate(options)
    except ValidationError as exc:
        problems = [f"--{error['loc'][0]}: {_message(error)}" for error in exc.errors()]
        raise PathkitError(f"{where}: " + "; ".join(problems)) from None


__all__ = ["MAX_RESAMPLES", "MAX_SEED", "MIN_RESAMPLES", "ReferenceScoreSchema", "StatisticsOptions", "SuiteSchema",
           "TaskSchema", "check_statistics_options", "check_suite_schema", "line_of"]
