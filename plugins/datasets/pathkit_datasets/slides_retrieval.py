"""`slides-retrieval`: the `slides-csv` table (slide_path, label, ...) for the `retrieval` task: each
test slide is queried against the train slides (docs/retrieval.md). The validation part is unused
(nothing is trained), but a cohort split still has all three parts."""

from __future__ import annotations

import random
from typing import Any

from pathkit_core import hookimpl
from pathkit_datasets._variants import slide_cohort, synthetic_demo, task_variant
from pathkit_datasets.patch_folder import PatchFolderDataset
from pathkit_datasets.slides_csv import SlidesCSV
from pathkit_tasks import TASK_RETRIEVAL

SlidesRetrieval = task_variant("SlidesRetrieval", SlidesCSV, "slides-retrieval", TASK_RETRIEVAL, "retrieval",
                               "your own slides + a table slide_path,label[,...]: test slides retrieved from train")
# One feature vector per patch: each test patch is queried against the train patches.
PatchRetrieval = task_variant("PatchRetrieval", PatchFolderDataset, "patch-retrieval", TASK_RETRIEVAL, "retrieval",
                              "your own patches, a class folder or zip per class: test patches retrieved from train")

# --------------------------------------------------------------------------- synthetic demo

# one tissue colour per class (the right answer: a query's nearest slides share its colour)
COLOURS = {"amber": (215, 150, 60), "violet": (140, 70, 170), "teal": (60, 150, 150)}
SPLIT_COUNTS = {"train": 30, "val": 6, "test": 30}


def _demo_row(rng: random.Random, split: str, i: int, slide: Any) -> str:
    from pathkit_sdk import Blob

    label = list(COLOURS)[i % len(COLOURS)]
    jitter = tuple(max(0, min(255, c + rng.randint(-12, 12))) for c in COLOURS[label])
    path = slide(f"SYN-RETR-{split}-{i:02d}", [Blob(0.5, 0.5, rng.uniform(0.2, 0.35), rng.uniform(0.2, 0.35),
                                                    colour=jitter, nuclei_density=rng.uniform(0.5, 1.5),
                                                    nucleus_radius_um=rng.uniform(2.5, 4.0))])
    return f"{path},{label},{split}"


RetrievalDemo = synthetic_demo("RetrievalDemo", SlidesRetrieval, "demo-retrieval", "feature-retrieval",
                               slide_cohort("cohort.csv", "slide_path,label,split", SPLIT_COUNTS, _demo_row),
                               "synthetic slides whose class is their tissue colour (NOT pathology)")


@hookimpl
def register_datasets(register):
    register(SlidesRetrieval)
    register(PatchRetrieval)
    register(RetrievalDemo)
