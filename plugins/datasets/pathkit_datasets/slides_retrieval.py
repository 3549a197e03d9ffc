"""`slides-retrieval`: the `slides-csv` table (slide_path, label, ...) for the `retrieval` task: each
test slide is queried against the train slides (docs/retrieval.md). The validation part is unused
(nothing is trained), but a cohort split still has all three parts."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_datasets.patch_folder import PatchFolderDataset
from pathkit_datasets.slides_csv import SlidesCSV
from pathkit_tasks import TASK_RETRIEVAL


class SlidesRetrieval(SlidesCSV):
    name: ClassVar[str] = "slides-retrieval"
    description: ClassVar[str] = "your own slides + a table slide_path,label[,...]: test slides retrieved from train"
    task: ClassVar[str] = TASK_RETRIEVAL
    default_metrics: ClassVar[tuple[str, ...]] = ("retrieval",)
    selection_metric: ClassVar[str | None] = None
    selection_options: ClassVar[dict[str, Any]] = {}


class PatchRetrieval(PatchFolderDataset):
    """The `patch-folder` layout for the `retrieval` task: each test patch queried against the train
    patches (one feature vector per patch)."""

    name: ClassVar[str] = "patch-retrieval"
    description: ClassVar[str] = "your own patches, a class folder or zip per class: test patches retrieved from train"
    task: ClassVar[str] = TASK_RETRIEVAL
    default_metrics: ClassVar[tuple[str, ...]] = ("retrieval",)
    selection_metric: ClassVar[str | None] = None
    selection_options: ClassVar[dict[str, Any]] = {}


# --------------------------------------------------------------------------- synthetic demo

SLIDE_PX, MPP = 1024, 0.5
# one tissue colour per class (the right answer: a query's nearest slides share its colour)
COLOURS = {"amber": (215, 150, 60), "violet": (140, 70, 170), "teal": (60, 150, 150)}
SPLIT_COUNTS = {"train": 30, "val": 6, "test": 30}


def write_demo(folder: Path, seed: int = 0) -> Path:
    """The demo slides and `cohort.csv` (written last: a complete table means a complete demo)."""
    from pathkit_core.workspace import atomic_write_text
    from pathkit_sdk import Blob, write_synthetic_slide

    table = folder / "cohort.csv"
    if table.exists():
        return folder
    rng = random.Random(seed)
    names = list(COLOURS)
    lines = ["slide_path,label,split"]
    for split, n in SPLIT_COUNTS.items():
        for i in range(n):
            label = names[i % len(names)]
            slide_id = f"SYN-RETR-{split}-{i:02d}"
            jitter = tuple(max(0, min(255, c + rng.randint(-12, 12))) for c in COLOURS[label])
            blob = Blob(0.5, 0.5, rng.uniform(0.2, 0.35), rng.uniform(0.2, 0.35), colour=jitter,
                        nuclei_density=rng.uniform(0.5, 1.5), nucleus_radius_um=rng.uniform(2.5, 4.0))
            write_synthetic_slide(folder / "slides" / f"{slide_id}.tiff", width=SLIDE_PX, height=SLIDE_PX, mpp=MPP,
                                  tissue=[blob], seed=rng.randrange(1 << 30))
            lines.append(f"slides/{slide_id}.tiff,{label},{split}")
    atomic_write_text(table, "\n".join(lines) + "\n")
    return folder


class RetrievalDemo(SlidesRetrieval):
    """Synthetic slides (NOT pathology) of three tissue colours, one per class: 30 train, 6 val (unused), 30 test."""

    name: ClassVar[str] = "demo-retrieval"
    description: ClassVar[str] = "synthetic slides whose class is their tissue colour (NOT pathology)"
    license: ClassVar[str] = "generated locally"
    synthetic: ClassVar[bool] = True
    demo_run: ClassVar[dict[str, Any] | None] = {"encoder": "tiny-vit", "generator": "feature-retrieval"}

    def make_demo(self, path: str | Path) -> Path:
        return write_demo(Path(path) / "v1")


@hookimpl
def register_datasets(register):
    register(SlidesRetrieval)
    register(PatchRetrieval)
    register(RetrievalDemo)
