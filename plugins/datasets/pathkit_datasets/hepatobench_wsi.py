"""hepatobench-wsi: whole-slide tumour segmentation and tissue quantification (HepatoBench part 2).

A folder of slides with their ground-truth tumour masks (mask images or GeoJSON, QuPath's export
included) and the patch set that trains the window classifier:

    <root>/slides.csv        slide_path, mask[, patient_id][, mpp][, mask_downsample][, mask_mpp]
                             (or <root>/slides/*.tiff with <root>/masks/<slide id>.geojson|png|tif)
    <root>/patches/          the patch set: HepatoBench's seven zips or folders (01_TUM ... 07_STE), or
                             class folders of your own, with a patch -> slide table (patch_slides.csv)

The slides are the test split; the patch set's train and test parts train the head and its
validation part validates it (HepatoBench part 1 splits it at slide level when the patch -> slide
table is there). A slide that gave patches to the patch set is refused in the test split, with the
list (the seed: "WSIs used to derive patches for the classification dataset are explicitly excluded
from the test set"). The synthetic demo (`pathkit run --dataset hepatobench-wsi`) writes liver slides
with known tumour polygons and a patch set cut from other slides. docs/segmentation.md.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._cards import Carded
from pathkit_sdk.cohort import (
    COLUMN_ALIASES,
    CohortDataset,
    check_duplicates,
    cohort_rows,
    drop_missing_files,
    find_column,
    find_table,
    option,
    read_table,
    resolve_file,
)
from pathkit_sdk.masks import MASK_SUFFIXES
from pathkit_tasks import TASK_SEGMENTATION

TABLE_NAMES = ("slides.csv", "slides.tsv", "slides.parquet", "slides.json")
SLIDE_COLUMNS: dict[str, tuple[str, ...]] = {
    **COLUMN_ALIASES,
    "mask": ("mask", "mask_path", "annotation", "annotations", "geojson", "ground_truth", "gt"),
    "mask_downsample": ("mask_downsample", "downsample"),
    "mask_mpp": ("mask_mpp",),
}
OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("table", "path", None, f"the slide table (default: {TABLE_NAMES[0]} in the root, else slides/ and "
                  "masks/ matched by slide id)"),
    DatasetOption("patches", "path", None, "the patch set that trains the window classifier (default <root>/patches): "
                  "HepatoBench's seven zips/folders or class folders, with patch_slides.csv"),
    DatasetOption("patch_options", "str", None, "options for the patch set, as JSON (e.g. {\"split_seed\": 1})"),
    DatasetOption("foreground", "str", "TUM", "the class the mask marks"),
    DatasetOption("overlap", "float", 0.5, "window overlap (0 = non-overlapping; the issue's default 50 %)"),
    DatasetOption("window_um", "float", None, "window side in micrometres (default: the training patches' field "
                  "of view, HepatoBench's 150 px at 0.5 um/px = 75 um; the encoder's tile spec when the patch set "
                  "declares none)"),
    DatasetOption("blend", "average|gaussian", "average", "how overlapping windows are combined"),
    DatasetOption("subdivide", "int", 1, "map cells per stride (finer maps; gaussian blending then differs)"),
    DatasetOption("threshold", "float", None, "foreground probability above which a cell is foreground (default: "
                  "the foreground class is the argmax)"),
    DatasetOption("mask_downsample", "float", None, "level-0 px per mask px of mask images (over tags and sizes)"),
    DatasetOption("mask_classes", "str", None, "GeoJSON classifications that are the foreground, comma-separated "
                  "(default: every area feature)"),
    DatasetOption("drop_training_slides", "bool", False, "leave out (recorded) test slides that gave patches to "
                  "the patch set instead of stopping"),
    option("mpp"),
    option("skip_missing"),
)


class HepatoBenchWSI(Carded, CohortDataset, card="hepatobench-wsi"):
    """Slides with tumour masks, and the patch set of their window classifier (module docstring)."""

    task: ClassVar[str] = TASK_SEGMENTATION
    default_metrics: ClassVar[tuple[str, ...]] = ("segmentation",)
    metric_options: ClassVar[dict[str, dict[str, Any]]] = {"segmentation": {"region": "tissue", "empty": "seed"}}
    option_table: ClassVar[tuple[DatasetOption, ...]] = OPTIONS
    demo_run: ClassVar[dict[str, Any] | None] = {"encoder": "tiny-vit", "generator": "knn"}

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        super().__init__(root, **options)
        self._patch_set: Any = None
        self._facts: dict[str, Any] = {}

    @property
    def tiling_options(self) -> dict[str, Any]:  # type: ignore[override]
        """The windows: the overlap, and their side (`window_um`, else the field of view of the
        patches the head learns on, so that a window shows the head the scale it was trained at)."""
        tiling: dict[str, Any] = {"overlap": float(self.options["overlap"])}
        window = self.options.get("window_um") or (self.training_field_um() if self.root else None)
        if window:
            tiling["tile_um"] = float(window)
        return tiling

    def training_field_um(self) -> float | None:
        """The side in micrometres of the patches that train the window classifier, as their
        dataset declares it (HepatoBench: 150 px at 0.5 um/px = 75 um); None when undeclared."""
        field_of_view = getattr(self.patch_set(), "field_of_view_um", None)
        return field_of_view() if callable(field_of_view) else None

    # ------------------------------------------------------------------ the patch set

    def patch_set(self) -> Any:
        """The patch dataset (hepatobench when its seven class folders are there, else patch-folder)."""
        if self._patch_set is None:
            from pathkit_datasets.hepatobench import CLASS_FOLDERS, HepatoBenchDataset
            from pathkit_datasets.patch_folder import PatchFolderDataset

            root = self.option_path("patches") or (Path(self.root) / "patches" if self.root else None)
            if root is None or not root.is_dir():
                raise PathkitError(f"dataset {self.name!r}: no patch set at {root} to train the window classifier; "
                                   "give --dataset-option patches=DIR (HepatoBench's release or class folders)")
            extra = json.loads(self.options["patch_options"]) if self.options.get("patch_options") else {}
            names = {p.stem if p.is_file() else p.name for p in root.iterdir()}
            cls = HepatoBenchDataset if set(CLASS_FOLDERS) <= names else PatchFolderDataset
            self._patch_set = cls(root, workdir=self.options.get("workdir"), **extra)
        return self._patch_set

    def class_names(self) -> tuple[str, ...]:
        return tuple(self.patch_set().class_names())

    # ------------------------------------------------------------------ slides

    def _slide_rows(self) -> tuple[list[dict[str, Any]], dict[str, str], Path]:
        root = Path(self.root)  # type: ignore[arg-type]
        given = self.option_path("table")
        if given is not None or any((root / n).is_file() for n in TABLE_NAMES):
            path = find_table(root, TABLE_NAMES, given, "slide table", self.layout)
            table = read_table(path, "slide table")
            if find_column(table.columns, "mask", SLIDE_COLUMNS) is None:
                raise PathkitError(f"slide table {path}: no mask column ({', '.join(SLIDE_COLUMNS['mask'])}); it has: "
                                   f"{', '.join(table.columns)}")
            rows = cohort_rows(table, file_key="slide_path", value_key=None, default_mpp=self.mpp_option(),
                               what="slide table")
            kept, excluded = drop_missing_files(rows, skip_missing=bool(self.options.get("skip_missing")), where=path)
            check_duplicates(kept, lambda r: r.case_id, "slide id", path)
            out = []
            for r in kept:
                lowered = {k.strip().lower(): v for k, v in r.meta.items()}
                mask = next((lowered[a] for a in SLIDE_COLUMNS["mask"] if lowered.get(a)), None)
                if not mask:
                    raise PathkitError(f"slide table {path}: {r.place}: no mask for slide {r.case_id}")
                out.append({"case_id": r.case_id, "patient_id": r.patient_id, "slide": r.file,
                            "mask": resolve_file(str(mask), path.parent),
                            "mpp": r.mpp, "place": f"{path.name}, {r.place}",
                            **{k: lowered.get(a) for k in ("mask_downsample", "mask_mpp")
                               for a in SLIDE_COLUMNS[k] if lowered.get(a) not in (None, "")}})
            return out, excluded, path
        from pathkit_core.wsi.slide import find_slides, slide_id_for

        slides_dir = root / "slides"
        if not slides_dir.is_dir():
            raise PathkitError(f"dataset {self.name!r}: {root} has neither a slide table ({', '.join(TABLE_NAMES)}) "
                               f"nor a slides/ folder; expected layout: {self.layout}")
        out = []
        for slide in find_slides([slides_dir]):
            sid = slide_id_for(slide)
            masks = [p for ext in MASK_SUFFIXES if (p := root / "masks" / f"{sid}{ext}").exists()]
            if len(masks) != 1:
                raise PathkitError(f"dataset {self.name!r}: slide {slide.name} needs exactly one mask "
                                   f"masks/{sid}.<{'|'.join(e.lstrip('.') for e in MASK_SUFFIXES)}>; found "
                                   f"{', '.join(m.name for m in masks) or 'none'}")
            out.append({"case_id": sid, "patient_id": sid, "slide": slide, "mask": masks[0],
                        "mpp": self.mpp_option(), "place": f"slides/{slide.name}"})
        return out, {}, slides_dir

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        rows, excluded, where = self._slide_rows()
        missing = [f"{r['case_id']} ({r['mask']})" for r in rows if not Path(r["mask"]).is_file()]
        if missing:
            raise PathkitError(f"{where}: {len(missing)} mask file(s) do not exist: {', '.join(missing[:20])}")
        patches = self.patch_set()
        parts = patches.splits()
        patch_cases = {c.case_id: c for part in parts for c in patches.cases(part)}
        patch_slides = Counter(str(c.meta["slide_id"]) for c in patch_cases.values() if c.meta.get("slide_id"))
        used = [r for r in rows if r["case_id"] in patch_slides or Path(r["slide"]).name in patch_slides]
        if used:
            listing = ", ".join(f"{r['case_id']} ({patch_slides.get(r['case_id'], 0)} patches)" for r in used[:20])
            if not self.options.get("drop_training_slides"):
                raise PathkitError(
                    f"dataset {self.name!r}: {len(used)} test slide(s) gave patches to the patch set that trains the "
                    f"window classifier: {listing}. They cannot be in the segmentation test set (a leak); remove them, "
                    "or pass --dataset-option drop_training_slides=true to leave them out (recorded)")
            excluded.update({r["case_id"]: "gave patches to the patch classifier's training set" for r in used})
            rows = [r for r in rows if r not in used]
        # the tumour region under QuPath's own class name in the GeoJSON
        region = "Tumor" if self.options["foreground"] == "TUM" else None
        stitch = {"blend": self.options["blend"], "subdivide": int(self.options["subdivide"]),
                  "threshold": self.options.get("threshold"), "region_name": region}
        field_um = self.training_field_um()
        cases: dict[str, Case] = {}
        for r in rows:
            if r["case_id"] in patch_cases:
                raise PathkitError(f"dataset {self.name!r}: slide id {r['case_id']!r} is also a patch's id; rename one")
            target = {"mask": str(r["mask"]), "foreground": self.options["foreground"]}
            for key in ("mask_downsample", "mask_mpp"):
                value = r.get(key) if r.get(key) is not None else (self.options.get(key) if key == "mask_downsample"
                                                                     else None)
                if value not in (None, ""):
                    target[key] = float(value)
            if self.options.get("mask_classes"):
                target["mask_classes"] = [c.strip() for c in str(self.options["mask_classes"]).split(",")]
            meta: dict[str, Any] = {"stitch": stitch}
            if field_um:
                meta["training_field_um"] = field_um
            if r.get("mpp") is not None:
                meta["mpp"] = float(r["mpp"])
            cases[r["case_id"]] = Case(r["case_id"], r["patient_id"], target=target, slides=(Path(r["slide"]),),
                                       meta=meta)
        cases.update(patch_cases)
        splits = {"train": [*parts.get("train", []), *parts.get("test", [])], "val": list(parts.get("val", [])),
                  "test": [r["case_id"] for r in rows]}
        formats = Counter(Path(r["mask"]).suffix.lower() for r in rows)
        self._facts = {"n_slides": len(rows), "mask_formats": dict(formats), "training_slides": sorted(patch_slides),
                       "n_patch_slides": len(patch_slides), "refused_slides": [r["case_id"] for r in used],
                       "training_field_um": field_um, "window_um": self.tiling_options.get("tile_um")}
        patch_facts = patches.split_facts()
        self._split_facts = {
            "source": patch_facts.get("source", "drawn"),
            "description": (f"test: {len(rows)} slide(s) from {where.name}; train/val: the patch set's "
                            f"{patch_facts.get('description', 'split')} (its test part joins training)"),
            "counts": {k: len(v) for k, v in splits.items()}, "patch_split": patch_facts,
        }
        excluded.update({f"patch:{k}": v for k, v in patches.excluded_cases().items()})
        return cases, splits, excluded

    def validate(self) -> None:
        super().validate()
        self.patch_set().validate()

    def summary(self) -> dict[str, Any]:
        self._ensure()
        patch = self.patch_set().summary()
        out = {**self._facts, "protocol": "slides are the test set; slides that gave patches are refused",
               "patch_set": {k: v for k, v in patch.items() if k != "warnings"}}
        if patch.get("warnings"):
            out["warnings"] = [f"patch set: {w}" for w in patch["warnings"]]
        return out

    # ------------------------------------------------------------------ demo

    def make_demo(self, path: str | Path) -> Path:
        """Synthetic liver slides with known tumour polygons (`annotations/<id>.geojson`, QuPath's
        format, and `masks/<id>.png` at downsample 16; the table uses each form for every other
        slide), their true class areas (`truth/<id>.json`) and a patch set cut from eight other
        slides (seven HepatoBench-named folders of 150 px PNGs and patch_slides.csv)."""
        root = Path(path)
        if (root / "slides.csv").exists() and (root / "patches" / "patch_slides.csv").exists():
            return root
        make_liver_demo(root)
        return root


DEMO_TEST_SEEDS = (101, 102, 103)
DEMO_TRAIN_SEEDS = (1, 2, 3, 4, 5, 6, 7, 8)
DEMO_PATCHES_PER_CLASS = 8  # per training slide
DEMO_PATCH_PX = 150
DEMO_PATCH_UM = 75.0  # HepatoBench's patches: 150 px at 0.5 um/px (the demo slides' own resolution)
DEMO_MASK_DOWNSAMPLE = 16


def make_liver_demo(root: Path, *, test_seeds: tuple[int, ...] = DEMO_TEST_SEEDS,
                    train_seeds: tuple[int, ...] = DEMO_TRAIN_SEEDS, size: tuple[int, int] = (6144, 4608),
                    patches_per_class: int = DEMO_PATCHES_PER_CLASS, patch_um: float = DEMO_PATCH_UM) -> Path:
    """Write the demo: test slides, their ground truth in both forms, the true class areas, and the
    patch set (docstring of `HepatoBenchWSI.make_demo`)."""
    import numpy as np
    from PIL import Image

    from pathkit_core.workspace import atomic_path, atomic_write_json, atomic_write_text
    from pathkit_core.wsi.masks import MaskFrame, geojson_features, rasterise, write_geojson
    from pathkit_datasets._liver_synthetic import (
        CLASSES,
        liver_layout,
        patch_at,
        pure_patch_origins,
        write_liver_slide,
    )
    from pathkit_datasets.hepatobench import CLASS_FOLDERS
    from pathkit_sdk.masks import write_png

    for sub in ("slides", "masks", "annotations", "truth", "patches"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    rows = [("slide_path", "mask", "patient_id", "mask_downsample")]
    for i, seed in enumerate(test_seeds):
        sid = f"LIVER-{seed}"
        layout = liver_layout(seed, *size)
        write_liver_slide(root / "slides" / f"{sid}.tiff", layout, seed=seed)
        tumour = layout.tumour()
        write_geojson(root / "annotations" / f"{sid}.geojson", geojson_features(tumour, "Tumor"))
        frame = MaskFrame.over(layout.width, layout.height, DEMO_MASK_DOWNSAMPLE)
        write_png(root / "masks" / f"{sid}.png", rasterise(tumour, frame))
        atomic_write_json(root / "truth" / f"{sid}.json", {"slide_id": sid, "mpp": layout.mpp,
                                                           "areas_mm2": layout.areas_mm2()})
        # alternate the two ground-truth forms, so the demo reads both
        mask = f"annotations/{sid}.geojson" if i % 2 == 0 else f"masks/{sid}.png"
        rows.append((f"slides/{sid}.tiff", mask, f"P-{seed}", "" if i % 2 == 0 else str(DEMO_MASK_DOWNSAMPLE)))
    table = [("patch", "slide_id", "patient_id")]
    folders = {name: folder for folder, name in CLASS_FOLDERS.items()}
    counts: Counter[str] = Counter()
    for seed in train_seeds:
        layout = liver_layout(seed, *size)
        render = layout.renderer()
        rng = np.random.default_rng(seed)
        for k, name in enumerate(CLASSES):
            for x0, y0 in pure_patch_origins(layout, k, patch_um, patches_per_class, rng):
                counts[name] += 1
                file = f"{name}_{counts[name]}.png"
                pixels = patch_at(layout, render, x0, y0, patch_um, DEMO_PATCH_PX)
                out = root / "patches" / folders[name] / file
                out.parent.mkdir(parents=True, exist_ok=True)
                with atomic_path(out) as tmp:
                    Image.fromarray(pixels).save(tmp, format="PNG")
                table.append((file, f"LIVER-{seed}", f"P-{seed}"))
    for text, target in ((rows, root / "slides.csv"), (table, root / "patches" / "patch_slides.csv")):
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(text)
        atomic_write_text(target, buffer.getvalue())
    return root


@hookimpl
def register_datasets(register):
    register(HepatoBenchWSI)
