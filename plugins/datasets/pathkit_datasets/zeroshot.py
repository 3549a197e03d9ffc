"""Datasets of the `zero-shot` task (docs/zero-shot.md): `slides-zeroshot` (the `slides-csv` table;
a slide's tiles pooled by MI-Zero top-k) and `patch-zeroshot` (the `patch-folder` layout, one feature
vector per patch). Nothing is trained: the train and validation parts are read only by the trivial
baselines, and the class names are the prompts' default names (a prompt file can give others)."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_datasets.patch_folder import PatchFolderDataset
from pathkit_datasets.slides_csv import SlidesCSV
from pathkit_tasks import TASK_ZERO_SHOT


class SlidesZeroShot(SlidesCSV):
    name: ClassVar[str] = "slides-zeroshot"
    description: ClassVar[str] = "your own slides + a table slide_path,label[,...]: zero-shot slide classes by prompts"
    task: ClassVar[str] = TASK_ZERO_SHOT
    default_metrics: ClassVar[tuple[str, ...]] = ("classification",)
    selection_metric: ClassVar[str | None] = None
    selection_options: ClassVar[dict[str, Any]] = {}


class PatchZeroShot(PatchFolderDataset):
    name: ClassVar[str] = "patch-zeroshot"
    description: ClassVar[str] = "your own patches, a class folder or zip per class: zero-shot patch classes by prompts"
    task: ClassVar[str] = TASK_ZERO_SHOT
    default_metrics: ClassVar[tuple[str, ...]] = ("classification",)
    selection_metric: ClassVar[str | None] = None
    selection_options: ClassVar[dict[str, Any]] = {}


@hookimpl
def register_datasets(register):
    register(SlidesZeroShot)
    register(PatchZeroShot)
