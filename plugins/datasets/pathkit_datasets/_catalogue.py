"""The shared reader of the public patch benchmarks (mhist, bach, crc-100k, pcam, breakhis, bracs,
unitopatho): each dataset module lists its publisher's files as `Item`s (class, official part,
patient or slide); this base checks them, applies the official split, carves a validation part
from training where the publisher gives none, and reports the counts beside the published ones.

Nothing here downloads: the user points --dataset-root at the folder they downloaded. A class
folder or split file that is absent, a split file naming files that are not there, an image that
cannot be read: each is refused (or, for single images, excluded) naming the file. docs/catalogue.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import Case, DatasetOption, PathkitError, brief_list
from pathkit_datasets._cards import Carded
from pathkit_datasets._protocols import PatchClassification
from pathkit_sdk.cohort import CohortDataset, check_part_classes

PARTS = ("train", "val", "test")
OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("val_fraction", "float", 0.1, "share of training patients (or images, where the publisher "
                  "names none) carved into validation when the publisher gives no validation part"),
    DatasetOption("split_seed", "int", 0, "seed of that validation carve (the official parts never change)"),
    DatasetOption("shots", "int", None, "few-shot: keep this many training images per class (drawn with "
                  "shot_seed, after any validation carve); validation and test stay whole"),
    DatasetOption("shot_seed", "int", 0, "seed of the few-shot draw"),
    DatasetOption("check_images", "bool", True, "open every image's header before encoding (unreadable images "
                  "are excluded with the reason); false skips the check on a download you trust"),
)


@dataclass(frozen=True)
class Item:
    """One image as its publisher lists it: `ref` (a file, or an HDF5 row reference), its class,
    its official part (None: not in the split in use), the patient/slide it comes from ("" when
    unknown) and its path under the root for messages."""

    case_id: str
    label: str
    ref: str
    part: str | None
    group: str = ""
    where: str = ""


def need(path: Path, what: str, dataset: str) -> Path:
    """`path` when it exists, else a one-line error naming it and what it should be."""
    if not path.exists():
        raise PathkitError(f"dataset {dataset!r}: {path} is missing ({what}); is the download complete?")
    return path


def release_path(root: Path, top: str, *inner: str) -> Path:
    """`root/top/inner...`, or `root/inner...` when the root given is the release's `top` folder itself."""
    full = root.joinpath(top, *inner)
    return root.joinpath(*inner) if not full.exists() and (root / inner[0]).is_dir() else full


def class_folders(parent: Path, classes: Sequence[str], dataset: str,
                  suffixes: tuple[str, ...]) -> dict[str, list[Path]]:
    """{class: its image files, sorted} of `parent/<class>/`; an absent or empty class folder is an
    error naming it (a partial download)."""
    need(parent, f"the folder of class folders {', '.join(classes)}", dataset)
    out: dict[str, list[Path]] = {}
    for name in classes:
        folder = parent / name
        if not folder.is_dir():
            raise PathkitError(f"dataset {dataset!r}: class folder {folder} is missing (expected {', '.join(classes)} "
                               f"under {parent}); is the download complete?")
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in suffixes
                       and not p.name.startswith("."))
        if not files:
            raise PathkitError(f"dataset {dataset!r}: class folder {folder} holds no {'/'.join(suffixes)} image")
        out[name] = files
    return out


def _carve(items: Sequence[Item], fraction: float, seed: int, dataset: str) -> set[str]:
    """Case ids of a validation part drawn from the training items: by patient/slide where the
    publisher names them, else by image; stratified by (the patient's most common) class."""
    from pathkit_sdk.splits import carve_validation

    labels: dict[str, Counter[str]] = defaultdict(Counter)
    for item in items:
        labels[item.group or item.case_id][item.label] += 1
    strata = {g: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for g, c in labels.items()}
    try:
        chosen = carve_validation(strata, fraction, seed)
    except PathkitError as exc:
        raise PathkitError(f"dataset {dataset!r}: cannot carve a validation part from training ({exc})") from None
    return {i.case_id for i in items if (i.group or i.case_id) in chosen}


def few_shot(train: Sequence[str], labels: dict[str, str], shots: int, seed: int, dataset: str) -> list[str]:
    """`shots` training cases per class, drawn without replacement (seeded), in their listed order;
    a class with fewer is an error naming it."""
    import numpy as np

    if shots < 1:
        raise PathkitError(f"dataset {dataset!r}: option shots={shots} must be 1 or more")
    by_class: dict[str, list[str]] = defaultdict(list)
    for case_id in train:
        by_class[labels[case_id]].append(case_id)
    short = {c: len(v) for c, v in by_class.items() if len(v) < shots}
    if short:
        raise PathkitError(f"dataset {dataset!r}: shots={shots} but class(es) have fewer training images: "
                           + ", ".join(f"{c} {n}" for c, n in sorted(short.items())))
    rng = np.random.default_rng(seed)
    chosen = {c for label in sorted(by_class) for c in rng.choice(by_class[label], size=shots, replace=False)}
    return [c for c in train if c in chosen]


