"""Datasets of the `few-shot` task (docs/few-shot.md): `slides-fewshot` (the `slides-csv` table,
a slide's tiles mean-pooled), `patch-fewshot` (the `patch-folder` layout, one feature vector per
patch: UNI's patch-level protocol) and the synthetic `demo-fewshot` patches. The support sets are
drawn from the train split; the validation part is unused (nothing is trained across episodes)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from pathkit_core import hookimpl
from pathkit_datasets._variants import synthetic_demo, task_variant
from pathkit_datasets.patch_folder import PatchFolderDataset
from pathkit_datasets.slides_csv import SlidesCSV
from pathkit_tasks import TASK_FEW_SHOT

SlidesFewShot = task_variant("SlidesFewShot", SlidesCSV, "slides-fewshot", TASK_FEW_SHOT, "few-shot",
                             "your own slides + a table slide_path,label[,...]: k-shot curves over episodes")
PatchFewShot = task_variant("PatchFewShot", PatchFolderDataset, "patch-fewshot", TASK_FEW_SHOT, "few-shot",
                            "your own patches, one class folder or zip per class: k-shot curves over episodes")

# --------------------------------------------------------------------------- synthetic demo

DEMO_CLASSES = ("dense", "fibrous", "dotted")  # hepatobench's first three demo textures
DEMO_COUNTS = {"train": 34, "val": 2, "test": 12}  # per class: 32 shots fit
DEMO_PX = 64


def _mixed(index: int, rng: Any) -> Any:
    """The class's texture blended with another class's (weight 0.55-0.8 for its own) under pixel
    noise: few shots do not always find the class, many shots do (the curve rises)."""
    import numpy as np

    from pathkit_datasets.hepatobench import demo_texture

    other = int(rng.choice([c for c in range(len(DEMO_CLASSES)) if c != index]))
    weight = rng.uniform(0.55, 0.8)
    mixed = weight * demo_texture(index, rng, DEMO_PX) + (1 - weight) * demo_texture(other, rng, DEMO_PX)
    return np.clip(mixed + rng.normal(0, 30, mixed.shape), 0, 255).astype(np.uint8)


def write_demo(root: Path, seed: int = 0) -> Path:
    """Class folders of synthetic PNG patches (the class is the texture) and `patches.csv` with the
    split (written last: a complete table means a complete demo)."""
    import numpy as np

    from pathkit_core.workspace import atomic_write_bytes, atomic_write_text
    from pathkit_datasets.hepatobench import _png

    table = root / "patches.csv"
    if table.exists():
        return root
    rng = np.random.default_rng(seed)
    rows = [("patch", "slide_id", "split")]
    for index, name in enumerate(DEMO_CLASSES):
        n = 0
        for split, count in DEMO_COUNTS.items():
            for _ in range(count):
                n += 1
                file = f"{name}_{n:03d}.png"
                pixels = _mixed(index, rng)
                atomic_write_bytes(root / name / file, _png(pixels))
                rows.append((file, f"S-{name}-{n:03d}", split))
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    atomic_write_text(table, buffer.getvalue())
    return root


FewShotDemo = synthetic_demo("FewShotDemo", PatchFewShot, "demo-fewshot", "simpleshot", write_demo,
                             "synthetic patches whose class is their texture (NOT pathology)")


@hookimpl
def register_datasets(register):
    register(SlidesFewShot)
    register(PatchFewShot)
    register(FewShotDemo)
