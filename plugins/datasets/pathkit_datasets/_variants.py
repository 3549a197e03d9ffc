"""Datasets that are another dataset's variant, each one call: its layout read for another task
(`task_variant`), or its synthetic demo (`synthetic_demo`; `slide_cohort` writes a cohort of
synthetic slides with its table)."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SLIDE_PX, MPP = 1024, 0.5


def task_variant(class_name: str, base: type, name: str, task: str, metric: str, description: str) -> type:
    """`base`'s layout read for `task`, scored by `metric`, which trains nothing to select a checkpoint
    on (few-shot episodes, zero-shot prompts, retrieval)."""
    return _subclass(class_name, base, name, description, task=task, default_metrics=(metric,),
                     selection_metric=None, selection_options={})


def synthetic_demo(class_name: str, base: type, name: str, generator: str, writer: Callable[[Path], Path],
                   description: str) -> type:
    """The synthetic demo of `base`, run with tiny-vit and `generator`: `writer(folder)` lays out its
    files under `<path>/v1` (a new layout gets a new version folder)."""

    def make_demo(self: Any, path: str | Path) -> Path:
        return writer(Path(path) / "v1")

    return _subclass(class_name, base, name, description, license="generated locally", synthetic=True,
                     demo_run={"encoder": "tiny-vit", "generator": generator}, make_demo=make_demo)


def _subclass(class_name: str, base: type, name: str, description: str, **attributes: Any) -> type:
    # The class belongs to the module that calls the factory (as enum's and namedtuple's do), so
    # that it pickles by its name there.
    module = sys._getframe(2).f_globals["__name__"]
    return type(class_name, (base,), {"__module__": module, "__qualname__": class_name, "__doc__": description,
                                      "name": name, "description": description, **attributes})


# row(rng, split, i, slide) -> the table line of case i of `split`; it calls slide(slide id, tissue
# blobs) to write the case's slide, which returns the slide's path relative to the table.
Row = Callable[[random.Random, str, int, Callable[[str, list[Any]], str]], str]


def slide_cohort(table: str, header: str, counts: Mapping[str, int], row: Row, seed: int = 0) -> Callable[[Path], Path]:
    """The writer of a demo cohort: synthetic slides under `folder/slides/`, `counts[split]` cases a
    split, and their table `folder/table` (written last: a complete table means a complete demo;
    an existing one is kept)."""

    def write(folder: Path) -> Path:
        from pathkit_core.workspace import atomic_write_text
        from pathkit_sdk import write_synthetic_slide

        if (folder / table).exists():
            return folder
        rng = random.Random(seed)

        def slide(slide_id: str, tissue: list[Any]) -> str:
            write_synthetic_slide(folder / "slides" / f"{slide_id}.tiff", width=SLIDE_PX, height=SLIDE_PX, mpp=MPP,
                                  tissue=tissue, seed=rng.randrange(1 << 30))
            return f"slides/{slide_id}.tiff"

        lines = [header, *(row(rng, split, i, slide) for split, n in counts.items() for i in range(n))]
        atomic_write_text(folder / table, "\n".join(lines) + "\n")
        return folder

    return write