class PublicPatchDataset(Carded, PatchClassification, CohortDataset):
    """A public patch benchmark read as published (see the module docstring). A subclass names its
    card (data/cards.toml), sets `classes` and implements `items()`."""

    option_table: ClassVar[tuple[DatasetOption, ...]] = OPTIONS
    classes: ClassVar[tuple[str, ...]] = ()
    # The split's counts as its source states them (docs/catalogue.md), and the source (its card).
    published_counts: ClassVar[dict[str, int]] = {}
    split_source: ClassVar[str] = ""
    # Which official part plays pathkit's test part, where the source has no test part (eva's "val").
    test_part_note: ClassVar[str] = ""
    patch_px: ClassVar[int | None] = None
    patch_mpp: ClassVar[float | None] = None
    magnification: ClassVar[str] = ""
    download_page: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.classes:
            cls.metric_options = {"classification": {"classes": list(cls.classes)}}

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        super().__init__(root, **options)
        self._items: list[Item] = []

    def items(self, root: Path) -> list[Item]:
        raise NotImplementedError

    def class_names(self) -> tuple[str, ...]:
        return self.classes

    def field_of_view_um(self) -> float | None:
        return float(self.patch_px) * float(self.patch_mpp) if self.patch_px and self.patch_mpp else None

    def _problems(self, items: Iterable[Item]) -> dict[str, str]:
        """{case id: why} of images that cannot be read (header and, for PNG, checksums)."""
        from pathkit_core.features.images import split_ref
        from pathkit_datasets._image_checks import image_size_problem, probe_image

        out: dict[str, str] = {}
        for item in items:
            path, member = split_ref(item.ref)
            if member is not None:  # HDF5 rows: the arrays' shapes were checked when listed
                continue
            size = path.stat().st_size
            problem = image_size_problem(size) or probe_image(path.read_bytes())[1]
            if problem:
                out[item.case_id] = f"{item.where or path.name}: {problem}"
        return out

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        root = Path(self.root)
        items = [i for i in self.items(root) if i.part is not None]
        twice = [k for k, n in Counter(i.case_id for i in items).items() if n > 1]
        if twice:
            raise PathkitError(f"dataset {self.name!r}: {len(twice)} image name(s) appear twice under {root}: "
                               f"{brief_list(sorted(twice), 10)}")
        unknown = sorted({i.label for i in items} - set(self.classes))
        if unknown:
            raise PathkitError(f"dataset {self.name!r}: unknown class(es) {', '.join(unknown)} under {root}; "
                               f"expected {', '.join(self.classes)}")
        excluded = self._problems(items) if self.options.get("check_images", True) else {}
        usable = [i for i in items if i.case_id not in excluded]
        parts: dict[str, list[str]] = {p: [i.case_id for i in usable if i.part == p] for p in PARTS}
        carved = ""
        if not parts["val"]:
            train = [i for i in usable if i.part == "train"]
            val = _carve(train, float(self.options["val_fraction"]), int(self.options["split_seed"]), self.name)
            parts = {"train": [c for c in parts["train"] if c not in val],
                     "val": [c for c in parts["train"] if c in val], "test": parts["test"]}
            unit = "patient" if any(i.group for i in train) else "image"
            carved = (f"; validation carved from training by pathkit ({unit}-level, stratified, seed "
                      f"{self.options['split_seed']}, {self.options['val_fraction']:g} of training {unit}s)")
        labels = {i.case_id: i.label for i in usable}
        if self.options.get("shots") is not None:
            parts["train"] = few_shot(parts["train"], labels, int(self.options["shots"]),
                                      int(self.options["shot_seed"]), self.name)
            carved += (f"; few-shot: {self.options['shots']} training image(s) per class (seed "
                       f"{self.options['shot_seed']})")
        check_part_classes(parts, labels, f"dataset {self.name!r}")
        self._items = items
        self._split_facts = {
            "source": "published",
            "description": f"published split: {self.split_source}{carved}",
            "published_counts": dict(self.published_counts),
            "counts": {p: len(v) for p, v in parts.items()},
            **({"test_part": self.test_part_note} if self.test_part_note else {}),
        }
        cases = {i.case_id: Case(i.case_id, i.group or i.case_id, target=i.label, images=(i.ref,),
                                 meta={"file": i.where, "official_part": i.part})
                 for i in usable}
        return cases, parts, excluded

    def summary(self) -> dict[str, Any]:
        facts = self.split_facts()
        usable = [i for i in self._items if i.case_id not in self.excluded_cases()]
        out: dict[str, Any] = {
            "protocol": facts.get("description"),
            "split": facts,
            "n_images": len(self._items),
            "n_excluded": len(self._items) - len(usable),
            "class_counts": dict(Counter(i.label for i in usable)),
            "official_counts": dict(Counter(i.part for i in self._items)),
            "magnification": self.magnification,
        }
        official = out["official_counts"]
        if self.published_counts and any(official.get(p, 0) != n for p, n in self.published_counts.items()):
            shown = ", ".join(f"{p} {official.get(p, 0)} (published {n})" for p, n in self.published_counts.items())
            out["warnings"] = [f"the folder's official parts differ from the published counts: {shown}; a subset "
                               "or a replica, or an incomplete download; scores are not comparable with published "
                               "ones"]
        return out
