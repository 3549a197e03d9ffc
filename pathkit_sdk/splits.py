"""Patient-level train/validation/test splits, the one splits module of every dataset.

Three shapes: a split the user gives (a `split` column, or a split file: CSV `case_id,split` or
the REG/PathBench JSON layout), used exactly as written and only checked (`check_user_split`:
every part non-empty, no patient in two parts); a single seeded patient-disjoint train/val/test
split that pathkit draws only when none is given (`draw_split`: stratified by label where the
labels allow, else by case counts), saved as a CSV (`patient_id,case_id,split`) in the workspace
and read back on every later run; and repeated stratified folds in a versioned, hash-checked
manifest (GOLDMARK). All are leakage-checked: a patient in two parts is an error naming the patient.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import logging
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.run.dataset import SPLIT_UNITS, split_statement
from pathkit_core.workspace import FileLock, atomic_write_json, atomic_write_text, content_hash

SPLIT_PARTS = ("train", "val", "test")
SPLITS_FORMAT = "pathkit.splits"
SPLITS_FORMAT_VERSION = 1
_log = logging.getLogger(__name__)
CSV_COLUMNS = ("fold", "part", "patient_id", "case_id", "label")


@dataclass(frozen=True)
class SplitRecord:
    """One case of a cohort: its id, its patient and its label (the stratification variable)."""

    case_id: str
    patient_id: str
    label: str


@dataclass(frozen=True)
class SplitParams:
    """How splits are drawn: `n_splits` repeated stratified draws of `test_fraction` of the
    patients for test, then `val_fraction` of the remaining (training) patients for validation.

    GOLDMARK: five stratified 70/30 patient-level splits; the validation part is pathkit's
    (the public code selects epochs on the test part; see docs/goldmark.md).
    """

    n_splits: int = 5
    test_fraction: float = 0.3
    val_fraction: float = 0.2
    seed: int = 0
    max_attempts: int = 100

    def check(self) -> None:
        if self.n_splits < 1:
            raise PathkitError(f"splits: n_splits must be at least 1, got {self.n_splits}")
        for name in ("test_fraction", "val_fraction"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise PathkitError(f"splits: {name} must lie strictly between 0 and 1, got {value}")
        if self.max_attempts < 1:
            raise PathkitError(f"splits: max_attempts must be at least 1, got {self.max_attempts}")


def as_records(rows: Iterable[tuple[str, str, Any]]) -> list[SplitRecord]:
    """(case_id, patient_id, label) tuples -> records; a case id given twice is an error."""
    records, seen = [], set()
    for case_id, patient_id, label in rows:
        case_id, patient_id = str(case_id), str(patient_id)
        if case_id in seen:
            raise PathkitError(f"splits: case {case_id!r} appears twice in the cohort")
        if not patient_id:
            raise PathkitError(f"splits: case {case_id!r} has no patient id")
        seen.add(case_id)
        records.append(SplitRecord(case_id, patient_id, str(label)))
    return records


def cohort_hash(records: Sequence[SplitRecord]) -> str:
    """What a split manifest was made from: the sorted (case, patient, label) triples."""
    return content_hash(sorted((r.case_id, r.patient_id, r.label) for r in records))


def patient_strata(records: Sequence[SplitRecord]) -> dict[str, str]:
    """The stratification label of each patient.

    Binary 0/1 labels: positive when any of the patient's cases is positive (GOLDMARK's
    split script groups slides by patient and takes the maximum label). Other labels: the
    patient's most frequent label (ties to the smallest).
    """
    by_patient: dict[str, list[str]] = defaultdict(list)
    for r in records:
        by_patient[r.patient_id].append(r.label)
    binary = {r.label for r in records} <= {"0", "1"}
    strata = {}
    for patient, labels in by_patient.items():
        if binary:
            strata[patient] = max(labels)
        else:
            counts = Counter(labels)
            top = max(counts.values())
            strata[patient] = min(label for label, n in counts.items() if n == top)
    return strata


@dataclass
class SplitManifest:
    """Per fold, the part (train/val/test) of every case; `meta` holds version, params and hashes."""

    rows: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def folds(self) -> list[int]:
        return sorted({int(r["fold"]) for r in self.rows})

    @property
    def content_hash(self) -> str:
        return str(self.meta.get("content_hash") or rows_hash(self.rows))

    def fold(self, fold: int) -> dict[str, list[str]]:
        """{"train": [...], "val": [...], "test": [...]} case ids of `fold` (1-based), in cohort order."""
        if fold not in self.folds:
            where = f" in {self.path}" if self.path else ""
            raise PathkitError(f"splits: no fold {fold}{where}; folds are {self.folds}")
        out: dict[str, list[str]] = {part: [] for part in SPLIT_PARTS}
        for r in self.rows:
            if int(r["fold"]) == fold:
                out[r["part"]].append(r["case_id"])
        return out

    def patients(self, fold: int) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {part: set() for part in SPLIT_PARTS}
        for r in self.rows:
            if int(r["fold"]) == fold:
                out[r["part"]].add(r["patient_id"])
        return out

    def save(self, path: str | Path) -> Path:
        """`<path>` (CSV, one row per fold x case) and `<path>.json` (version, params, hashes)."""
        path = Path(path)
        lines = [",".join(CSV_COLUMNS)]
        for r in self.rows:
            lines.append(",".join(_csv_cell(r[c]) for c in CSV_COLUMNS))
        meta = dict(self.meta)
        meta["content_hash"] = rows_hash(self.rows)
        atomic_write_text(path, "\n".join(lines) + "\n")
        atomic_write_json(_meta_path(path), meta)
        self.meta, self.path = meta, path
        return path


def _csv_cell(value: Any) -> str:
    text = str(value)
    if any(ch in text for ch in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def rows_hash(rows: Sequence[Mapping[str, Any]]) -> str:
    return content_hash(sorted([int(r["fold"]), r["part"], r["patient_id"], r["case_id"], r["label"]] for r in rows))


def check_leakage(rows: Sequence[Mapping[str, Any]], where: str = "splits") -> None:
    """Every fold: each case once, each patient in exactly one part, every part non-empty, same cases."""
    by_fold: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["part"] not in SPLIT_PARTS:
            raise PathkitError(f"{where}: unknown part {r['part']!r} (expected one of {', '.join(SPLIT_PARTS)})")
        by_fold[int(r["fold"])].append(r)
    reference_cases: set[str] | None = None
    for fold, fold_rows in sorted(by_fold.items()):
        cases = Counter(r["case_id"] for r in fold_rows)
        twice = [c for c, n in cases.items() if n > 1]
        if twice:
            raise PathkitError(f"{where}: fold {fold}: case(s) listed twice: {', '.join(sorted(twice)[:10])}")
        parts_of: dict[str, set[str]] = defaultdict(set)
        for r in fold_rows:
            parts_of[r["patient_id"]].add(r["part"])
        leaked = {p: parts for p, parts in parts_of.items() if len(parts) > 1}
        if leaked:
            shown = "; ".join(f"{p} in {'+'.join(sorted(parts))}" for p, parts in sorted(leaked.items())[:10])
            raise PathkitError(f"{where}: fold {fold}: patient leakage between parts: {shown}")
        empty = [part for part in SPLIT_PARTS if not any(r["part"] == part for r in fold_rows)]
        if empty:
            raise PathkitError(f"{where}: fold {fold}: empty part(s) {', '.join(empty)}")
        if reference_cases is None:
            reference_cases = set(cases)
        elif set(cases) != reference_cases:
            raise PathkitError(f"{where}: fold {fold} does not hold the same cases as the first fold")


def _allocation(n: int, fraction: float, keep_other: int) -> int:
    """round(fraction * n), but at least 1 and leaving `keep_other` for the other parts."""
    return max(1, min(round(fraction * n), n - keep_other))


def make_splits(
    records: Sequence[SplitRecord],
    params: SplitParams = SplitParams(),
    *,
    name: str = "splits",
    version: int = 1,
) -> SplitManifest:
    """Draw `params.n_splits` stratified patient-level train/val/test splits.

    Patients are stratified by `patient_strata`; each stratum contributes round(fraction x
    size) patients (at least one) to test, then to validation. A draw is retried (new
    random state) until every part of the fold holds every class of the cohort; a class
    with fewer than three patients, or draws that keep failing, is a clear error.
    """
    import numpy as np

    params.check()
    if not records:
        raise PathkitError(f"{name}: no cases to split")
    strata = patient_strata(records)
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for patient in sorted(strata):
        by_stratum[strata[patient]].append(patient)
    classes = sorted({r.label for r in records})
    if len(classes) < 2:
        raise PathkitError(f"{name}: every case has label {classes[0]!r}; a split needs at least two classes")
    small = {label: len(p) for label, p in by_stratum.items() if len(p) < len(SPLIT_PARTS)}
    if small:
        shown = ", ".join(f"label {label!r}: {n} patient(s)" for label, n in sorted(small.items()))
        raise PathkitError(
            f"{name}: too few patients to give train, validation and test one of each class ({shown}; "
            f"need at least {len(SPLIT_PARTS)} per class)"
        )
    cases_of: dict[str, list[SplitRecord]] = defaultdict(list)
    for r in records:
        cases_of[r.patient_id].append(r)
    rows: list[dict[str, Any]] = []
    attempts_used: list[int] = []
    for fold in range(1, params.n_splits + 1):
        for attempt in range(params.max_attempts):
            rng = np.random.default_rng([params.seed, fold, attempt])
            part_of: dict[str, str] = {}
            for label in sorted(by_stratum):
                patients = list(by_stratum[label])
                order = rng.permutation(len(patients))
                shuffled = [patients[i] for i in order]
                n_test = _allocation(len(shuffled), params.test_fraction, keep_other=2)
                rest = shuffled[n_test:]
                n_val = _allocation(len(rest), params.val_fraction, keep_other=1)
                for p in shuffled[:n_test]:
                    part_of[p] = "test"
                for p in rest[:n_val]:
                    part_of[p] = "val"
                for p in rest[n_val:]:
                    part_of[p] = "train"
            present = {part: {r.label for r in records if part_of[r.patient_id] == part} for part in SPLIT_PARTS}
            if all(set(classes) <= labels for labels in present.values()):
                break
        else:
            missing = {part: sorted(set(classes) - labels) for part, labels in present.items() if set(classes) - labels}
            raise PathkitError(
                f"{name}: fold {fold}: after {params.max_attempts} draws some part still lacks a class "
                f"({'; '.join(f'{p} lacks {m}' for p, m in missing.items())}); the cohort is too small or its "
                "labels vary within patients"
            )
        attempts_used.append(attempt + 1)
        for r in records:
            rows.append({"fold": fold, "part": part_of[r.patient_id], "patient_id": r.patient_id,
                         "case_id": r.case_id, "label": r.label})
    check_leakage(rows, name)
    meta = {
        "format": SPLITS_FORMAT,
        "format_version": SPLITS_FORMAT_VERSION,
        "name": name,
        "version": int(version),
        "params": asdict(params),
        "cohort_hash": cohort_hash(records),
        "n_cases": len(records),
        "n_patients": len(strata),
        "classes": classes,
        "draws_per_fold": attempts_used,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "content_hash": rows_hash(rows),
    }
    return SplitManifest(rows, meta)


def from_assignments(
    records: Sequence[SplitRecord],
    assignments: Mapping[int, Mapping[str, str]],
    *,
    name: str,
    version: int = 1,
    source: str = "",
) -> SplitManifest:
    """A manifest from given per-fold patient parts ({fold: {patient_id: part}}), leakage-checked."""
    rows = []
    for fold in sorted(assignments):
        parts = assignments[fold]
        for r in records:
            if r.patient_id not in parts:
                raise PathkitError(f"{name}: fold {fold}: patient {r.patient_id!r} (case {r.case_id}) has no part")
            rows.append({"fold": int(fold), "part": parts[r.patient_id], "patient_id": r.patient_id,
                         "case_id": r.case_id, "label": r.label})
    check_leakage(rows, name)
    meta = {"format": SPLITS_FORMAT, "format_version": SPLITS_FORMAT_VERSION, "name": name, "version": int(version),
            "params": {"source": source}, "cohort_hash": cohort_hash(records), "n_cases": len(records),
            "n_patients": len({r.patient_id for r in records}), "classes": sorted({r.label for r in records}),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "content_hash": rows_hash(rows)}
    return SplitManifest(rows, meta)


def carve_validation(
    train_patients: Mapping[str, str], val_fraction: float, seed: Sequence[int] | int
) -> set[str]:
    """Stratified validation patients drawn from training patients ({patient: stratum})."""
    import numpy as np

    rng = np.random.default_rng(seed)
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for patient in sorted(train_patients):
        by_stratum[train_patients[patient]].append(patient)
    chosen: set[str] = set()
    for label in sorted(by_stratum):
        patients = by_stratum[label]
        if len(patients) < 2:
            raise PathkitError(
                f"splits: label {label!r} has {len(patients)} training patient(s); validation needs one "
                "and training another"
            )
        n_val = _allocation(len(patients), val_fraction, keep_other=1)
        order = rng.permutation(len(patients))
        chosen.update(patients[i] for i in order[:n_val])
    return chosen


def load_splits(path: str | Path) -> SplitManifest:
    """Read a manifest written by `SplitManifest.save`, refusing one whose rows no longer match
    the recorded content hash or that leaks a patient between parts."""
    import csv

    path = Path(path)
    meta_file = _meta_path(path)
    if not path.exists():
        raise PathkitError(f"{path}: no such split manifest")
    if not meta_file.exists():
        raise PathkitError(f"{path}: its metadata file {meta_file.name} (version, content hash) is missing")
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PathkitError(f"{meta_file}: invalid JSON ({exc.msg})") from exc
    if meta.get("format") != SPLITS_FORMAT:
        raise PathkitError(f"{meta_file}: not a pathkit split manifest (format {meta.get('format')!r})")
    if int(meta.get("format_version", 0)) > SPLITS_FORMAT_VERSION:
        raise PathkitError(f"{meta_file}: format version {meta.get('format_version')} is newer than this pathkit")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise PathkitError(f"{path}: split manifest lacks column(s) {', '.join(missing)}")
        rows = []
        for lineno, row in enumerate(reader, start=2):
            try:
                fold = int(row["fold"])
            except (TypeError, ValueError):
                raise PathkitError(f"{path}: line {lineno}: fold {row['fold']!r} is not an integer") from None
            rows.append({"fold": fold, "part": row["part"], "patient_id": row["patient_id"],
                         "case_id": row["case_id"], "label": row["label"]})
    actual = rows_hash(rows)
    if actual != meta.get("content_hash"):
        raise PathkitError(
            f"{path}: content hash {actual} no longer matches the recorded {meta.get('content_hash')} "
            f"(in {meta_file.name}): the split manifest was edited or damaged. Restore it, or give a new "
            "split version to draw fresh splits."
        )
    check_leakage(rows, str(path))
    return SplitManifest(rows, meta, path)


def load_or_create_splits(
    path: str | Path | None,
    records: Sequence[SplitRecord],
    params: SplitParams = SplitParams(),
    *,
    name: str = "splits",
    version: int = 1,
) -> SplitManifest:
    """The persisted manifest at `path` if it was drawn from this cohort with these parameters;
    otherwise draw and save it. Concurrent callers (several encoders) share one draw. With no
    `path` (nowhere to keep it) the manifest is drawn and not saved."""
    if path is None:
        return make_splits(records, params, name=name, version=version)
    path = Path(path)
    with FileLock(path.with_name(path.name + ".lock"), timeout=600):
        if path.exists():
            manifest = load_splits(path)
            recorded = manifest.meta.get("cohort_hash")
            if recorded != cohort_hash(records):
                raise PathkitError(
                    f"{path}: these splits (version {manifest.meta.get('version')}) were drawn from a different "
                    f"cohort (cohort hash {recorded}, now {cohort_hash(records)}: cases or labels changed). Give "
                    "a new split version to draw fresh splits, or restore the cohort."
                )
            if manifest.meta.get("params") != asdict(params):
                raise PathkitError(
                    f"{path}: drawn with {manifest.meta.get('params')}, not {asdict(params)}; give a new split "
                    "version for other parameters"
                )
            return manifest
        manifest = make_splits(records, params, name=name, version=version)
        manifest.save(path)
        return manifest




# --------------------------------------------------------------------------- single split by case counts


def target_counts(n: int, fractions: tuple[float, float]) -> tuple[int, int, int]:
    """(train, val, test) case counts for `n` cases with val/test `fractions` (rounded)."""
    n_val, n_test = round(n * fractions[0]), round(n * fractions[1])
    return n - n_val - n_test, n_val, n_test


def patient_disjoint_split(case_patients: Mapping[str, str], fractions: tuple[float, float], seed: int,
                           ) -> dict[str, list[str]]:
    """Cases into train/val/test with no patient in two parts.

    Patients are shuffled with `random.Random(seed)` (sorted first, so the draw does not depend
    on input order) and dealt to val, then test, until each holds its target number of cases
    (`target_counts`); a patient whose cases would overshoot goes to train. With one case per
    patient the counts are met exactly (HistAI 12,476 -> 9980/1248/1248).
    """
    by_patient: dict[str, list[str]] = defaultdict(list)
    for case_id, patient in case_patients.items():
        by_patient[patient].append(case_id)
    patients = sorted(by_patient)
    random.Random(seed).shuffle(patients)
    _, n_val, n_test = target_counts(len(case_patients), fractions)
    parts: dict[str, list[str]] = {p: [] for p in SPLIT_PARTS}
    for patient in patients:
        cases = sorted(by_patient[patient])
        if len(parts["val"]) + len(cases) <= n_val:
            parts["val"].extend(cases)
        elif len(parts["test"]) + len(cases) <= n_test:
            parts["test"].extend(cases)
        else:
            parts["train"].extend(cases)
    return {p: sorted(ids) for p, ids in parts.items()}


# --------------------------------------------------------------------------- what a split holds

# Names users give the three parts (a `split` column, a split file) -> pathkit's part names.
PART_ALIASES = {"train": "train", "training": "train", "val": "val", "valid": "val", "validation": "val",
                "dev": "val", "test": "test", "testing": "test"}


def split_part(value: Any, where: str) -> str:
    """"train", "val" or "test" for a user's part name (`validation` -> `val`); an error naming
    `where` and the accepted names otherwise."""
    part = PART_ALIASES.get(str(value).strip().lower())
    if part is None:
        raise PathkitError(f"{where}: unknown split {value!r} (expected train, val or test; also accepted: "
                           f"{', '.join(sorted(set(PART_ALIASES) - set(SPLIT_PARTS)))})")
    return part


def check_disjoint(parts: Mapping[str, Sequence[str]], case_patients: Mapping[str, str], where: str) -> None:
    """Raise when a patient has cases in two parts, listing every such patient (the first 20)."""
    parts_of: dict[str, set[str]] = defaultdict(set)
    for part, ids in parts.items():
        for case_id in ids:
            parts_of[case_patients.get(case_id, case_id)].add(part)
    leaked = {p: sorted(s, key=lambda x: SPLIT_PARTS.index(x) if x in SPLIT_PARTS else 9)
              for p, s in parts_of.items() if len(s) > 1}
    if leaked:
        shown = ", ".join(f"{p!r} ({' and '.join(s)})" for p, s in sorted(leaked.items())[:20])
        more = f" and {len(leaked) - 20} more" if len(leaked) > 20 else ""
        raise PathkitError(f"{where}: {len(leaked)} patient(s) in two parts (patient leakage; a split is never "
                           f"fixed silently): {shown}{more}. Put each patient's cases in one part.")


def check_user_split(parts: Mapping[str, Sequence[str]], case_patients: Mapping[str, str], where: str) -> None:
    """A split the user gave, checked and never changed: each case once, every part non-empty,
    no patient in two parts."""
    seen: dict[str, str] = {}
    twice = []
    for part, ids in parts.items():
        for case_id in ids:
            if case_id in seen:
                twice.append(f"{case_id} ({seen[case_id]} and {part})")
            seen.setdefault(case_id, part)
    if twice:
        raise PathkitError(f"{where}: case(s) in more than one part: {', '.join(twice[:20])}")
    empty = [p for p in SPLIT_PARTS if not parts.get(p)]
    if empty:
        counts = ", ".join(f"{p} {len(parts.get(p, ()))}" for p in SPLIT_PARTS)
        raise PathkitError(f"{where}: the {', '.join(empty)} part(s) are empty ({counts} cases); every part "
                           "needs at least one case")
    check_disjoint(parts, case_patients, where)


def write_split_file(path: Path, parts: Mapping[str, list[str]], case_patients: Mapping[str, str]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["patient_id", "case_id", "split"])
    for part in SPLIT_PARTS:
        for case_id in parts.get(part, []):
            writer.writerow([case_patients.get(case_id, case_id), case_id, part])
    atomic_write_text(path, buffer.getvalue())


def read_split_file(path: Path) -> dict[str, list[str]]:
    """The case ids per part of a split file: a CSV with columns `case_id,split` (a `patient_id`
    column is allowed and ignored), or JSON in the REG/PathBench layout `{"train": [...], "val":
    [...], "test": [...]}` whose items are ids or objects with an "id". Ids are returned as
    written; part names may be aliases (`validation`)."""
    from pathkit_core.workspace import check_regular_file

    path = Path(path)
    if path.exists():
        check_regular_file(path, "split file")  # a named pipe would block the read
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise PathkitError(f"split file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PathkitError(f"split file {path} cannot be read: {exc}") from exc
    parts: dict[str, list[str]] = {p: [] for p in SPLIT_PARTS}
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PathkitError(f"split file {path}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
        if not isinstance(data, dict) or not data or not all(isinstance(v, list) for v in data.values()):
            raise PathkitError(f"split file {path}: expected JSON {{\"train\": [...], \"val\": [...], \"test\": "
                               "[...]}} of case ids (or of {\"id\": ...} records)")
        for name, items in data.items():
            part = split_part(name, f"split file {path}")
            for i, item in enumerate(items):
                rid = item.get("id", item.get("case_id")) if isinstance(item, dict) else item
                if not isinstance(rid, str | int) or not str(rid).strip():
                    raise PathkitError(f"split file {path}: {name}[{i}] has no id ({str(item)[:60]!r})")
                parts[part].append(str(rid).strip())
        return parts
    rows = list(csv.DictReader(io.StringIO(text)))
    columns = {c.strip().lower(): c for c in (rows[0] if rows else {})}
    id_col = columns.get("case_id") or columns.get("id")
    split_col = columns.get("split")
    if not rows or id_col is None or split_col is None:
        raise PathkitError(f"split file {path}: expected CSV columns case_id,split (found "
                           f"{', '.join(columns) or 'no rows'}) or the JSON layout {{\"train\": [...], ...}}")
    for i, row in enumerate(rows, start=2):
        parts[split_part(row[split_col], f"split file {path}, line {i}")].append(str(row[id_col]).strip())
    return parts


def match_split_ids(parts: Mapping[str, Sequence[str]], case_ids: Sequence[str], where: str, *,
                    normalise: Any = None, excluded: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """A split file's ids mapped onto the dataset's case ids, exactly: a listed id may differ
    from its case id only by `normalise` (e.g. a `.tiff` suffix); a case the file does not list,
    or a listed id that is no case, is an error naming them. Ids of cases the dataset left out
    (`excluded`, e.g. missing slides with --skip-missing) are dropped."""
    known = set(case_ids)
    excluded = excluded or {}
    out: dict[str, list[str]] = {p: [] for p in SPLIT_PARTS}
    unknown = []
    for part, ids in parts.items():
        for rid in ids:
            case_id = rid if rid in known or normalise is None else normalise(rid)
            if case_id in known:
                out[part].append(case_id)
            elif case_id not in excluded and rid not in excluded:
                unknown.append(rid)
    listed = {c for ids in out.values() for c in ids}
    unlisted = [c for c in case_ids if c not in listed]
    problems = [f"{len(found)} {what}: {', '.join(found[:10])}" for found, what in
                ((unknown, "listed id(s) are no case of the dataset"), (unlisted, "case(s) are in no part")) if found]
    if problems:
        raise PathkitError(f"{where}: {'; '.join(problems)}. A given split is used exactly as written: list every "
                           "case once.")
    return out


def stratified_patient_split(case_patients: Mapping[str, str], case_labels: Mapping[str, Any],
                             fractions: tuple[float, float], seed: int) -> dict[str, list[str]] | None:
    """A patient-disjoint split stratified by label (`make_splits`, one draw: every part holds
    every class), or None when some class has fewer than three patients (no stratified draw)."""
    records = [SplitRecord(c, case_patients[c], str(case_labels[c])) for c in sorted(case_patients)]
    n_val, n_test = fractions
    params = SplitParams(n_splits=1, test_fraction=n_test, val_fraction=n_val / (1.0 - n_test), seed=seed)
    try:
        manifest = make_splits(records, params, name="split")
    except PathkitError:
        return None
    return {p: sorted(ids) for p, ids in manifest.fold(1).items()}


@dataclass(frozen=True)
class DrawnSplit:
    """A split pathkit drew because none was given: the parts and how they were drawn."""

    parts: dict[str, list[str]]
    seed: int
    fractions: tuple[float, float]
    stratified: bool
    file: Path | None = None

    def describe(self) -> str:
        """How it was drawn and what was asked for; what it holds is `split_statement`'s to say
        (with a few patients per class the realised parts can be far from the requested ones)."""
        train = 1.0 - sum(self.fractions)
        shares = "/".join(f"{round(100 * f)}" for f in (train, *self.fractions))
        how = "stratified by label, " if self.stratified else ""
        return f"drawn by pathkit (no split given): seeded ({self.seed}), {how}requested train/val/test {shares}"


def draw_split(case_patients: Mapping[str, str], *, fractions: tuple[float, float], seed: int,
               case_labels: Mapping[str, Any] | None = None) -> DrawnSplit:
    """A seeded patient-disjoint train/val/test split: stratified by label when labels are given
    and every class has three patients or more, else by case counts (`patient_disjoint_split`)."""
    parts = stratified_patient_split(case_patients, case_labels, fractions, seed) if case_labels else None
    if parts is not None:
        return DrawnSplit(parts, seed, fractions, stratified=True)
    return DrawnSplit(patient_disjoint_split(case_patients, fractions, seed), seed, fractions, stratified=False)


def load_or_draw_split(path: Path | None, case_patients: Mapping[str, str], *, fractions: tuple[float, float],
                       seed: int, case_labels: Mapping[str, Any] | None = None) -> DrawnSplit:
    """The split drawn earlier and saved at `path` (in the workspace) when it exists and still
    fits the cohort, else a new `draw_split`, saved to `path` (when given and writable)."""
    if path is not None and path.exists():
        parts = read_split_file(path)
        listed = {c for ids in parts.values() for c in ids}
        missing = sorted(set(case_patients) - listed)
        extra = sorted(listed - set(case_patients))
        detail = [f"{len(found)} {what} (e.g. {', '.join(found[:3])})" for found, what in
                  ((missing, "usable case(s) not in it"), (extra, "listed case(s) no longer usable")) if found]
        if detail:
            raise PathkitError(f"split file {path} does not match the dataset: {'; '.join(detail)}. "
                               "Delete it to draw a new split, or restore the cases it was made from.")
        check_disjoint(parts, case_patients, f"split file {path}")
        stratified = bool(case_labels) and stratified_patient_split(
            case_patients, case_labels, fractions, seed) == {p: sorted(v) for p, v in parts.items()}
        return DrawnSplit(parts, seed, fractions, stratified, path)
    drawn = draw_split(case_patients, fractions=fractions, seed=seed, case_labels=case_labels)
    if path is not None:
        try:
            write_split_file(path, drawn.parts, case_patients)
            counts = "/".join(str(len(drawn.parts[p])) for p in SPLIT_PARTS)
            _log.info("saved the %s split (seed %d) to %s", counts, seed, path)
            drawn = dataclasses.replace(drawn, file=path)
        except OSError as exc:
            _log.warning("could not save the split to %s (%s); it is recomputed from the seed each time", path, exc)
    return drawn


__all__ = [
    "PART_ALIASES",
    "SPLIT_PARTS",
    "SPLIT_UNITS",
    "DrawnSplit",
    "SplitManifest",
    "SplitParams",
    "SplitRecord",
    "as_records",
    "carve_validation",
    "check_disjoint",
    "check_leakage",
    "check_user_split",
    "cohort_hash",
    "draw_split",
    "from_assignments",
    "load_or_create_splits",
    "load_or_draw_split",
    "load_splits",
    "make_splits",
    "match_split_ids",
    "patient_disjoint_split",
    "patient_strata",
    "read_split_file",
    "split_part",
    "split_statement",
    "stratified_patient_split",
    "target_counts",
    "write_split_file",
]
