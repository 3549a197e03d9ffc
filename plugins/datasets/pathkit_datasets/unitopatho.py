"""unitopatho: UniToPatho colorectal polyps and adenoma grading, six classes (Barbano et al. 2021).

Read as IEEE DataPort distributes it: the `800` subset (800 um patches, 1812 x 1812 px at
0.4415 um/px): `unitopatho/800/{train.csv,test.csv}` and `800/<class>/*.png`. The split is the
two tables (`image_id`, `top_label_name`; `wsi` when present groups a slide's patches): 6,270 /
2,399 as eva counts them. The test table is pathkit's test part; a validation part is carved
from training by slide (each slide is one patient). docs/catalogue.md#unitopatho.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError, brief_list
from pathkit_datasets._catalogue import Item, PublicPatchDataset, need
from pathkit_sdk.cohort import cell, read_table

CLASSES = ("HP", "NORM", "TA.HG", "TA.LG", "TVA.HG", "TVA.LG")
TABLES = {"train": "train.csv", "test": "test.csv"}


class UniToPathoDataset(PublicPatchDataset, card="unitopatho"):
    """UniToPatho's 800 subset (see the module docstring)."""

    classes: ClassVar[tuple[str, ...]] = CLASSES

    def items(self, root: Path) -> list[Item]:
        base = root / "800" if (root / "800").is_dir() or not (root / "train.csv").is_file() else root
        need(base, "the 800 subset folder", self.name)
        files = {p.name: p for p in base.rglob("*.png")}
        out, listed = [], set()
        for part, table_name in TABLES.items():
            path = need(base / table_name, f"the {part} table of the 800 subset", self.name)
            table = read_table(path, "UniToPatho table")
            for column in ("image_id", "top_label_name"):
                if column not in table.columns:
                    raise PathkitError(f"{path}: column {column!r} missing; it has: {', '.join(table.columns)}")
            missing = []
            for row in table.rows:
                image_id, label = cell(row.get("image_id")), cell(row.get("top_label_name"))
                listed.add(image_id)
                if image_id not in files:
                    missing.append(image_id)
                    continue
                p = files[image_id]
                out.append(Item(Path(image_id).stem, label, str(p), part, cell(row.get("wsi")),
                                str(p.relative_to(base))))
            if missing:
                raise PathkitError(f"{path} names {len(missing)} image(s) not under {base}: {brief_list(missing, 10)}")
        unlisted = sorted(set(files) - listed)
        if unlisted:
            raise PathkitError(f"dataset {self.name!r}: {len(unlisted)} image(s) under {base} are in neither table: "
                               f"{brief_list(unlisted, 10)}")
        return out


@hookimpl
def register_datasets(register):
    register(UniToPathoDataset)
