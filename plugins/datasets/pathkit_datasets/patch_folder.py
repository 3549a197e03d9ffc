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
from pathkit_core.contracts import TASK_PATCH_CLASSIFICATION, Case, Dataset, PathkitError
from pathkit_core.features.images import probe_image

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
TABLE_NAMES = ("patches.csv", "patches.parquet", "patch_slides.csv", "patch_slides.parquet")
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "patch": ("patch", "patch_id", "image", "file", "filename", "file_name", "path"),
    "slide_id": ("slide_id", "slide", "wsi", "wsi_id"),
    "patient_id": ("patient_id", "patient", "case_id"),
    "split": ("split", "part"),
}
SPLIT_NAMES = ("train", "val", "test")
OPTION_DEFAULTS: dict[str, Any] = {
    "table": None,  # patch -> slide (-> patient, -> split) table; else patches.csv/patch_slides.csv at the root
    "drop_unmapped": False,  # patches missing from the table: excluded (True) or the run stops (False)
    "classes": None,  # class order (default: sorted class names)
    "seed": 0,
    "test_fraction": 0.2,
    "val_fraction": 0.15,  # of the patches (or patients) left for training
    "view": None,
}
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


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class PatchFolderDataset(Dataset):
    """Class folders or zips of patch images under the root (see the module docstring)."""

    name: ClassVar[str] = "patch-folder"
    description: ClassVar[str] = "your own patches: one class folder or zip per class, optional patch -> slide table"
    task: ClassVar[str] = TASK_PATCH_CLASSIFICATION
    license: ClassVar[str] = "the user's data"
    default_metrics: ClassVar[tuple[str, ...]] = ("classification",)
    selection_metric: ClassVar[str | None] = "classification:balanced_accuracy"
    selection_options: ClassVar[dict[str, Any]] = {"selection": True}
    # Patch side the data is meant to have; others are accepted (the encoder resizes) and counted.
    expected_px: ClassVar[int | None] = None

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        unknown = sorted(set(options) - set(OPTION_DEFAULTS) - {"encoder", "workdir"})
        if unknown:
            raise PathkitError(f"dataset {self.name!r}: unknown option(s) {', '.join(unknown)}; "
                               f"known: {', '.join(sorted(OPTION_DEFAULTS))}")
        super().__init__(root, **{**OPTION_DEFAULTS, **options})
        self._patches: list[Patch] | None = None
        self._inputs: dict[str, dict[str, Any]] = {}
        self._parts: dict[str, list[str]] | None = None
        self._excluded: dict[str, str] = {}
        self._facts: dict[str, Any] = {}

    # ------------------------------------------------------------------ classes

    def class_of(self, source: str) -> str:
        """The class a folder or zip stem names (patch-folder: the name itself)."""
        return source

    def class_names(self) -> tuple[str, ...]:
        if self.options.get("classes"):
            return tuple(str(c) for c in self.options["classes"])
        return tuple(sorted({p.label for p in self.patches()}))

    # ------------------------------------------------------------------ reading

    def _sources(self) -> list[Path]:
        root = self._root()
        zips = {p.stem: p for p in sorted(root.iterdir()) if p.is_file() and p.suffix.lower() == ".zip"}
        folders = {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith((".", "_"))}
        both = sorted(set(zips) & set(folders))
        if both:
            self._facts.setdefault("notes", []).append(
                f"class(es) {', '.join(both)} are both a zip and a folder; the zip is read")
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
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise PathkitError(f"{path}: not a zip archive ({exc}); expected one zip (or folder) of patch images "
                               f"per class") from None
        with archive:
            members = [i for i in archive.infolist() if not i.is_dir() and _is_image(i.filename)]
            try:
                for info in members:
                    data = archive.read(info) if info.file_size else b""
                    yield (label, f"{path}::{info.filename}", path.name, info.filename, *probe_image(data))
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise PathkitError(f"{path}: the zip is damaged ({exc})") from None
        self._inputs[path.name] = {"sha256": sha256_of(path), "bytes": path.stat().st_size, "class": label,
                                   "n_images": len(members)}

    def _folder_images(self, folder: Path, label: str) -> Iterator[Found]:
        files = sorted(p for p in folder.rglob("*") if p.is_file() and _is_image(p.relative_to(folder).as_posix()))
        listing = hashlib.sha256()
        for path in files:
            rel = path.relative_to(folder).as_posix()
            listing.update(f"{rel}\0{path.stat().st_size}\n".encode())
            yield (label, str(path), folder.name, rel, *probe_image(path.read_bytes()))
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

    # ------------------------------------------------------------------ table

    def _table_path(self) -> Path | None:
        given = self.options.get("table")
        if given:
            path = Path(given)
            path = path if path.is_absolute() or path.exists() else self._root() / path
            if not path.is_file():
                raise PathkitError(f"dataset {self.name!r}: patch table {given} not found")
            return path
        return next((self._root() / n for n in TABLE_NAMES if (self._root() / n).is_file()), None)

    def _table(self, path: Path) -> dict[str, dict[str, str]]:
        """Patch key -> {"slide_id", "patient_id", "split"} from the table (CSV or Parquet)."""
        import polars as pl

        try:
            frame = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path, infer_schema=False)
        except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a bad table
            raise PathkitError(f"patch table {path}: cannot be read ({exc})") from None
        lower = {c.lower().strip(): c for c in frame.columns}
        cols = {key: next((lower[a] for a in aliases if a in lower), None) for key, aliases in COLUMN_ALIASES.items()}
        if cols["patch"] is None or (cols["slide_id"] is None and cols["split"] is None):
            raise PathkitError(f"patch table {path}: needs a patch column ({', '.join(COLUMN_ALIASES['patch'])}) "
                               f"and a slide_id or split column; has {', '.join(frame.columns)}")
        rows: dict[str, dict[str, str]] = {}
        for lineno, row in enumerate(frame.iter_rows(named=True), start=2):
            key = str(row[cols["patch"]] or "").strip()
            if not key:
                raise PathkitError(f"patch table {path}, row {lineno}: empty patch name")
            if key in rows:
                raise PathkitError(f"patch table {path}, row {lineno}: patch {key!r} is listed twice")
            rows[key] = {k: str(row[c]).strip() for k, c in cols.items() if c is not None and k != "patch"
                         and row[c] is not None and str(row[c]).strip()}
        return rows

    @staticmethod
    def _keys(patch: Patch) -> tuple[str, ...]:
        """The names a table may give a patch by: its path in the folder/zip, file name, stem, id."""
        base = patch.name.rsplit("/", 1)[-1]
        return (patch.name, f"{patch.source}/{patch.name}", base, Path(base).stem, patch.case_id)

    # ------------------------------------------------------------------ splits

    def _draw(self) -> dict[str, list[str]]:
        from pathkit_core.splits import SplitParams, as_records, check_disjoint, make_splits

        usable = [p for p in self.patches() if p.problem is None]
        self._excluded = {p.case_id: f"{p.source}/{p.name}: {p.problem}" for p in self.patches() if p.problem}
        table_path = self._table_path()
        facts: dict[str, Any] = {}
        if table_path is not None:
            table = self._table(table_path)
            rows: dict[str, dict[str, str]] = {}
            unmapped = []
            for p in usable:
                hit = next((table[k] for k in self._keys(p) if k in table), None)
                if hit is None:
                    unmapped.append(p)
                else:
                    rows[p.case_id] = hit
            if unmapped:
                shown = ", ".join(f"{p.source}/{p.name}" for p in unmapped[:20])
                more = f" and {len(unmapped) - 20} more" if len(unmapped) > 20 else ""
                if not self.options.get("drop_unmapped"):
                    raise PathkitError(
                        f"patch table {table_path}: {len(unmapped)} patch(es) have no row: {shown}{more}. Add them, "
                        "or pass --dataset-option drop_unmapped=true to leave them out (they are then listed as "
                        "excluded)")
                self._excluded.update({p.case_id: f"not in the patch table {table_path.name}" for p in unmapped})
                usable = [p for p in usable if p.case_id in rows]
            self._patient = {cid: r.get("patient_id") or r.get("slide_id") or cid for cid, r in rows.items()}
            self._slide = {cid: r.get("slide_id", "") for cid, r in rows.items()}
            facts["table"] = {"path": str(table_path), "sha256": sha256_of(table_path), "n_rows": len(table),
                              "n_unmapped": len(unmapped)}
            given = {cid: r["split"] for cid, r in rows.items() if "split" in r}
            if given:
                bad = sorted({s for s in given.values() if s not in SPLIT_NAMES})
                if bad or len(given) != len(rows):
                    raise PathkitError(f"patch table {table_path}: the split column must give every patch one of "
                                       f"{', '.join(SPLIT_NAMES)} (found {bad or 'empty cells'})")
                parts = {s: [p.case_id for p in usable if given[p.case_id] == s] for s in SPLIT_NAMES}
                check_disjoint(parts, self._patient, f"patch table {table_path}")
                facts["protocol"] = "given split (patch table), patient-disjoint"
                return self._done(parts, facts)
            facts["protocol"] = "slide-level, patient-disjoint (stratified draw over patients)"
            group = self._patient
        else:
            self._patient = {p.case_id: p.case_id for p in usable}
            self._slide = {}
            facts["protocol"] = "image-level, LEAKY (stratified draw over patches)"
            facts.setdefault("warnings", []).append(LEAKY_WARNING)
            group = self._patient
        params = SplitParams(n_splits=1, test_fraction=float(self.options["test_fraction"]),
                             val_fraction=float(self.options["val_fraction"]), seed=int(self.options["seed"]))
        records = as_records((p.case_id, group[p.case_id], p.label) for p in usable)
        parts = make_splits(records, params, name=f"dataset {self.name!r}").fold(1)
        facts["split_seed"] = params.seed
        return self._done(parts, facts)

    def _done(self, parts: dict[str, list[str]], facts: dict[str, Any]) -> dict[str, list[str]]:
        self._facts.update(facts)
        self._parts = parts
        return parts

    def splits(self) -> dict[str, list[str]]:
        return dict(self._parts if self._parts is not None else self._draw())

    def cases(self, split: str) -> Iterator[Case]:
        parts = self.splits()
        wanted = set(parts.get(split, []))
        for p in self.patches():
            if p.case_id in wanted:
                meta = {"source": p.source, "file": p.name}
                if self._slide.get(p.case_id):
                    meta["slide_id"] = self._slide[p.case_id]
                yield Case(p.case_id, self._patient[p.case_id], target=p.label, images=(p.ref,), meta=meta)

    def excluded_cases(self) -> dict[str, str]:
        self.splits()
        return dict(self._excluded)

    def validate(self) -> None:
        patches = self.patches()
        unknown = sorted({p.label for p in patches} - set(self.class_names()))
        if unknown:
            raise PathkitError(f"dataset {self.name!r}: class folder(s) {', '.join(unknown)} are not among the "
                               f"declared classes {', '.join(self.class_names())}")
        if not any(p.problem is None for p in patches):
            raise PathkitError(f"dataset {self.name!r}: no readable patch image under {self.root}")
        self.splits()

    def summary(self) -> dict[str, Any]:
        """Inputs with checksums, counts per class, patch sizes, exclusions, the split protocol."""
        self.splits()
        patches = self.patches()
        sizes = Counter(f"{p.size[0]}x{p.size[1]}" for p in patches if p.size)
        expected = f"{self.expected_px}x{self.expected_px}" if self.expected_px else None
        out: dict[str, Any] = {
            "protocol": self._facts.get("protocol"),
            "inputs": dict(self._inputs),
            "n_images": len(patches),
            "n_usable": sum(p.problem is None for p in patches),
            "n_excluded": len(self._excluded),
            "class_counts": dict(Counter(p.label for p in patches if p.case_id not in self._excluded)),
            "patch_sizes": dict(sizes),
            "split_counts": {k: len(v) for k, v in self.splits().items()},
        }
        if expected:
            out["n_other_size"] = sum(n for size, n in sizes.items() if size != expected)
            out["expected_size"] = expected
        for key in ("table", "split_seed", "notes"):
            if key in self._facts:
                out[key] = self._facts[key]
        warnings = list(self._facts.get("warnings", []))
        if expected and out["n_other_size"]:
            warnings.append(f"{out['n_other_size']} patch(es) are not {expected} px (accepted: the encoder resizes "
                            f"every patch; sizes in the dataset summary)")
        if warnings:
            out["warnings"] = warnings
        return out


@hookimpl
def register_datasets(register):
    register(PatchFolderDataset)
