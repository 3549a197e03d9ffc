"""Seeded patient-disjoint train/val/test splits for the report datasets, saved so they never drift.

A split file is a CSV with one row per case (`patient_id,case_id,split`), written once with a
fixed seed and read back on every later run; a file that no longer matches the cohort (cases
added or gone, a patient in two parts) is an error naming the file, never silently redrawn.
"""

from __future__ import annotations

import csv
import io
import logging
import random
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import atomic_write_text

log = logging.getLogger(__name__)

PARTS = ("train", "val", "test")


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
    parts: dict[str, list[str]] = {p: [] for p in PARTS}
    for patient in patients:
        cases = sorted(by_patient[patient])
        if len(parts["val"]) + len(cases) <= n_val:
            parts["val"].extend(cases)
        elif len(parts["test"]) + len(cases) <= n_test:
            parts["test"].extend(cases)
        else:
            parts["train"].extend(cases)
    return {p: sorted(ids) for p, ids in parts.items()}


def check_disjoint(parts: Mapping[str, list[str]], case_patients: Mapping[str, str], where: str) -> None:
    """Raise when a patient has cases in two parts."""
    seen: dict[str, str] = {}
    for part, ids in parts.items():
        for case_id in ids:
            patient = case_patients.get(case_id, case_id)
            if seen.setdefault(patient, part) != part:
                raise PathkitError(f"{where}: patient {patient!r} is in both {seen[patient]!r} and {part!r}")


def write_split_file(path: Path, parts: Mapping[str, list[str]], case_patients: Mapping[str, str]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["patient_id", "case_id", "split"])
    for part in PARTS:
        for case_id in parts.get(part, []):
            writer.writerow([case_patients.get(case_id, case_id), case_id, part])
    atomic_write_text(path, buffer.getvalue())


def read_split_file(path: Path) -> dict[str, list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PathkitError(f"split file {path} cannot be read: {exc}") from exc
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or not {"case_id", "split"} <= set(rows[0]):
        raise PathkitError(f"split file {path}: expected CSV columns patient_id,case_id,split")
    parts: dict[str, list[str]] = {p: [] for p in PARTS}
    for i, row in enumerate(rows, start=2):
        part = row["split"].strip()
        if part not in parts:
            raise PathkitError(f"split file {path}, line {i}: unknown split {part!r} (expected {', '.join(PARTS)})")
        parts[part].append(row["case_id"].strip())
    return parts


def load_or_create_splits(path: Path | None, case_patients: Mapping[str, str], *,
                          fractions: tuple[float, float], seed: int) -> dict[str, list[str]]:
    """The saved split at `path` when it exists (checked against the cohort), else a new seeded
    split, saved to `path` (when given and writable)."""
    if path is not None and path.exists():
        parts = read_split_file(path)
        listed = {c for ids in parts.values() for c in ids}
        missing = sorted(set(case_patients) - listed)
        extra = sorted(listed - set(case_patients))
        if missing or extra:
            detail = []
            if missing:
                detail.append(f"{len(missing)} usable case(s) not in it (e.g. {', '.join(missing[:3])})")
            if extra:
                detail.append(f"{len(extra)} listed case(s) no longer usable (e.g. {', '.join(extra[:3])})")
            raise PathkitError(f"split file {path} does not match the dataset: {'; '.join(detail)}. "
                               "Delete it to draw a new split, or restore the cases it was made from.")
        check_disjoint(parts, case_patients, f"split file {path}")
        return parts
    parts = patient_disjoint_split(case_patients, fractions, seed)
    if path is not None:
        try:
            write_split_file(path, parts, case_patients)
            log.info("saved the %s split (seed %d) to %s", "/".join(str(len(parts[p])) for p in PARTS), seed, path)
        except OSError as exc:
            log.warning("could not save the split to %s (%s); it is recomputed from the seed each time", path, exc)
    return parts
