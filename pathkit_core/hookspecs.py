"""The plugin contract: pluggy hook specifications every pathkit plugin may implement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from pathkit_core import PROJECT_NAME

hookspec = pluggy.HookspecMarker(PROJECT_NAME)

Register = Callable[[type], Any]


@hookspec
def register_tasks(register: Register) -> None:
    """Call `register(TaskClass)` for each task type the plugin provides (the built-in tasks
    register through this hook too, from the `pathkit_tasks` packages)."""


@hookspec
def register_encoders(register: Register) -> None:
    """Call `register(EncoderClass)` for each encoder the plugin provides."""


@hookspec
def register_slide_encoders(register: Register) -> None:
    """Call `register(SlideEncoderClass)` for each slide encoder (a `SlideEncoder`: one slide's
    patch features and coordinates to one embedding) the plugin provides."""


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
    """{command name: "module:function"} for commands that also run without typer, called before the
    typer app is built (the function's contract: docs/plugin-authors.md, the hook table)."""


@hookspec
def register_segmenters(register: Register) -> None:
    """Call `register(SegmenterClass)` for each tissue segmenter (a `TissueSegmenter`) the plugin provides."""


@hookspec
def register_slide_readers(register: Register) -> None:
    """Call `register(SlideReaderClass)` for each whole-slide file format (a `SlideReader`) the plugin
    reads (the distribution's OpenSlide, OME-TIFF, OME-Zarr, CZI, DICOM and VSI readers, `pathkit_readers`, do)."""


@hookspec(historic=True)
def add_component_kinds(add: Callable[..., None]) -> None:
    """Call `add(kind, base, hook, specs)` for each component kind the plugin adds to the core's:
    components of `kind` subclass `base` and are registered through the hook named `hook`, whose
    specification is in the module `specs` (as pytest plugins add hooks; the VQA task package adds
    the evidence `selector` kind this way)."""


@hookspec(firstresult=True)
def read_feature_file(path: Any, mpp: float | None) -> Any:
    """A `pathkit_core.features.record.FeatureFile` read from `path` when it is a feature file of a
    format this plugin reads (the interop package: CLAM/TRIDENT/STAMP h5, GOLDMARK-style torch
    files), else None; `mpp` (level-0 um/px) converts micrometre coordinates. First answer wins."""


@hookspec(historic=True)
def add_hookspecs(add: Callable[[Any], None]) -> None:
    """Call `add(module)` with each module of hook specifications the plugin adds for other
    plugins to implement (the bench package adds its leaderboard and suite report hooks)."""


@hookspec
def cells_finished(results: list[tuple[str, str, Any]], workdir: Any, dataset: str, console: Any) -> None:
    """`pathkit run` ran several cells of `dataset` (every encoder x generator it was given):
    `results` holds (encoder, generator, `RunResult`) of the scored ones. The bench package
    writes their leaderboard and matrix report here."""


@hookspec
def folder_reports(path: Any) -> list[Any] | None:
    """(Re)build the reports of `path` when it is a folder this plugin writes (a leaderboard, a
    suite) or a workspace holding one, and return the files written; None or [] otherwise.
    `pathkit report` calls it after the core has written any run folder's report."""


@hookspec
def doctor_checks() -> list[tuple[str, str, str]]:
    """Checks `pathkit doctor` runs for this plugin: (name, status, detail) rows, status one of
    "ok", "missing", "error" (e.g. the METEOR metric checks for a Java runtime)."""


@hookspec(firstresult=True)
def default_demo() -> str | None:
    """The dataset `pathkit run` with no arguments runs (its `demo_run`); the first plugin that
    answers wins."""


@hookspec
def report_sections(run: Any) -> list[Any] | None:
    """Sections (`pathkit_core.report.Section`) this plugin adds to the report of a run (`run`: a
    `pathkit_core.report.RunFolder`), beside its task's own (`Task.report_sections`); return
    None or [] for runs it has nothing to say about (the goldmark plugin adds cross-site results)."""


__all__ = [
    "hookspec", "Register", "register_tasks", "register_encoders", "register_generators", "register_datasets",
    "register_metrics", "register_commands", "plain_commands", "register_segmenters", "register_slide_readers",
    "add_component_kinds", "read_feature_file", "add_hookspecs", "cells_finished", "folder_reports", "doctor_checks",
    "default_demo", "report_sections"]
