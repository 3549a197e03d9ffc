"""`legacy-demo`: synthetic slides whose score (the share of dense tissue) is known, for the
`slide-regression` task of the 0.1.0 example plugin (its task, `regression` metric and
`mean-pool-regressor` head).

Written as the 0.1.0 plugin guide said: slides from `pathkit_core.wsi.synthetic`, the split from
`pathkit_core.splits` (a split column checked with `split_part` / `check_user_split`, else a seeded
patient-disjoint split drawn with `load_or_draw_split` and kept beside the table).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from pathkit_example_plugin.regression import TASK_SLIDE_REGRESSION

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, Dataset, PathkitError
from pathkit_core.splits import check_user_split, load_or_draw_split, split_part
from pathkit_core.wsi.synthetic import Blob, write_synthetic_slide

SLIDE_PX, MPP = 768, 0.5
DENSE, SPARSE = (150, 70, 150), (225, 150, 190)
N_SLIDES = 12


def write_demo(folder: Path, seed: int = 0) -> Path:
    """The slides and `scores.csv` (written last: a complete table means a complete demo)."""
    table = folder / "scores.csv"
    if table.exists():
        return folder
    rng = random.Random(seed)
    lines = ["slide,patient,score"]
    for i in range(N_SLIDES):
        slide_id, score = f"LEG_{i:02d}", round(rng.uniform(0.1, 0.9), 3)
        width = 0.42
        blobs = [Blob(0.5 - width * (1 - score) / 2, 0.5, width * score / 2 + 1e-3, 0.3, colour=DENSE,
                      nuclei_density=2.0, nucleus_radius_um=4.5),
                 Blob(0.5 + width * score / 2, 0.5, width * (1 - score) / 2 + 1e-3, 0.3, colour=SPARSE,
                      nuclei_density=0.4, nucleus_radius_um=2.5)]
        write_synthetic_slide(folder / "slides" / f"{slide_id}.tiff", width=SLIDE_PX, height=SLIDE_PX, mpp=MPP,
                              tissue=blobs, seed=rng.randrange(1 << 30))
        lines.append(f"{slide_id},P{i:02d},{score}")
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


class LegacyDemo(Dataset):
    """Synthetic slides of a known score (NOT pathology)."""

    name: ClassVar[str] = "legacy-demo"
    description: ClassVar[str] = "synthetic slides of a known score (0.1.0-era test plugin; NOT pathology)"
    task: ClassVar[str] = TASK_SLIDE_REGRESSION
    license: ClassVar[str] = "generated locally"
    default_metrics: ClassVar[tuple[str, ...]] = ("regression",)
    demo_run: ClassVar[dict[str, Any] | None] = {"encoder": "tiny-vit", "generator": "mean-pool-regressor"}

    def make_demo(self, path: str | Path) -> Path:
        return write_demo(Path(path) / "v1")

    def _rows(self) -> list[dict[str, str]]:
        table = Path(self.root or ".") / "scores.csv"
        try:
            with open(table, newline="", encoding="utf-8") as fh:
                return list(csv.DictReader(fh))
        except OSError as exc:
            raise PathkitError(f"legacy-demo: cannot read {table} ({exc})") from None

    def validate(self) -> None:
        for row in self._rows():
            if not (Path(self.root) / "slides" / f"{row['slide']}.tiff").is_file():
                raise PathkitError(f"legacy-demo: slide {row['slide']} is missing")

    def splits(self) -> dict[str, list[str]]:
        rows = self._rows()
        patients = {row["slide"]: row["patient"] for row in rows}
        where = str(Path(self.root) / "scores.csv")
        if rows and "split" in rows[0]:
            parts: dict[str, list[str]] = {"train": [], "val": [], "test": []}
            for row in rows:
                parts[split_part(row["split"], where)].append(row["slide"])
            check_user_split(parts, patients, where)
            return parts
        drawn = load_or_draw_split(Path(self.root) / "split.csv", patients, fractions=(0.25, 0.25), seed=0)
        return drawn.parts

    def cases(self, split: str) -> Iterator[Case]:
        wanted = set(self.splits()[split])
        for row in self._rows():
            if row["slide"] in wanted:
                yield Case(case_id=row["slide"], patient_id=row["patient"], target=float(row["score"]),
                           slides=(Path(self.root) / "slides" / f"{row['slide']}.tiff",))


@hookimpl
def register_datasets(register):
    register(LegacyDemo)
