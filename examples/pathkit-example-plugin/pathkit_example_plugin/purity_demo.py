"""`demo-purity`: synthetic slides whose tumour purity is known, for the `slide-regression` task.

Each slide holds two pieces of tissue side by side: tumour (dense, large nuclei) and stroma
(sparse, small nuclei), their areas in the ratio purity : 1 - purity. The release layout is what
a user's own cohort would look like: `purity.csv` (columns slide, purity, split) and `slides/`.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, Dataset, PathkitError
from pathkit_example_plugin.regression import TASK_SLIDE_REGRESSION

SLIDE_PX, MPP = 1536, 0.5
TUMOUR, STROMA = (150, 70, 150), (225, 150, 190)
SPLIT_COUNTS = {"train": 16, "val": 6, "test": 6}


def write_demo(folder: Path, seed: int = 0) -> Path:
    """Write the demo slides and `purity.csv` (last, so a complete table means a complete demo)."""
    from pathkit_core.workspace import atomic_write_text
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    table = folder / "purity.csv"
    if table.exists():
        return folder
    rng = random.Random(seed)
    rows = []
    for split, n in SPLIT_COUNTS.items():
        for i in range(n):
            slide_id = f"PUR_{split}_{i:02d}"
            purity = round(rng.uniform(0.1, 0.9), 3)
            # two ellipses of equal height whose widths split the tissue area purity : 1 - purity
            width = 0.42
            blobs = [Blob(0.5 - width * (1 - purity) / 2, 0.5, width * purity / 2 + 1e-3, 0.3, colour=TUMOUR,
                          nuclei_density=2.0, nucleus_radius_um=4.5),
                     Blob(0.5 + width * purity / 2, 0.5, width * (1 - purity) / 2 + 1e-3, 0.3, colour=STROMA,
                          nuclei_density=0.4, nucleus_radius_um=2.5)]
            write_synthetic_slide(folder / "slides" / f"{slide_id}.tiff", width=SLIDE_PX, height=SLIDE_PX, mpp=MPP,
                                  tissue=blobs, seed=rng.randrange(1 << 30))
            rows.append((slide_id, purity, split))
    lines = ["slide,purity,split", *(f"{s},{p},{sp}" for s, p, sp in rows)]
    atomic_write_text(table, "\n".join(lines) + "\n")
    return folder


class PurityDemo(Dataset):
    """Synthetic slides of known tumour purity (NOT pathology): 16 / 6 / 6 train / val / test."""

    name: ClassVar[str] = "demo-purity"
    description: ClassVar[str] = "synthetic slides of known tumour purity for slide-regression (NOT pathology)"
    task: ClassVar[str] = TASK_SLIDE_REGRESSION
    license: ClassVar[str] = "generated locally"
    default_metrics: ClassVar[tuple[str, ...]] = ("regression",)
    demo_run: ClassVar[dict[str, Any] | None] = {"encoder": "tiny-vit", "generator": "mean-pool-regressor"}

    def make_demo(self, path: str | Path) -> Path:
        return write_demo(Path(path) / "v1")

    def _rows(self) -> list[dict[str, str]]:
        table = Path(self.root or ".") / "purity.csv"
        try:
            with open(table, newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
        except OSError as exc:
            raise PathkitError(f"demo-purity: cannot read {table} ({exc}); expected <root>/purity.csv with columns "
                               "slide, purity, split and the slides in <root>/slides/") from None
        if rows and not {"slide", "purity", "split"} <= set(rows[0]):
            raise PathkitError(f"{table}: needs columns slide, purity, split (has {', '.join(rows[0])})")
        return rows

    def validate(self) -> None:
        for row in self._rows():
            slide = Path(self.root) / "slides" / f"{row['slide']}.tiff"
            if not slide.is_file():
                raise PathkitError(f"demo-purity: slide {slide} is missing")

    def splits(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {part: [] for part in SPLIT_COUNTS}
        for row in self._rows():
            out[row["split"]].append(row["slide"])
        return out

    def cases(self, split: str) -> Iterator[Case]:
        for row in self._rows():
            if row["split"] == split:
                try:
                    target: Any = float(row["purity"])
                except ValueError:
                    target = row["purity"]  # the task's validation names the case and the expected form
                yield Case(case_id=row["slide"], patient_id=row["slide"], target=target,
                           slides=(Path(self.root) / "slides" / f"{row['slide']}.tiff",))


@hookimpl
def register_datasets(register):
    register(PurityDemo)
