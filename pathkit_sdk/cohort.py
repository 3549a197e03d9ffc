"""Users' own cohorts: the table conventions every generic dataset shares (docs/file-formats.md,
"Cohort tables"). Public: the built-in table datasets and a plugin's own use it alike
(docs/api/sdk.md).

The generic datasets (`slides-csv`, `slides-reports`, and the patch-folder and VQA tables built
on this module) read a plain table whose rows are slides (or images, or questions) and build
their cases with the same rules, so a researcher learns them once:

- **Tables** (`read_table`): CSV, TSV, Parquet, a JSON list of objects, JSONL, or the
  REG/PathBench JSON layout `{"train": [...], "val": [...], "test": [...]}` (whose keys then give
  each row's split). Every row knows where it came from (`Table.where(i)`: "cohort.csv, line 5").
- **Columns** (`COLUMN_ALIASES`, `find_column`, `require_columns`): matched case-insensitively
  by their aliases (`slide_path` also as `slide`, `wsi_path`, `path`, ...); a missing required
  column is an error naming the file, the accepted names and the columns the table has.
- **Rows** (`cohort_rows` -> `CohortRow`): the file column (`slide_path`, `image_path`) is
  absolute or relative to the table's folder; `case_id` defaults to the file's slide id (its
  name without extension); `patient_id` defaults to the case (a user's `patient_id` always
  wins over any dataset rule); optional `split` (train/val/test and aliases), `mpp` (level-0
  micrometres per pixel, over the file's own; `--dataset-option mpp=...` fills rows without
  one), `cohort`; for slide tables `slide_reader` (the reader that opens the slide) and
  `tissue_geojson` (a user-edited tissue mask, relative to the table's folder), kept in `Case.meta`
  as one value per slide and fed to tiling (docs/wsi.md, "Per-slide tiling inputs"); every other
  column is kept in `Case.meta` under its own name.
- **Checks** (`check_duplicates`, `drop_missing_files`): duplicate case ids or files are an
  error listing them with their rows; files that do not exist are listed with their rows and
  stop the run before tiling, unless `--skip-missing` (then they are left out and recorded).
- **Cases of several slides** (`group_rows`): with `case=patient` a patient's rows form one case
  (id = patient id, slides in table order); their labels and splits must agree.
- **Classes** (`class_order`): the distinct labels, in natural sort order ("2" before "10"), or
  the order the user gives (option `classes=a,b`); the order is recorded in the split facts.
- **Splits** (`choose_split`): the user's when given (the `split` column, or option
  `splits_file=FILE`: CSV `case_id,split` or the JSON REG layout), used exactly and only
  checked (pathkit_sdk.splits.check_user_split); otherwise drawn once (seeded, patient-disjoint,
  stratified by label where labels allow) and saved in the workspace
  (`<workdir>/splits/<dataset>/`), never in the user's folder. Its parts, for datasets with
  their own split rules: `file_split` (a split file), `column_split` (per-row values),
  `drawn_split` (a draw, said in the log); each returns (parts, split facts), the facts being
  what `Dataset.split_facts()` returns (`part_counts` adds cases and patients per part).
- **Datasets** (`CohortDataset`): the lazy load / splits / cases / exclusions / validation
  machinery of every table-driven dataset (the report datasets' base too); a subclass
  implements `load()`. `COHORT_OPTIONS` are the options the generic datasets share.

Nothing here names a benchmark; benchmark rules (REG patient ids, TCGA barcodes) stay in their
datasets.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import Case, Dataset, DatasetOption, PathkitError, case_id_problem, repeats_text

log = logging.getLogger(__name__)

TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".json", ".jsonl")
SPLIT_LAYOUT_KEYS = ("train", "val", "test")
MISSING_CELL = {"", "na", "nan", "none", "null", "n/a"}

# Column names a table may use for each field, matched case-insensitively, first match wins.
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "slide_path": ("slide_path", "slide", "slide_file", "wsi_path", "wsi", "path", "file", "filename"),
    "image_path": ("image_path", "image", "patch_path", "patch", "path", "file", "filename"),
    "case_id": ("case_id", "id", "slide_id", "image_id"),
    "patient_id": ("patient_id", "patient", "subject_id", "subject"),
    "label": ("label", "class", "target", "diagnosis_label", "y"),
    "report": ("report", "text", "caption", "findings"),
    "split": ("split", "set", "partition", "subset"),
    "mpp": ("mpp", "mpp_x", "microns_per_pixel", "um_per_px"),
    "cohort": ("cohort", "site", "centre", "center", "source"),
    "slide_reader": ("slide_reader",),
    "tissue_geojson": ("tissue_geojson", "tissue_mask_geojson"),
}
# Per-slide tiling inputs a slide table may carry (docs/file-formats.md, "Cohort tables").
SLIDE_TILING_KEYS = ("slide_reader", "tissue_geojson")

# Options every generic cohort dataset takes (a subclass adds its own to `option_table`).
COHORT_OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("table", "path", None, "the cohort table (CSV, TSV, Parquet, JSON, JSONL); relative paths are "
                  "against the dataset root; default: the dataset's file name in the root"),
    DatasetOption("splits_file", "path", None, "your split: CSV case_id,split or JSON {\"train\": [ids], \"val\": "
                  "[...], \"test\": [...]}; used exactly as written (instead of a split column)"),
    DatasetOption("split_seed", "int", 0, "seed of the split pathkit draws when you give none"),
    DatasetOption("val_fraction", "float", 0.15, "share of patients in the drawn validation part"),
    DatasetOption("test_fraction", "float", 0.15, "share of patients in the drawn test part"),
    DatasetOption("mpp", "float", None, "level-0 micrometres per pixel of slides without an mpp column value "
                  "(over the slide file's own resolution)"),
    DatasetOption("case", "slide|patient", "slide", "one case per slide, or one per patient (its slides together)"),
    DatasetOption("skip_missing", "bool", False, "leave out rows whose file does not exist (recorded) instead of "
                  "stopping; `pathkit run --skip-missing` sets it"),
)


def option(name: str, options: Sequence[DatasetOption] = COHORT_OPTIONS) -> DatasetOption:
    """The shared option `name` (to list it in a dataset's own `option_table`)."""
    return next(o for o in options if o.name == name)


# --------------------------------------------------------------------------- tables


@dataclass
class Table:
    """A table's rows (dicts keyed by column name), its columns and where each row is, in the
    user's terms (`places`: "line 5" for CSV/TSV/JSONL, "item 3" for a JSON list (0-based, as
    JSON tools count), "row 4" for Parquet, "val item 0" for the REG layout)."""

    path: Path
    columns: list[str]
    rows: list[dict[str, Any]]
    places: list[str]
    # the split each row was listed under, for the REG/PathBench layout {"train": [...], ...}
    layout_split: list[str] | None = None

    def where(self, index: int) -> str:
        """Where row `index` is: "cohort.csv, line 5"."""
        return f"{self.path.name}, {self.places[index]}"


def cell(value: Any) -> str:
    """A cell as stripped text; "" for empty, None, NaN and the usual missing-value spellings."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = str(value).strip()
    return "" if text.lower() in MISSING_CELL else text


def _read_text(path: Path, what: str) -> str:
    from pathkit_core.workspace import check_regular_file

    if path.exists():
        check_regular_file(path, what)  # a named pipe would block the read
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PathkitError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise PathkitError(f"{what} {path} is a folder, not a table file") from None
    except OSError as exc:
        raise PathkitError(f"{what} {path} cannot be read: {exc}") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PathkitError(f"{what} {path} is not UTF-8 text: byte {exc.start} (line {line}); re-save it as "
                           "UTF-8") from None


def _object_rows(path: Path, items: Sequence[Any], what: str, unit: str, first: int) -> list[dict[str, Any]]:
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PathkitError(f"{what} {path}: {unit} {i + first} is a {type(item).__name__}, not an object of "
                               "columns")
    return [dict(item) for item in items]


def read_table(path: str | Path, what: str = "table") -> Table:
    """Read a cohort table (see the module docstring for the formats); errors name the file and
    the line. An empty table is an error. The table's content keys the runs made from it
    (`pathkit_core.sources.note_read`)."""
    from pathkit_core.sources import note_read

    path = Path(path)
    note_read(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import polars as pl

        if not path.is_file():
            raise PathkitError(f"{what} {path} does not exist")
        try:
            rows = pl.read_parquet(path).to_dicts()
        except Exception as exc:  # noqa: BLE001 - polars raises several exception types for bad files
            raise PathkitError(f"{what} {path}: cannot read it as Parquet ({exc})") from None
        table = Table(path, list(rows[0]) if rows else [], rows, [f"row {i + 1}" for i in range(len(rows))])
    elif suffix in (".json", ".jsonl"):
        text = _read_text(path, what)
        table = _json_table(path, text, what, jsonl=suffix == ".jsonl")
    elif suffix in (".csv", ".tsv", ".txt"):
        text = _read_text(path, what)
        dialect = "excel-tab" if suffix == ".tsv" or (suffix == ".txt" and "\t" in text.split("\n", 1)[0]) \
            else "excel"
        reader = csv.DictReader(io.StringIO(text), dialect=dialect)
        header = [c.strip() for c in (reader.fieldnames or [])]
        rows, places = [], []
        for row in reader:
            if None in row:
                raise PathkitError(f"{what} {path}: line {reader.line_num} has more cells than the header "
                                   f"({len(header)} columns)")
            rows.append({k.strip(): v for k, v in row.items()})
            places.append(f"line {reader.line_num}")
        table = Table(path, header, rows, places)
    else:
        raise PathkitError(f"{what} {path}: unknown table format {path.suffix!r}; use "
                           f"{', '.join(TABLE_SUFFIXES)}")
    if not table.rows:
        raise PathkitError(f"{what} {path} has no rows")
    return table


def _json_table(path: Path, text: str, what: str, *, jsonl: bool) -> Table:
    if jsonl:
        items, lines = [], []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise PathkitError(f"{what} {path}: line {lineno}: invalid JSON ({exc.msg})") from None
            lines.append(lineno)
        rows = _object_rows(path, items, what, "item", 0)
        return Table(path, _union_columns(rows), rows, [f"line {n}" for n in lines])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PathkitError(f"{what} {path} is not valid JSON: {exc.msg} at line {exc.lineno}, column "
                           f"{exc.colno}") from None
    if isinstance(data, dict) and data and all(isinstance(data.get(k), list) for k in SPLIT_LAYOUT_KEYS):
        rows, splits, places = [], [], []
        for part in SPLIT_LAYOUT_KEYS:
            part_rows = _object_rows(path, data[part], what, f"{part} item", 0)
            rows.extend(part_rows)
            splits.extend([part] * len(part_rows))
            places.extend(f"{part} item {i}" for i in range(len(part_rows)))
        return Table(path, _union_columns(rows), rows, places, layout_split=splits)
    if not isinstance(data, list):
        raise PathkitError(f"{what} {path}: expected a JSON list of objects (one per row), or "
                           f"{{\"train\": [...], \"val\": [...], \"test\": [...]}}; found a {type(data).__name__}")
    rows = _object_rows(path, data, what, "item", 0)
    return Table(path, _union_columns(rows), rows, [f"item {i}" for i in range(len(rows))])


def _union_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def find_table(root: Path, names: Sequence[str], given: Path | None, what: str, layout: str) -> Path:
    """The table to read: option `table` when given, else the first of `names` in `root`, else
    the only table file in `root`; errors say what was looked for."""
    if given is not None:
        if not given.is_file():
            raise PathkitError(f"{what} {given} (option table) does not exist")
        return given
    for name in names:
        if (root / name).is_file():
            return root / name
    found = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() in TABLE_SUFFIXES
                   and not p.name.startswith("."))
    if len(found) == 1:
        return found[0]
    listing = f"found {', '.join(p.name for p in found)}; choose one" if found else f"looked for {', '.join(names)}"
    raise PathkitError(f"no {what} in {root} ({listing} with --dataset-option table=FILE); expected layout: {layout}")


# --------------------------------------------------------------------------- columns


def find_column(columns: Sequence[str], key: str, aliases: Mapping[str, Sequence[str]] = COLUMN_ALIASES,
                ) -> str | None:
    """The table's column for field `key` (by its aliases, case-insensitively), or None."""
    lowered = {c.strip().lower(): c for c in columns}
    return next((lowered[a] for a in aliases.get(key, (key,)) if a in lowered), None)


def require_columns(table: Table, keys: Sequence[str], optional: Sequence[str] = (),
                    aliases: Mapping[str, Sequence[str]] = COLUMN_ALIASES, *, what: str = "table",
                    explicit: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
    """{field: column} for required `keys` and `optional` fields; a required field without a
    column is an error naming the file, the accepted names and the columns it has. `explicit`
    names columns the user chose (e.g. option report_column), used as given."""
    found: dict[str, str | None] = {}
    explicit = explicit or {}
    taken: set[str] = set()
    for key in (*keys, *optional):
        column = explicit.get(key)
        if column is not None and column not in table.columns:
            raise PathkitError(f"{what} {table.path}: no column {column!r}; it has: {', '.join(table.columns)}")
        if column is None:
            lowered = {c.strip().lower(): c for c in table.columns if c not in taken}
            column = next((lowered[a] for a in aliases.get(key, (key,)) if a in lowered), None)
        found[key] = column
        if column is not None:
            taken.add(column)
    missing = [k for k in keys if found[k] is None]
    if missing:
        accepted = "; ".join(f"{k}: {', '.join(aliases.get(k, (k,)))}" for k in missing)
        raise PathkitError(f"{what} {table.path} has no {' or '.join(missing)} column (accepted names: {accepted}); "
                           f"it has: {', '.join(table.columns) or 'no columns'}")
    return found


# --------------------------------------------------------------------------- rows


@dataclass
class CohortRow:
    """One table row, resolved: ids, the target value, the file, split, mpp, cohort, other columns."""

    index: int
    place: str  # where the row is in its table: "line 5"
    case_id: str
    patient_id: str
    value: Any = None
    file: Path | None = None
    split: str | None = None
    mpp: float | None = None
    cohort: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # the slide reader the row forces (`pathkit list slide-readers`), and a user-edited tissue mask
    slide_reader: str | None = None
    tissue_geojson: Path | None = None


def resolve_file(value: str, base: Path) -> Path:
    """A table's file cell as a path: `~` expanded; relative paths are against `base` (the
    table's folder)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def plain_name(name: str, where: str) -> str:
    """`name` when it can be one file or folder name (the rule of `pathkit_core.contracts.case_id_problem`);
    an id like `../../escape` or `a/b` would reach outside the folder it is looked up in, so it
    is an error naming `where` it came from."""
    problem = case_id_problem(name)
    if problem:
        raise PathkitError(f"{where}: {problem}")
    return name


def path_inside(root: str | Path, value: str | Path, what: str) -> Path:
    """`value` resolved against `root`, refused when a relative `value` (from a manifest or an id) climbs
    out of it. An absolute `value` is the user's own choice; the check is on the path as written, so a
    symbolic link inside `root` that points elsewhere is the user's own layout."""
    path = Path(value)
    if path.is_absolute():
        return path
    base = Path(os.path.normpath(Path(root).absolute()))
    joined = Path(os.path.normpath(base / path))
    if joined != base and base not in joined.parents:
        raise PathkitError(f"{what} {str(value)!r} points outside {root}; give an absolute path if that is meant")
    return Path(root) / path


def plausible_mpp(value: Any, where: str, fix: str) -> float:
    """`value` as a level-0 mpp within pathkit's plausible range; an error naming `where` otherwise."""
    from pathkit_core.wsi.slide import MPP_MAX, MPP_MIN

    try:
        mpp = float(value)
    except (TypeError, ValueError):
        raise PathkitError(f"{where}: mpp {value!r} is not a number ({fix})") from None
    if not (math.isfinite(mpp) and MPP_MIN <= mpp <= MPP_MAX):
        raise PathkitError(f"{where}: mpp {value!r} is outside the plausible {MPP_MIN:g}-{MPP_MAX:g} micrometres "
                           f"per pixel (level 0: about 0.25 at 40x, 0.5 at 20x; {fix})")
    return mpp


def cohort_rows(table: Table, *, file_key: str | None, value_key: str | None, file_base: Path | None = None,
                required: Sequence[str] = (), default_mpp: float | None = None,
                case_id_of: Callable[[str, Path | None], str] | None = None,
                columns: Mapping[str, str | None] | None = None, what: str = "table") -> list[CohortRow]:
    """The rows of `table` as `CohortRow`s by the shared conventions (module docstring).

    `file_key` names the file field ("slide_path", "image_path"; None: rows carry no file) and
    `value_key` the target field ("label", "report"; None: no target column); both are required
    when given, as are the fields in `required`. `case_id_of(case_id_cell, file)` makes the case
    id (default: the cell, else the file's slide id); `columns` overrides the column found for a
    field. Empty cells of `value_key` are kept as "" for the dataset to judge.
    """
    from pathkit_core.wsi.slide import slide_id_for

    keys = [k for k in (file_key, value_key) if k] + [k for k in required if k not in (file_key, value_key)]
    tiling_keys = SLIDE_TILING_KEYS if file_key == "slide_path" else ()
    optional = [k for k in ("case_id", "patient_id", "split", "mpp", "cohort", *tiling_keys) if k not in keys]
    found = require_columns(table, keys, optional, what=what, explicit=columns)
    used = {c for c in found.values() if c is not None}
    base = file_base if file_base is not None else table.path.parent
    out = []
    for i, row in enumerate(table.rows):
        place = table.places[i]
        file = None
        if file_key:
            text = cell(row.get(found[file_key]))
            if not text:
                raise PathkitError(f"{what} {table.path}: {place}: empty {found[file_key]}")
            file = resolve_file(text, base)
        given_id = cell(row.get(found["case_id"])) if found.get("case_id") else ""
        if case_id_of is not None:
            case_id = case_id_of(given_id, file)
        else:
            case_id = given_id or (slide_id_for(file) if file is not None else "")
        if not case_id:
            raise PathkitError(f"{what} {table.path}: {place}: no case id")
        patient = cell(row.get(found["patient_id"])) if found.get("patient_id") else ""
        split = cell(row.get(found["split"])) if found.get("split") else ""
        if not split and table.layout_split is not None:
            split = table.layout_split[i]
        mpp_text = cell(row.get(found["mpp"])) if found.get("mpp") else ""
        mpp = plausible_mpp(mpp_text, f"{what} {table.path}: {place}",
                            f"fix the {found['mpp']} column") if mpp_text else default_mpp
        value = row.get(found[value_key]) if value_key else None
        meta = {k: v for k, v in row.items() if k not in used}
        reader, mask = _tiling_cells(row, found, base, f"{what} {table.path}: {place}")
        out.append(CohortRow(i, place, case_id, patient or case_id, value, file, split or None, mpp,
                             cell(row.get(found["cohort"])) or None if found.get("cohort") else None, meta,
                             slide_reader=reader, tissue_geojson=mask))
    return out


def _tiling_cells(row: Mapping[str, Any], found: Mapping[str, str | None], base: Path,
                  where: str) -> tuple[str | None, Path | None]:
    """(the row's slide reader, its tissue GeoJSON file) from the `slide_reader` and `tissue_geojson`
    columns, checked: a reader pathkit has, a mask file that exists (relative to the table's folder)."""
    reader = cell(row.get(found["slide_reader"])) if found.get("slide_reader") else ""
    if reader:
        from pathkit_core.wsi.reader_choice import get_reader

        try:
            get_reader(reader)
        except PathkitError as exc:
            raise PathkitError(f"{where}: {found['slide_reader']}: {exc}") from None
    text = cell(row.get(found["tissue_geojson"])) if found.get("tissue_geojson") else ""
    mask = resolve_file(text, base) if text else None
    if mask is not None and not mask.is_file():
        raise PathkitError(f"{where}: {found['tissue_geojson']} {mask} is not a file (relative paths are "
                           "against the table's folder)")
    return reader or None, mask


def check_duplicates(rows: Sequence[CohortRow], key: Callable[[CohortRow], Any], what: str, where: Path) -> None:
    """An error listing every value of `key` that two or more rows share, with their rows."""
    by_value: dict[Any, list[str]] = defaultdict(list)
    for r in rows:
        by_value[key(r)].append(r.place)
    twice = {v: places for v, places in by_value.items() if len(places) > 1}
    if twice:
        raise PathkitError(f"{where}: {len(twice)} duplicate {what}(s): {repeats_text(twice)}")


def drop_missing_files(rows: Sequence[CohortRow], *, skip_missing: bool, where: Path, what: str = "slide",
                       ) -> tuple[list[CohortRow], dict[str, str]]:
    """(rows whose file exists, {case id: reason} of the others). Missing files stop the run
    with their rows listed, unless `skip_missing`."""
    from pathkit_core.wsi.scenes import slide_file  # a scene's slide path names its file

    kept, missing = [], []
    for r in rows:
        (kept if r.file is None or slide_file(r.file).exists() else missing).append(r)
    if missing and not skip_missing:
        shown = "; ".join(f"{r.place}: {r.file}" for r in missing[:20])
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        raise PathkitError(f"{where}: {len(missing)} {what} file(s) do not exist: {shown}{more}. Fix the paths "
                           "(relative paths are against the table's folder), or rerun with --skip-missing to leave "
                           "them out (they are recorded)")
    excluded = {r.case_id: f"{what} file not found: {r.file} ({where.name}, {r.place})" for r in missing}
    if missing:
        log.warning("%s: %d row(s) left out: %s file not found (--skip-missing)", where.name, len(missing), what)
    return kept, excluded


@dataclass
class CaseRows:
    """The rows of one case: one row, or a patient's rows with `case=patient`."""

    case_id: str
    patient_id: str
    rows: list[CohortRow]

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(r.file for r in self.rows if r.file is not None)

    @property
    def split(self) -> str | None:
        return self.rows[0].split

    @property
    def value(self) -> Any:
        return self.rows[0].value

    def meta(self) -> dict[str, Any]:
        """Extra columns (one value each, or the list of the rows' values where they differ),
        the cohort and the mpp: one value, or one per slide where they differ."""
        out: dict[str, Any] = {}
        for key in dict.fromkeys(k for r in self.rows for k in r.meta):
            values = [r.meta.get(key) for r in self.rows]
            out[key] = values[0] if all(v == values[0] for v in values) else values
        cohorts = {r.cohort for r in self.rows} - {None}
        if cohorts:
            out["cohort"] = sorted(cohorts)[0] if len(cohorts) == 1 else sorted(cohorts)
        mpps = [r.mpp for r in self.rows]
        if any(m is not None for m in mpps):
            out["mpp"] = mpps[0] if len(set(mpps)) == 1 else tuple(mpps)
        for key in SLIDE_TILING_KEYS:  # one value per slide, in `files` order, like a per-slide mpp
            values = [getattr(r, key) for r in self.rows]
            if any(v is not None for v in values):
                out[key] = tuple(None if v is None else str(v) for v in values)
        if len(self.rows) > 1:
            out["slide_ids"] = [r.meta.get("slide_id") or (r.file.stem if r.file else r.case_id) for r in self.rows]
        return out


def group_rows(rows: Sequence[CohortRow], by: str, where: Path, *, value_name: str = "label") -> list[CaseRows]:
    """Cases from rows: one per row (`by="slide"`), or one per patient (`by="patient"`; the case
    id is the patient id, its rows in table order; their `value` and split must agree)."""
    if by == "slide":
        return [CaseRows(r.case_id, r.patient_id, [r]) for r in rows]
    if by != "patient":
        raise PathkitError(f"option case={by!r}: choose slide or patient")
    groups: dict[str, list[CohortRow]] = defaultdict(list)
    for r in rows:
        groups[r.patient_id].append(r)
    out = []
    for patient, members in groups.items():
        for attr, name in (("value", value_name), ("split", "split")):
            values = {str(getattr(r, attr)) for r in members}
            if len(values) > 1:
                shown = ", ".join(f"{getattr(r, attr)!r} ({r.place})" for r in members)
                raise PathkitError(f"{where}: patient {patient!r} has slides with different {name}s ({shown}); one "
                                   f"case per patient (case=patient) needs one {name}")
        out.append(CaseRows(patient, patient, members))
    return out


def _natural_key(text: str) -> list[Any]:
    return [(0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in re.split(r"(\d+)", text) if t]


def class_order(labels: Sequence[str], given: str | None, where: Path) -> tuple[str, ...]:
    """The class names: the distinct labels in natural sort order, or the user's order
    (`given`, comma-separated), which must name every label. Fewer than two classes is an error."""
    present = sorted(set(labels), key=_natural_key)
    if given:
        order = tuple(c.strip() for c in str(given).split(",") if c.strip())
        unknown = [label for label in present if label not in order]
        if unknown or len(set(order)) != len(order):
            raise PathkitError(f"option classes={given!r} must list each class once, including "
                               f"{', '.join(map(repr, unknown or present))} (the labels in {where.name})")
        present = [c for c in order]
    if len(present) < 2:
        raise PathkitError(f"{where}: every case has label {present[0]!r} (one class); a classification needs two "
                           "or more classes" if present else f"{where}: no labels")
    return tuple(present)


# --------------------------------------------------------------------------- splits


def splits_folder(dataset: str, workdir: Any) -> Path | None:
    """Where drawn splits are kept: `<workdir>/splits/<dataset>/` (None without a workspace:
    then the seeded draw is repeated each time, never written into the user's folder)."""
    from pathkit_core.workspace import confined

    return confined(Path(workdir) / "splits", dataset.replace(":", "_"), what=f"splits of dataset {dataset!r}") \
        if workdir else None


def part_counts(parts: Mapping[str, Sequence[str]], patients: Mapping[str, str]) -> dict[str, Any]:
    """{"counts": cases per part, "patients": patients per part} for the split facts."""
    return {"counts": {p: len(ids) for p, ids in parts.items()},
            "patients": {p: len({patients.get(c, c) for c in ids}) for p, ids in parts.items()}}


def _finish(parts: dict[str, list[str]], patients: Mapping[str, str], where: str,
            facts: dict[str, Any]) -> tuple[dict[str, list[str]], dict[str, Any]]:
    from pathkit_sdk.splits import check_user_split

    check_user_split(parts, patients, where)
    return parts, {**facts, **part_counts(parts, patients)}


def file_split(path: Path, patients: Mapping[str, str], *, normalise_id: Callable[[str], str] | None = None,
               excluded: Mapping[str, str] | None = None) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The user's split file (CSV `case_id,split` or the JSON REG layout), mapped onto the cases
    exactly (`match_split_ids`) and checked: (parts, split facts)."""
    from pathkit_sdk.splits import match_split_ids, read_split_file

    where = f"split file {path}"
    parts = match_split_ids(read_split_file(path), list(patients), where, normalise=normalise_id, excluded=excluded)
    return _finish(parts, patients, where, {"source": "given", "description": f"given: split file {path}",
                                            "file": str(path)})


def column_split(table: Path, splits: Mapping[str, tuple[str | None, str]], patients: Mapping[str, str], *,
                 source: str = "the split column") -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The split the table's rows give ({case id: (split cell, row place)}), used exactly and
    checked; a split filled on some rows only is an error listing the empty rows."""
    from pathkit_sdk.splits import SPLIT_PARTS, split_part

    where = f"{table}: {source}"
    empty = [f"{c} ({place})" for c, (value, place) in splits.items() if not value]
    if empty:
        raise PathkitError(f"{where}: {len(empty)} case(s) have no split while others do: {', '.join(empty[:20])}; "
                           "give every row train, val or test, or leave the column empty everywhere to let pathkit "
                           "draw one")
    parts: dict[str, list[str]] = {p: [] for p in SPLIT_PARTS}
    for case_id, (value, place) in splits.items():
        parts[split_part(value, f"{table.name}, {place}")].append(case_id)
    return _finish(parts, patients, where, {"source": "given", "description": f"given: {source} of {table.name}",
                                            "file": str(table)})


def drawn_split(name: str, patients: Mapping[str, str], *, seed: int, fractions: tuple[float, float],
                workdir: Any, file_name: str | None = None, labels: Mapping[str, str] | None = None,
                unit: str = "patient") -> tuple[dict[str, list[str]], dict[str, Any]]:
    """A split pathkit draws because none was given (seeded, disjoint by `patients`' values -- the
    `unit`: patients, slides or images --, stratified by `labels` where they allow), kept in
    `<workdir>/splits/<name>/`, said in the log with what it holds (`split_statement`). The file's
    name carries a digest of the cases and patients it splits, so two cohorts (or datasets that
    share a name's folder) never read each other's split; a changed label keeps the split."""
    from pathkit_core.workspace import content_hash
    from pathkit_sdk.splits import load_or_draw_split, split_statement

    if not (0 < fractions[0] < 1 and 0 < fractions[1] < 1 and sum(fractions) < 1):
        raise PathkitError(f"{name}: val_fraction {fractions[0]} and test_fraction {fractions[1]} must each lie "
                           "in (0, 1) and leave cases for training")
    folder = splits_folder(name, workdir)
    file_name = file_name or f"drawn-seed{seed}-val{fractions[0]:g}-test{fractions[1]:g}.csv"
    stem, _, suffix = file_name.rpartition(".")
    file_name = f"{stem}-cases{content_hash(sorted(patients.items()), 10)}.{suffix}"
    drawn = load_or_draw_split(folder / file_name if folder else None, patients, fractions=fractions, seed=seed,
                               case_labels=labels)
    statement = split_statement(drawn.parts, patients, unit=unit, how=drawn.describe())["statement"]
    log.warning("%s: %s%s", name, statement, f"; kept in {drawn.file}" if drawn.file else "")
    return _finish(drawn.parts, patients, f"{name}: the drawn split",
                   {"source": "drawn", "description": drawn.describe(), "unit": unit,
                    "file": str(drawn.file) if drawn.file else None, "seed": seed,
                    "fractions": {"val": fractions[0], "test": fractions[1]}, "stratified": drawn.stratified})


def choose_split(name: str, cases: Mapping[str, CaseRows], options: Mapping[str, Any], *, root: Path | None,
                 table: Path, labels: Mapping[str, str] | None = None, excluded: Mapping[str, str] | None = None,
                 normalise_id: Callable[[str], str] | None = None) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """(parts, split facts) of a generic cohort: option `splits_file`, else the rows' `split`
    values, else a drawn split (options split_seed, val_fraction, test_fraction). A split column
    and a split file together are an error: which one is meant is unclear."""
    patients = {c: g.patient_id for c, g in cases.items()}
    given_file = options.get("splits_file")
    with_split = any(g.split for g in cases.values())
    source = "the train/val/test keys" if table.suffix.lower() == ".json" else "the split column"
    if given_file:
        path = Path(str(given_file)).expanduser()
        path = path if path.is_absolute() or root is None else root / path
        if with_split:
            raise PathkitError(f"{name}: both {table.name} ({source}) and splits_file {path} give a split; keep one")
        return file_split(path, patients, normalise_id=normalise_id, excluded=excluded)
    if with_split:
        return column_split(table, {c: (g.split, g.rows[0].place) for c, g in cases.items()}, patients,
                            source=source)
    fractions = (float(options.get("val_fraction", 0.15)), float(options.get("test_fraction", 0.15)))
    return drawn_split(name, patients, seed=int(options.get("split_seed") or 0), fractions=fractions,
                       workdir=options.get("workdir"), labels=labels)


def check_part_classes(parts: Mapping[str, Sequence[str]], labels: Mapping[str, str], where: str) -> None:
    """Every part holds two classes or more: a part with one class cannot select a model or
    measure AUROC; an error before any training."""
    for part, ids in parts.items():
        present = Counter(labels[c] for c in ids if c in labels)
        if len(present) < 2:
            shown = ", ".join(f"{k!r}: {n}" for k, n in present.items()) or "no cases"
            raise PathkitError(f"{where}: the {part} part has one class only ({shown}); every part needs two classes "
                               "or more")


def check_slide_mpps(rows: Sequence[CohortRow], *, where: Path, mpp_column: str | None, what: str = "slide") -> None:
    """Stop before any tiling when a slide without an mpp in the table has none usable of its own.

    Only the rows whose `mpp` is empty are looked at (the column, or `--dataset-option mpp`,
    overrides the file); their metadata is read with OpenSlide (the header only, no pixels) and
    resolved as tiling would. The error names every such row and its file, the table's mpp
    column and the option. Files OpenSlide cannot open are left to tiling, whose error names them."""
    import openslide

    from pathkit_core.wsi.slide import MPP_CODES, SlideError, resolve_mpp

    problems = []
    for r in rows:
        if (r.mpp is not None or r.file is None or not r.file.is_file()
                or r.slide_reader not in (None, "openslide")):  # another reader's mpp is checked when tiled
            continue
        try:
            with openslide.OpenSlide(str(r.file)) as handle:
                properties = dict(handle.properties)
        except (openslide.OpenSlideError, OSError):
            continue
        try:
            resolve_mpp(properties, path=r.file)
        except SlideError as exc:
            if exc.code not in MPP_CODES:
                raise
            problems.append(f"{r.place} ({r.file.name}): {exc.detail.split('; supply it with')[0]}")
    if problems:
        shown = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
        column = (f"the table's `{mpp_column}` column for those rows" if mpp_column
                  else "an `mpp` column in the table (one value per row)")
        raise PathkitError(f"{where}: {len(problems)} {what}(s) have no usable resolution (mpp): {shown}. Give it "
                           f"in {column}, or for every slide with --dataset-option mpp=MICRONS (e.g. mpp=0.25)")


# --------------------------------------------------------------------------- dataset base


class CohortDataset(Dataset):
    """A dataset loaded once from its tables: cases, split, exclusions and split facts.

    A subclass implements `load()` -> (cases by id, parts, excluded {case id: reason}) and sets
    `self._split_facts` (e.g. from `choose_split`). `validate()` checks that a case exists and
    every part is non-empty; classification subclasses add `check_part_classes`.
    """

    run_options: ClassVar[tuple[str, ...]] = ("workdir", "skip_missing")

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        super().__init__(root, **options)
        self._cases: dict[str, Case] | None = None
        self._splits: dict[str, list[str]] = {}
        self._excluded: dict[str, str] = {}
        self._split_facts: dict[str, Any] = {}

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        raise NotImplementedError

    def _ensure(self) -> dict[str, Case]:
        if self._cases is None:
            layout = f"; expected layout: {self.layout}" if self.layout else ""
            if self.root is None:
                raise PathkitError(f"dataset {self.name!r} needs --dataset-root (its folder){layout}")
            if not Path(self.root).is_dir():
                raise PathkitError(f"dataset {self.name!r}: {self.root} is not a folder{layout}")
            cases, splits, excluded = self.load()
            self._cases, self._splits, self._excluded = cases, splits, excluded
            if excluded:
                reasons = Counter(why.split(":")[0] for why in excluded.values())
                log.warning("%s: %d case(s) left out (%s)", self.name, len(excluded),
                            "; ".join(f"{n} {why}" for why, n in sorted(reasons.items())))
        return self._cases

    def splits(self) -> dict[str, list[str]]:
        self._ensure()
        return {k: list(v) for k, v in self._splits.items()}

    def cases(self, split: str) -> Iterator[Case]:
        cases = self._ensure()
        if split not in self._splits:
            raise PathkitError(f"dataset {self.name!r} has no split {split!r} (has: {', '.join(self._splits)})")
        for case_id in self._splits[split]:
            yield cases[case_id]

    def excluded_cases(self) -> dict[str, str]:
        self._ensure()
        return dict(self._excluded)

    def split_facts(self) -> dict[str, Any]:
        self._ensure()
        return dict(self._split_facts)

    def validate(self) -> None:
        cases = self._ensure()
        layout = f"; expected layout: {self.layout}" if self.layout else ""
        if not cases:
            listing = "; ".join(f"{k}: {v}" for k, v in list(self._excluded.items())[:5])
            raise PathkitError(f"dataset {self.name!r} at {self.root}: no usable case"
                               + (f" ({len(self._excluded)} left out, e.g. {listing})" if listing else "") + layout)
        empty = [p for p in ("train", "val", "test") if not self._splits.get(p)]
        if empty:
            raise PathkitError(f"dataset {self.name!r} at {self.root}: the {', '.join(empty)} split(s) are "
                               f"empty ({', '.join(f'{k} {len(v)}' for k, v in self._splits.items())} cases)")

    def option_path(self, key: str) -> Path | None:
        """Option `key` as a path: relative paths are against the dataset root."""
        value = self.options.get(key)
        if value in (None, ""):
            return None
        path = Path(str(value)).expanduser()
        return path if path.is_absolute() or self.root is None else Path(self.root) / path

    def read_cohort_table(self, names: Sequence[str], what: str) -> tuple[Path, Table]:
        """The dataset's table (`what` in messages): option `table`, else the first of `names` in the
        root (`find_table`), read (`read_table`)."""
        path = find_table(Path(self.root), names, self.option_path("table"), what, self.layout)
        return path, read_table(path, what)

    def cohort_groups(self, rows: Sequence[CohortRow], table: Table, path: Path, *,
                      value_name: str = "label") -> tuple[dict[str, CaseRows], dict[str, str]]:
        """The cases of `rows` ({case id: its rows}) and the rows left out ({case id: why}): rows
        whose file is missing are refused, or left out with option `skip_missing`
        (`drop_missing_files`); slide resolutions are checked (`check_slide_mpps`); rows are
        grouped by option `case` (`group_rows`; `value_name` names the value in its errors)."""
        rows, excluded = drop_missing_files(rows, skip_missing=bool(self.options["skip_missing"]), where=path)
        check_slide_mpps(rows, where=path, mpp_column=find_column(table.columns, "mpp"))
        groups = group_rows(rows, str(self.options["case"]), path, value_name=value_name)
        return {g.case_id: g for g in groups}, excluded

    def mpp_option(self) -> float | None:
        """Option `mpp` (every slide's level-0 mpp, over the file's), range-checked."""
        value = self.options.get("mpp")
        if value in (None, ""):
            return None
        return plausible_mpp(value, f"dataset {self.name!r}", "--dataset-option mpp=MICRONS, e.g. mpp=0.25")


__all__ = [
    "COHORT_OPTIONS",
    "COLUMN_ALIASES",
    "CaseRows",
    "CohortDataset",
    "CohortRow",
    "Table",
    "cell",
    "check_duplicates",
    "check_part_classes",
    "check_slide_mpps",
    "choose_split",
    "class_order",
    "column_split",
    "drawn_split",
    "file_split",
    "cohort_rows",
    "drop_missing_files",
    "find_column",
    "find_table",
    "group_rows",
    "option",
    "path_inside",
    "plain_name",
    "plausible_mpp",
    "read_table",
    "require_columns",
    "resolve_file",
    "part_counts",
    "splits_folder",
]
