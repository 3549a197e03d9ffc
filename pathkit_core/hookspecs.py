"""The plugin contract: pluggy hook specifications every pathkit plugin may implement (what each
one is for, and the shipped package that implements it: docs/plugin-authors.md, the hook table)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from pathkit_core import PROJECT_NAME

hookspec = pluggy.HookspecMarker(PROJECT_NAME)

Register = Callable[[type], Any]


@hookspec
def register_tasks(register: Register) -> None:
    """Call `register(TaskClass)` for each task type the plugin provides."""


@hookspec
def register_encoders(register: Register) -> None:
    """Call `register(EncoderClass)` for each encoder the plugin provides."""


@hookspec
def register_slide_encoders(register: Register) -> None:
    """Call `register(SlideEncoderClass)` for each slide encoder the plugin provides."""


@hookspec
def register_generators(register: Register) -> None:
    """Call `register(GeneratorClass)` for each generator the plugin provides."""


@hookspec
def register_datasets(register: Register) -> None:
    """Call `register(DatasetClass)` for each dataset the plugin provides."""


@hookspec
def register_metrics(register: Register) -> None:
    """Call `register(MetricClass)` for each metric the plugin provides."""


@hookspec
def register_commands(app: Any) -> None:
    """Add typer commands or sub-apps to the `pathkit` typer application `app`."""


@hookspec
def plain_commands() -> dict[str, str]:
    """{command name: "module:function"} for commands that also run without typer (asked before the
    typer app is built)."""


@hookspec
def register_segmenters(register: Register) -> None:
    """Call `register(SegmenterClass)` for each tissue segmenter the plugin provides."""


@hookspec
def register_slide_readers(register: Register) -> None:
    """Call `register(SlideReaderClass)` for each whole-slide file format the plugin reads."""


@hookspec(historic=True)
def add_component_kinds(add: Callable[..., None]) -> None:
    """Call `add(kind, base, hook, specs)` for each component kind the plugin adds: components of `kind`
    subclass `base` and register through hook `hook`, specified in module `specs`."""


@hookspec(firstresult=True)
def read_feature_file(path: Any, mpp: float | None) -> Any:
    """A `pathkit_core.features.record.FeatureFile` read from `path` when the plugin reads its format,
    else None; `mpp` (level-0 um/px) converts micrometre coordinates. First answer wins."""


@hookspec(historic=True)
def add_hookspecs(add: Callable[[Any], None]) -> None:
    """Call `add(module)` with each module of hook specifications the plugin adds for others to implement."""


@hookspec
def cells_finished(results: list[tuple[str, str, Any]], workdir: Any, dataset: str, console: Any) -> None:
    """`pathkit run` ran several cells of `dataset`: `results` holds (encoder, generator, `RunResult`)
    of the scored ones."""


@hookspec
def folder_reports(path: Any) -> list[Any] | None:
    """(Re)build the reports of `path` when the plugin writes that kind of folder (or a workspace holds
    one) and return the files written; None or [] otherwise."""


@hookspec
def doctor_checks() -> list[tuple[str, str, str]]:
    """(name, status, detail) rows `pathkit doctor` shows, status one of "ok", "missing", "error"."""


@hookspec(firstresult=True)
def default_demo() -> str | None:
    """The dataset `pathkit run` with no arguments runs (its `demo_run`); first answer wins."""


@hookspec
def report_sections(run: Any) -> list[Any] | None:
    """`pathkit_core.report.Section`s the plugin adds to the report of any run (`run`: a
    `pathkit_core.report.RunFolder`), beside its task's own; None or [] when it has none."""

__all__ = [
    "hookspec", "Register", "register_tasks", "register_encoders", "register_generators", "register_datasets",
    "register_metrics", "register_commands", "plain_commands", "register_segmenters", "register_slide_readers",
    "add_component_kinds", "read_feature_file", "add_hookspecs", "cells_finished", "folder_reports", "doctor_checks",
    "default_demo", "report_sections"]
