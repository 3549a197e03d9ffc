"""patch-folder: a user's own patch images, one class folder (or zip) per class, ImageNet style.

The class of a patch is its folder or zip, never its file name. Zips are read in place. Images
that are empty or unreadable are excluded with the reason before anything is encoded. Splits: a
`split` column of the patch table is used as given; else a patch -> slide (-> patient) table gives a
patient-disjoint stratified split; without a table a seeded stratified split over patches is drawn
and reported, loudly, as image-level and leaky. See docs/hepatobench.md for every option.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError, brief_list
from pathkit_core.workspace import sha256_file
from pathkit_datasets._cards import Carded
from pathkit_datasets._protocols import PatchClassification
from pathkit_sdk.cohort import (
    COLUMN_ALIASES,
    CohortDataset,
    cell,
    check_part_classes,
    class_order,
    column_split,
    drawn_split,
    file_split,
    option,
    read_table,
    require_columns,
)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
# Patch tables found at the root when option `table` is not given.
TABLE_NAMES = ("patches.csv", "patches.parquet", "patch_slides.csv", "patch_slides.parquet")
# The cohort conventions' column names, plus a patch table's own: the patch and its slide.
PATCH_COLUMNS: dict[str, tuple[str, ...]] = {
    **COLUMN_ALIASES,
    "image_path": ("patch", "patch_id", *COLUMN_ALIASES["image_path"], "file_name"),
    "slide_id": ("slide_id", "slide", "wsi", "wsi_id"),
}
OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("table", "path", None, "patch -> slide (-> patient, -> split) table (CSV, Parquet, JSON); "
                  f"default: {' or '.join(TABLE_NAMES)} in the root; without one the split is image-level"),
    DatasetOption("drop_unmapped", "bool", False, "leave out patches the table does not list (recorded as "
                  "excluded) instead of stopping"),
    DatasetOption("classes", "str", None, "class order, comma-separated (default: natural order of the names)"),
    *(option(name) for name in ("splits_file", "split_seed", "val_fraction", "test_fraction")),
)
LEAKY_WARNING = ("the split is IMAGE-LEVEL and LEAKY: no patch -> slide table was given, so patches of one "
                 "slide sit on both sides of the split; scores are optimistic and not comparable with "
                 "slide-level results")


# What reading a folder or zip finds per image: (class, reference, source, name, size, problem).
Found = tuple[str, str, str, str, "tuple[int, int] | None", "str | None"]


@dataclass(frozen=True)
class Patch:
    """One image of the dataset: its case id, class, reference for the encoder and what was found."""

    case_id: str
    label: str
    ref: str  # a file path, or "<zip>::<member>"
    source: str  # the class folder or zip it came from
    name: str  # its path inside that folder or zip
    size: tuple[int, int] | None
    problem: str | None


def _is_image(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return (name.lower().endswith(IMAGE_SUFFIXES) and not base.startswith(".") and "__MACOSX/" not in name)


class PatchFolderDataset(Carded, PatchClassification, CohortDataset, card="patch-folder"):
    """Class folders or zips of patch images under the root (see the module docstring)."""

    option_table: ClassVar[tuple[DatasetOption, ...]] = OPTIONS
    # Patch side the data is meant to have; others are accepted (the encoder resizes) and counted.
    expected_px: ClassVar[int | None] = None
    # Micrometres per pixel of the patches as declared by the release (None: not declared); with
    # `expected_px` it gives the field of view a head trained on them sees (`field_of_view_um`).
    patch_mpp: ClassVar[float | None] = None

    def field_of_view_um(self) -> float | None:
        """The side of a training patch in micrometres, from the declared size and resolution."""
        if self.expected_px and self.patch_mpp:
            return float(self.expected_px) * float(self.patch_mpp)
        return None

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        super().__init__(root, **options)
        self._patches: list[Patch] | None = None
        self._class_names: tuple[str, ...] | None = None
        self._inputs: dict[str, dict[str, Any]] = {}
        self._notes: list[str] = []
        self._table_facts: dict[str, Any] = {}

    # ------------------------------------------------------------------ classes

    def class_of(self, source: str) -> str:
        """The class a folder or zip stem names (patch-folder: the name itself)."""
        return source

    def class_names(self) -> tuple[str, ...]:
        # once per opened dataset: tasks ask for it for every case (checks, targets, outputs)
        if self._class_names is None:
            self._class_names = class_order([p.label for p in self.patches()], self.options.get("classes"),
                                            self._root())
        return self._class_names

    # ------------------------------------------------------------------ reading

    def _sources(self) -> list[Path]:
        root = self._root()
        zips = {p.stem: p for p in sorted(root.iterdir()) if p.is_file() and p.suffix.lower() == ".zip"}
        folders = {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith((".", "_"))}
        both = sorted(set(zips) & set(folders))
        if both:
            self._notes.append(f"class(es) {', '.join(both)} are both a zip and a folder; the zip is read")
        sources = [zips[k] for k in sorted(zips)] + [folders[k] for k in sorted(folders) if k not in zips]
        if not sources:
            raise PathkitError(f"dataset {self.name!r}: {root} holds no class folder or zip of patch images")
        return sources

    def _root(self) -> Path:
        if self.root is None:
            raise PathkitError(f"dataset {self.name!r} needs --dataset-root (a folder of class folders or zips)")
        if not self.root.is_dir():
            raise PathkitError(f"dataset {self.name!r}: root {self.root} is not a folder")
        return self.root

    def patches(self) -> list[Patch]:
        """Every image found, readable or not, in folder then file order (read once)."""
        if self._patches is None:
            found: list[Found] = []
            for source in self._sources():
                label = self.class_of(source.stem if source.is_file() else source.name)
                images = self._zip_images(source, label) if source.is_file() else self._folder_images(source, label)
                found.extend(images)
            self._patches = self._with_ids(found)
        return self._patches

    def _zip_images(self, path: Path, label: str) -> Iterator[Found]:
        from pathkit_datasets._image_checks import image_size_problem, probe_image

        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise PathkitError(f"{path}: not a zip archive ({exc}); expected one zip (or folder) of patch images "
                               f"per class") from None
        with archive:
            members = [i for i in archive.infolist() if not i.is_dir() and _is_image(i.filename)]
            # Two members of one name: unzipping keeps only the last, and their references
            # (<zip>::<name>) could not tell them apart.
            names = Counter(i.filename for i in members)
            twice = sorted(n for n, k in names.items() if k > 1)
            if twice:
                raise PathkitError(f"{path}: {len(twice)} member name(s) appear more than once in the zip: "
                                   f"{brief_list(twice, 10)}; each image needs its own name (rebuild the zip)")
            try:
                for info in members:
                    # the declared size is checked before a byte is inflated (zipfile reads no
                    # more than it declares)
                    too_big = image_size_problem(info.file_size)
                    if too_big:
                        yield (label, f"{path}::{info.filename}", path.name, info.filename, None, too_big)
                        continue
                    data = archive.read(info) if info.file_size else b""
                    yield (label, f"{path}::{info.filename}", path.name, info.filename, *probe_image(data))
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise PathkitError(f"{path}: the zip is damaged ({exc})") from None
        self._inputs[path.name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size, "class": label,
                                   "n_images": len(members)}

    def _folder_images(self, folder: Path, label: str) -> Iterator[Found]:
        from pathkit_datasets._image_checks import image_size_problem, probe_image

        files = sorted(p for p in folder.rglob("*") if p.is_file() and _is_image(p.relative_to(folder).as_posix()))
        listing = hashlib.sha256()
        for path in files:
            rel = path.relative_to(folder).as_posix()
            listing.update(f"{rel}\0{path.stat().st_size}\n".encode())
            too_big = image_size_problem(path.stat().st_size)
            yield (label, str(path), folder.name, rel,
                   *((None, too_big) if too_big else probe_image(path.read_bytes())))
        self._inputs[folder.name + "/"] = {"listing_sha256": listing.hexdigest(), "class": label,
                                           "n_images": len(files)}

    @staticmethod
    def _with_ids(found: list[Found]) -> list[Patch]:
        """Case ids are file stems when they are unique, else `<folder>_<path>` for every patch."""
        stems = [Path(f[3]).stem for f in found]
        unique = len(set(stems)) == len(stems)
        patches = []
        for (label, ref, source, name, size, problem), stem in zip(found, stems, strict=True):
            long_id = f"{Path(source).stem}_{Path(name).with_suffix('').as_posix()}".replace("/", "_")
            patches.append(Patch(stem if unique else long_id, label, ref, source, name, size, problem))
        return patches

    # ------------------------------------------------------------------ table and split

    def _table(self) -> tuple[Path, dict[str, dict[str, str]]] | None:
        """(path, patch key -> {"slide_id", "patient_id", "split", "place"}) of the patch table, if any."""
        path = self.option_path("table")
        if path is None:
            path = next((self._root() / n for n in TABLE_NAMES if (self._root() / n).is_file()), None)
            if path is None:
                return None
        elif not path.is_file():
            raise PathkitError(f"dataset {self.name!r}: patch table {path} (option table) does not exist")
        table = read_table(path, "patch table")
        cols = require_columns(table, ["image_path"], ["slide_id", "patient_id", "split"], PATCH_COLUMNS,
                               what="patch table")
        if cols["slide_id"] is None and cols["split"] is None:
            raise PathkitError(f"patch table {path}: needs a slide_id ({', '.join(PATCH_COLUMNS['slide_id'])}) or a "
                               f"split column; it has: {', '.join(table.columns)}")
        rows: dict[str, dict[str, str]] = {}
        for index, row in enumerate(table.rows):
            key = cell(row.get(cols["image_path"]))
            if not key:
                raise PathkitError(f"patch table {table.where(index)}: empty patch name")
            if key in rows:
                raise PathkitError(f"patch table {table.where(index)}: patch {key!r} is listed twice")
            rows[key] = {k: cell(row.get(c)) for k, c in cols.items() if c is not None and k != "image_path"}
            rows[key]["place"] = table.places[index]
        self._table_facts = {"path": str(path), "sha256": sha256_file(path), "n_rows": len(rows)}
        return path, rows

    @staticmethod
    def _keys(patch: Patch) -> tuple[str, ...]:
        """The names a table may give a patch by: its path in the folder/zip, file name, stem, id."""
        base = patch.name.rsplit("/", 1)[-1]
        return (patch.name, f"{patch.source}/{patch.name}", base, Path(base).stem, patch.case_id)

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        """Cases of the readable patches, the split (given, from the table, or image-level) and the
        patches left out with their reasons."""
        patches = self.patches()
        excluded = {p.case_id: f"{p.source}/{p.name}: {p.problem}" for p in patches if p.problem}
        usable = [p for p in patches if p.problem is None]
        found = self._table()
        rows: dict[str, dict[str, str]] = {}
        if found is not None:
            path, table = found
            unmapped = []
            for p in usable:
                hit = next((table[k] for k in self._keys(p) if k in table), None)
                if hit is None:
                    unmapped.append(p)
                else:
                    rows[p.case_id] = hit
            self._table_facts["n_unmapped"] = len(unmapped)
            if unmapped:
                shown = ", ".join(f"{p.source}/{p.name}" for p in unmapped[:20])
                more = f" and {len(unmapped) - 20} more" if len(unmapped) > 20 else ""
                if not self.options.get("drop_unmapped"):
                    raise PathkitError(
                        f"patch table {path}: {len(unmapped)} patch(es) have no row: {shown}{more}. Add them, or "
                        "pass --dataset-option drop_unmapped=true to leave them out (they are then listed as "
                        "excluded)")
                excluded.update({p.case_id: f"not in the patch table {path.name}" for p in unmapped})
                usable = [p for p in usable if p.case_id in rows]
        patients = {p.case_id: (rows.get(p.case_id, {}).get("patient_id") or rows.get(p.case_id, {}).get("slide_id")
                                or p.case_id) for p in usable}
        labels = {p.case_id: p.label for p in usable}
        parts, facts = self._split(found, rows, patients, labels)
        check_part_classes(parts, labels, f"dataset {self.name!r}")
        self._split_facts = facts
        cases = {}
        for p in usable:
            meta = {"source": p.source, "file": p.name}
            if rows.get(p.case_id, {}).get("slide_id"):
                meta["slide_id"] = rows[p.case_id]["slide_id"]
            cases[p.case_id] = Case(p.case_id, patients[p.case_id], target=p.label, images=(p.ref,), meta=meta)
        return cases, parts, excluded

    def _split(self, found: tuple[Path, Any] | None, rows: dict[str, dict[str, str]], patients: dict[str, str],
               labels: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, Any]]:
        """The split file, the table's split column, or a split drawn over patients (slide level)
        or, without a table, over patches (image level, flagged leaky)."""
        given_file = self.option_path("splits_file")
        if given_file is not None:
            parts, facts = file_split(given_file, patients)
            return parts, {**facts, "protocol": "given split (splits_file)"}
        if found is not None and any(r.get("split") for r in rows.values()):
            splits = {cid: (rows[cid].get("split") or None, rows[cid]["place"]) for cid in patients}
            parts, facts = column_split(found[0], splits, patients)
            return parts, {**facts, "protocol": "given split (the table's split column)"}
        level = "slide" if found is not None else "image"
        # what no two parts share: patients when the table names them, else slides, else images
        unit = "image" if found is None else (
            "patient" if any(rows.get(c, {}).get("patient_id") for c in patients) else "slide")
        seed = int(self.options.get("split_seed") or 0)
        fractions = (float(self.options["val_fraction"]), float(self.options["test_fraction"]))
        parts, facts = drawn_split(self.name, patients, seed=seed, fractions=fractions,
                                   workdir=self.options.get("workdir"), labels=labels, unit=unit,
                                   file_name=f"{level}-level-seed{seed}-val{fractions[0]:g}-test{fractions[1]:g}.csv")
        if level == "slide":
            return parts, {**facts, "protocol": f"slide-level, {unit}-disjoint (drawn over {unit}s)"}
        return parts, {**facts, "protocol": "image-level, LEAKY (drawn over patches)", "warnings": [LEAKY_WARNING]}

    def validate(self) -> None:
        if not any(p.problem is None for p in self.patches()):
            raise PathkitError(f"dataset {self.name!r}: no readable patch image under {self.root}")
        super().validate()

    def summary(self) -> dict[str, Any]:
        """Inputs with checksums, counts per class, patch sizes, exclusions, the split and its protocol."""
        facts = self.split_facts()
        patches, excluded = self.patches(), self.excluded_cases()
        sizes = Counter(f"{p.size[0]}x{p.size[1]}" for p in patches if p.size)
        expected = f"{self.expected_px}x{self.expected_px}" if self.expected_px else None
        out: dict[str, Any] = {
            "protocol": facts.get("protocol"),
            "split": {k: v for k, v in facts.items() if k not in ("protocol", "warnings")},
            "inputs": dict(self._inputs),
            "n_images": len(patches),
            "n_usable": sum(p.problem is None for p in patches),
            "n_excluded": len(excluded),
            "class_counts": dict(Counter(p.label for p in patches if p.case_id not in excluded)),
            "patch_sizes": dict(sizes),
        }
        if self._table_facts:
            out["table"] = dict(self._table_facts)
        if self._notes:
            out["notes"] = list(self._notes)
        warnings = list(facts.get("warnings", []))
        if expected:
            out["expected_size"] = expected
            out["n_other_size"] = sum(n for size, n in sizes.items() if size != expected)
            if out["n_other_size"]:
                warnings.append(f"{out['n_other_size']} patch(es) are not {expected} px (accepted: the encoder "
                                "resizes every patch; sizes in the dataset summary)")
        elif len(sizes) > 1:
            common = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
            shown = ", ".join(f"{size} px: {n}" for size, n in common)
            more = f" and {len(sizes) - 5} more" if len(sizes) > 5 else ""
            warnings.append(f"patches of {len(sizes)} sizes in one dataset ({shown}{more}): accepted, but the encoder "
                            "resizes each to its input, so a patch's field of view (and its micrometres per pixel) "
                            "differs with its size; cut every patch at one size and resolution for comparable "
                            "features")
        if warnings:
            out["warnings"] = warnings
        return out


@hookimpl
def register_datasets(register):
    register(PatchFolderDataset)
