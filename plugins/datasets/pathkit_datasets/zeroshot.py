"""Datasets of the `zero-shot` task (docs/zero-shot.md): `slides-zeroshot` (the `slides-csv` table;
a slide's tiles pooled by MI-Zero top-k) and `patch-zeroshot` (the `patch-folder` layout, one feature
vector per patch). Nothing is trained: the train and validation parts are read only by the trivial
baselines, and the class names are the prompts' default names (a prompt file can give others)."""

from __future__ import annotations

from pathkit_core import hookimpl
from pathkit_datasets._variants import task_variant
from pathkit_datasets.patch_folder import PatchFolderDataset
from pathkit_datasets.slides_csv import SlidesCSV
from pathkit_tasks import TASK_ZERO_SHOT

SlidesZeroShot = task_variant("SlidesZeroShot", SlidesCSV, "slides-zeroshot", TASK_ZERO_SHOT, "classification",
                              "your own slides + a table slide_path,label[,...]: zero-shot slide classes by prompts")
PatchZeroShot = task_variant("PatchZeroShot", PatchFolderDataset, "patch-zeroshot", TASK_ZERO_SHOT,
                             "classification", "your own patches, a class folder or zip per class: zero-shot patch "
                             "classes by prompts")


@hookimpl
def register_datasets(register):
    register(SlidesZeroShot)
    register(PatchZeroShot)
