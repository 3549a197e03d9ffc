"""goldmark: GOLDMARK tumour-biomarker slide classification (33 OncoKB-anchored tasks, TCGA and external cohorts).

One dataset, one view per task: `goldmark:COAD-MSI`. The root holds a slide manifest and,
optionally, a long label table and feature files (GOLDMARK's released `features_<slide>.pt`
with their QC JSON, or pathkit's feature store); see docs/goldmark.md for every column and option.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, Dataset, DatasetOption, PathkitError, brief_list
from pathkit_core.workspace import confined
from pathkit_datasets._cards import Carded
from pathkit_datasets._goldmark_tasks import TASKS, TASKS_BY_KEY, GoldmarkTask, normalise_task_key
from pathkit_datasets._protocols import SlideClassification
from pathkit_sdk.cohort import find_column, option, path_inside, plain_name, plausible_mpp, read_table, splits_folder

MANIFEST_NAMES = ("manifest.csv", "manifest.parquet", "slides.csv", "slides.parquet")
LABEL_NAMES = ("labels.csv", "labels.parquet")
ALIASES: dict[str, tuple[str, ...]] = {
    "slide_id": ("slide_id", "slide", "slide_name", "image_id"),
    "patient_id": ("patient_id", "patient", "case_id", "case_submitter_id", "bcr_patient_barcode"),
    "cohort": ("cohort", "site", "source", "dataset"),
    "tumor_code": ("tumor_code", "tumour_code", "project", "project_id", "oncotree_code"),
    "slide_path": ("slide_path", "wsi_path", "image_path"),
    "feature_path": ("feature_path", "features_path", "feature_file"),
    "tile_manifest": ("tile_manifest", "tile_manifest_path", "tiles_path"),
    "thumbnail": ("thumbnail", "qc_thumbnail", "thumbnail_path"),
    "tissue_mm2": ("tissue_mm2", "tissue_area_mm2", "tissue_area"),
    "mpp": ("mpp", "mpp_x", "microns_per_pixel"),
    "file_size": ("file_size", "file_bytes", "size_bytes"),
    "slide_barcode": ("slide_barcode", "glass_slide_id", "slide_submitter_id"),
    "ffpe": ("ffpe", "is_ffpe"),
    "task": ("task", "target_task"),
    "gene": ("gene", "target", "biomarker"),
    "label": ("label", "status", "value", "label_index"),
}
POSITIVE = {"1", "1.0", "true", "yes", "y", "positive", "pos", "mutant", "mutated", "altered", "mut", "msi",
            "msi-h", "msi_h", "present"}
NEGATIVE = {"0", "0.0", "false", "no", "n", "negative", "neg", "wildtype", "wild-type", "wild_type", "wt", "mss",
            "msi-l", "absent"}
MISSING = {"", "na", "nan", "none", "null", "n/a", "unknown", "."}
TCGA_PATIENT = re.compile(r"^(TCGA-[A-Z0-9]{2}-[A-Z0-9]{4})", re.IGNORECASE)
# The two classes of every GOLDMARK task, in index order: 1 is the OncoKB level 1-3 alteration
# (the positive class whose probability AUROC ranks), 0 its absence.
CLASS_NAMES = ("negative", "positive")
DEGENERATE_VARIANCE = 1e-6  # GOLDMARK: mean per-dimension variance <= 1e-6 marks a degenerate extraction
# How a fold's training patients are used (docs/goldmark.md, "Split protocols"):
# - "train-val-test": train / validation / test = 56 / 14 / 30 % of the patients; the best epoch
#   is chosen on validation (pathkit's default: the test part never chooses the model);
# - "paper-70-30": train on the whole 70 % (validation merged into training), no model selection:
#   the epoch-120 model, the setting comparable with the paper's 70/30 figures. Same test part.
#   As in the public code (train_task_v2.py passes the test split as validation), the fold's test
#   part is the validation part: it steps the plateau scheduler at the validation epochs (test
#   AUROC), and chooses nothing (best = last).
SPLIT_PROTOCOLS = ("train-val-test", "paper-70-30")
# paper-70-30's validation cases are the test part's slides under ids of their own (a case id
# belongs to one split): "<slide id>" + SCHEDULE_SUFFIX.
SCHEDULE_SUFFIX = "__test-part"

OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("task", "str", None, "the GOLDMARK task, e.g. COAD-MSI (or the view: --dataset goldmark:COAD-MSI)"),
    DatasetOption("view", "str", None, "the task, from --dataset goldmark:TASK"),
    DatasetOption("fold", "int", 1, "which of the patient-level splits (1..n_splits)"),
    DatasetOption("train_cohort", "str", None, "cohort trained on (default: TCGA when present, else the first)"),
    DatasetOption("test_cohort", "str", None, "cohort tested on (default: the training cohort); another cohort is "
                  "tested whole, with frozen weights"),
    DatasetOption("manifest", "path", None, "the slide manifest (default: manifest.csv|parquet, slides.csv|parquet)"),
    DatasetOption("labels", "path", None, "a long label table patient_id,task|gene,label "
                  "(default: labels.csv|parquet)"),
    DatasetOption("features_dir", "path", None, "folder of feature files; may contain {encoder} (default: "
                  "<root>/features[/<encoder>])"),
    DatasetOption("tile_manifest_dir", "path", None, "folder of tile manifests and QC thumbnails "
                  "(default: <root>/tiles)"),
    DatasetOption("splits_dir", "path", None, "where the split manifests are kept "
                  "(default: <workdir>/splits/goldmark)"),
    DatasetOption("splits_version", "int", 1, "split manifest version; a new version draws fresh splits"),
    DatasetOption("split_manifest", "path", None, "GOLDMARK's split CSV (split_<k>_set columns) to import instead of "
                  "drawing"),
    DatasetOption("n_splits", "int", 5, "number of stratified patient-level splits drawn"),
    DatasetOption("test_fraction", "float", 0.3, "share of patients in each drawn test part"),
    DatasetOption("val_fraction", "float", 0.2, "share of the remaining patients in each validation part"),
    DatasetOption("split_protocol", "|".join(SPLIT_PROTOCOLS), "train-val-test",
                  "train-val-test: select the best epoch on validation (56/14/30 %); paper-70-30: train on the "
                  "whole 70 %, no selection, the last epoch (docs/goldmark.md, \"Split protocols\")"),
    DatasetOption("split_seed", "int", 0, "seed of the drawn splits"),
    DatasetOption("diagnostic_only", "bool", True, "keep diagnostic FFPE slides only (TCGA -DX barcodes, ffpe column)"),
    DatasetOption("dedupe", "bool", True, "keep one scan per glass slide (highest resolution, then largest file)"),
    DatasetOption("min_tissue_mm2", "float", 25.0, "leave out slides with less tissue (tissue_mm2 column)"),
    DatasetOption("compute_missing_qc", "bool", True, "compute QC statistics of feature files that carry none"),
    DatasetOption("allow_unmatched_labels", "bool", False, "leave out labelled patients without slides instead of "
                  "stopping"),
    option("mpp"),
)


@dataclass
class SlideRecord:
    """One manifest row, resolved: ids, cohort, label, files, and why it is left out (if it is)."""

    slide_id: str
    patient_id: str
    cohort: str
    row: dict[str, str]
    label: int | None = None
    feature: Path | None = None
    slide_path: Path | None = None
    tile_manifest: Path | None = None
    thumbnail: Path | None = None
    excluded: str | None = None
    feature_dim: int | None = None
    mpp: float | None = None  # the manifest's (or option mpp's) level-0 mpp, over the slide file's


@dataclass
class FeatureCheck:
    """The QC verdict of one feature file."""

    status: str
    reason: str = ""
    dim: int | None = None
    n_tiles: int | None = None


def _column(columns: list[str], key: str) -> str | None:
    return find_column(columns, key, ALIASES)


def parse_label(value: Any, where: str) -> int | None:
    """0/1 from GOLDMARK-style label values (numbers, yes/no, mutant/wildtype, MSI/MSS); None if missing."""
    text = str(value).strip().lower() if value is not None else ""
    if text in MISSING:
        return None
    if text in POSITIVE:
        return 1
    if text in NEGATIVE:
        return 0
    raise PathkitError(f"{where}: label {value!r} is not binary (expected 0/1, positive/negative, mutant/wildtype)")


def _read_table(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV/Parquet/JSON table as text cells ("" for empty), every column in every row."""
    table = read_table(path, "table")
    return [{c: "" if row.get(c) is None else str(row[c]) for c in table.columns} for row in table.rows]


def _float(value: str) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out else None


def tcga_patient(slide_id: str) -> str | None:
    match = TCGA_PATIENT.match(slide_id)
    return match.group(1).upper() if match else None


def is_tcga(slide_id: str) -> bool:
    return slide_id.upper().startswith("TCGA-")


class GoldmarkDataset(Carded, SlideClassification, Dataset, card="goldmark"):
    """GOLDMARK slide-level biomarker prediction (paper: 33 tasks, Table 1; 5 patient-level splits).

    Options (`dataset_options`, or the `:TASK` view): `task`/`view` (e.g. "COAD-MSI"), `fold`
    (1-5), `split_protocol` ("train-val-test", default: 56/14/30 with the best epoch chosen on
    validation; "paper-70-30": train on 70 %, no selection, the epoch-120 model),
    `train_cohort`/`test_cohort` (test on another cohort = every eligible slide of it,
    frozen weights), `features_dir` (may contain "{encoder}"), `splits_dir`, `splits_version`,
    `split_manifest` (import GOLDMARK's split CSV), `n_splits`, `test_fraction`, `val_fraction`,
    `split_seed`, `diagnostic_only`, `dedupe`, `min_tissue_mm2`, `compute_missing_qc`,
    `allow_unmatched_labels`, `manifest`, `labels`, `tile_manifest_dir`.
    """

    # GOLDMARK reports both the validation-selected checkpoint and the final (epoch 120) one.
    evaluate_checkpoints: ClassVar[tuple[str, ...]] = ("best", "last")
    # Run facts the pipeline passes in: features per encoder, splits and QC caches in the workspace.
    run_options: ClassVar[tuple[str, ...]] = ("encoder", "workdir")

    option_table: ClassVar[tuple[DatasetOption, ...]] = OPTIONS

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        super().__init__(root, **options)
        if self.root is not None:
            self.root = self.root.expanduser().resolve()
        self._prepared: dict[str, Any] | None = None
        self._qc_cache: dict[str, FeatureCheck] = {}
        self._unmatched_labels: list[str] = []  # labelled patients without slides (allow_unmatched_labels)

    # ------------------------------------------------------------------ public API

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        out["tasks"] = [t.as_dict() for t in TASKS]
        return out

    @property
    def goldmark_task(self) -> GoldmarkTask | None:
        return TASKS_BY_KEY.get(self.task_key)

    @property
    def task_key(self) -> str:
        name = self.options.get("task") or self.options.get("view")
        if not name:
            raise PathkitError(
                "goldmark: choose a task, e.g. --dataset goldmark:COAD-MSI (or dataset option task); known: "
                + ", ".join(TASKS_BY_KEY)
            )
        return normalise_task_key(str(name))

    @property
    def split_protocol(self) -> str:
        protocol = str(self.options.get("split_protocol") or "train-val-test")
        if protocol not in SPLIT_PROTOCOLS:
            raise PathkitError(f"goldmark: split_protocol {protocol!r} is not one of {', '.join(SPLIT_PROTOCOLS)}")
        return protocol

    @property
    def train_overrides(self) -> dict[str, Any]:
        """Training options this dataset view fixes (`TrainConfig` fields): none for
        "train-val-test"; no model selection (best = the last epoch) for "paper-70-30", whose
        validation part (the fold's test part) only steps the learning-rate schedule."""
        return {"model_selection": False} if self.split_protocol == "paper-70-30" else {}

    def validate(self) -> None:
        self._prepare()

    def class_names(self) -> tuple[str, ...]:
        return CLASS_NAMES

    def splits(self) -> dict[str, list[str]]:
        return {part: list(ids) for part, ids in self._prepare()["parts"].items()}

    def cases(self, split: str) -> Iterator[Case]:
        state = self._prepare()
        if split not in state["parts"]:
            raise PathkitError(f"goldmark: no split {split!r} (have {', '.join(state['parts'])})")
        by_id: dict[str, SlideRecord] = state["slides"]
        for case_id in state["parts"][split]:
            s = by_id[case_id]
            meta = {"cohort": s.cohort, "slide_ids": (s.slide_id,), "task": self.task_key,
                    **({"mpp": s.mpp} if s.mpp is not None and s.feature is None else {}),
                    "tile_manifests": (str(s.tile_manifest) if s.tile_manifest else None,),
                    "thumbnails": (str(s.thumbnail) if s.thumbnail else None,)}
            yield Case(case_id=case_id, patient_id=s.patient_id,
                       target=None if s.label is None else CLASS_NAMES[s.label],
                       features=(s.feature,) if s.feature is not None else (),
                       slides=(s.slide_path,) if s.feature is None and s.slide_path is not None else (),
                       meta=meta)

    def excluded_cases(self) -> dict[str, str]:
        """Slide id -> why it is left out (filters, missing label, failed or degenerate features)."""
        return dict(self._prepare()["excluded"])

    def split_manifest(self) -> Any:
        """The persisted patient-level split manifest of the training cohort (pathkit_sdk.splits)."""
        return self._prepare()["split_manifest"]

    def summary(self) -> dict[str, Any]:
        """Counts behind the run: slides and positives per part, exclusions by reason."""
        state = self._prepare()
        by_id = state["slides"]
        parts = {part: {"slides": len(ids), "positive": sum(by_id[i].label == 1 for i in ids),
                        "patients": len({by_id[i].patient_id for i in ids})}
                 for part, ids in state["parts"].items()}
        reasons = Counter(r.split(":")[0] for r in state["excluded"].values())
        return {"task": self.task_key, "fold": state["fold"], "train_cohort": state["train_cohort"],
                "test_cohort": state["test_cohort"], "parts": parts, "excluded_by_reason": dict(reasons),
                "labelled_patients_without_slides": list(self._unmatched_labels),
                "split_manifest": str(state["split_manifest"].path), "split_hash": state["split_manifest"].content_hash}

    def split_facts(self) -> dict[str, Any]:
        """The fold's split: GOLDMARK's imported manifest (given) or the protocol's stratified
        patient-level splits pathkit drew (kept in the workspace), with the counts per part."""
        state = self._prepare()
        manifest, fold = state["split_manifest"], state["fold"]
        by_id = state["slides"]
        if self.options.get("split_manifest"):
            source, text = "given", f"given: GOLDMARK split manifest {self.options['split_manifest']}"
        else:
            params = manifest.meta.get("params", {})
            source = "drawn"
            text = (f"drawn by pathkit (GOLDMARK protocol): {params.get('n_splits')} stratified patient-level "
                    f"splits, seed {params.get('seed')}")
        counts = {p: len(ids) for p, ids in state["parts"].items()}
        patients = {p: len({by_id[i].patient_id for i in ids}) for p, ids in state["parts"].items()}
        return {"source": source, "description": f"{text}; fold {fold}", "fold": fold,
                "file": str(manifest.path) if manifest.path else None, "split_hash": manifest.content_hash,
                "counts": counts, "patients": patients}

    def make_demo(self, path: str | Path) -> Path:
        """A synthetic two-cohort miniature (TCGA-style and MSKCC-style) with a planted signal;
        NOT pathology data: its features come from no encoder."""
        from pathkit_datasets._goldmark_synthetic import SyntheticSpec, write_synthetic_cohort

        task = self.options.get("task") or self.options.get("view") or "COAD-MSI"
        key = normalise_task_key(str(task))
        if key not in TASKS_BY_KEY and "-" not in key:
            known = brief_list(list(TASKS_BY_KEY), 8)
            raise PathkitError(f"dataset {self.name!r}: task {task!r} is neither a GOLDMARK task ({known}) nor a "
                               "TUMOUR-GENE key, so no synthetic demo can be made for it")
        write_synthetic_cohort(path, SyntheticSpec(task=key))
        return Path(path)

    # ------------------------------------------------------------------ preparation

    def _prepare(self) -> dict[str, Any]:
        if self._prepared is not None:
            return self._prepared
        if self.root is None or not Path(self.root).is_dir():
            raise PathkitError(f"goldmark: dataset root {self.root} is not a folder (give --dataset-root)")
        key = self.task_key
        manifest_path = self._manifest_path()
        rows = _read_table(manifest_path)
        if not rows:
            raise PathkitError(f"{manifest_path}: the slide manifest is empty")
        slides = self._slide_records(rows, manifest_path)
        in_task = self._assign_labels(slides, rows, manifest_path)
        cohorts = sorted({s.cohort for s in in_task})
        train_cohort, test_cohort = self._cohorts(cohorts, manifest_path)
        used = [s for s in in_task if s.cohort in (train_cohort, test_cohort)]
        for s in used:
            if s.label is None:
                s.excluded = f"no label: no {key} value for this slide"
        self._filter(used)
        for cohort in {train_cohort, test_cohort}:
            self._check_classes([s for s in used if s.cohort == cohort and s.excluded is None], cohort)
        split_records = [s for s in used if s.cohort == train_cohort and s.excluded is None]
        split_manifest = self._splits(split_records, train_cohort)
        # QC gating after the split draw: splits depend on labels and filters only, so they are
        # identical for every encoder even though feature failures differ between encoders.
        self._resolve_files(used)
        self._gate_features(used)
        self._check_dims(used)
        excluded = {s.slide_id: s.excluded for s in used if s.excluded is not None}
        fold = int(self.options["fold"])
        fold_parts = split_manifest.fold(fold)
        ok = {s.slide_id for s in used if s.excluded is None}
        protocol = self.split_protocol
        parts = {part: [i for i in fold_parts[part] if i in ok] for part in ("train", "val")}
        if protocol == "paper-70-30":
            # the same test part; validation patients train too (in cohort order); the fold's own
            # test part schedules the learning rate, as the public code's "validation" does
            order = {r.slide_id: n for n, r in enumerate(split_records)}
            parts = {"train": sorted(parts["train"] + parts["val"], key=order.__getitem__),
                     "val": [i + SCHEDULE_SUFFIX for i in fold_parts["test"] if i in ok]}
        if test_cohort == train_cohort:
            parts["test"] = [i for i in fold_parts["test"] if i in ok]
        else:
            parts["test"] = [s.slide_id for s in used if s.cohort == test_cohort and s.excluded is None]
        by_id = {s.slide_id: s for s in used}
        by_id.update({i: by_id[i.removesuffix(SCHEDULE_SUFFIX)] for i in parts["val"] if i.endswith(SCHEDULE_SUFFIX)})
        for part, ids in parts.items():
            labels = {by_id[i].label for i in ids}
            if labels != {0, 1}:
                lost = Counter(excluded[i].split(":")[0] for i in fold_parts.get(part, []) if i in excluded)
                raise PathkitError(
                    f"goldmark:{key}: fold {fold} {part} part holds {len(ids)} usable slide(s) with label(s) "
                    f"{sorted(labels)}; both classes are needed (excluded by QC/filters: {dict(lost) or 'none'})"
                )
        self._prepared = {"slides": by_id, "parts": parts, "excluded": excluded, "fold": fold,
                          "train_cohort": train_cohort, "test_cohort": test_cohort,
                          "split_manifest": split_manifest}
        return self._prepared

    def _label_file(self) -> Path | None:
        given = self.options.get("labels")
        if given:
            path = Path(given)
            return path if path.is_absolute() else Path(self.root) / path
        return next((Path(self.root) / n for n in LABEL_NAMES if (Path(self.root) / n).exists()), None)

    def _manifest_path(self) -> Path:
        given = self.options.get("manifest")
        if given:
            path = Path(given)
            path = path if path.is_absolute() else Path(self.root) / path
            if not path.exists():
                raise PathkitError(f"goldmark: manifest {path} does not exist")
            return path
        for name in MANIFEST_NAMES:
            if (Path(self.root) / name).exists():
                return Path(self.root) / name
        raise PathkitError(f"goldmark: {self.root} holds no slide manifest (looked for {', '.join(MANIFEST_NAMES)})")

    def _slide_records(self, rows: list[dict[str, str]], path: Path) -> list[SlideRecord]:
        columns = list(rows[0])
        sid_col = _column(columns, "slide_id")
        if sid_col is None:
            raise PathkitError(f"{path}: no slide id column (expected one of {', '.join(ALIASES['slide_id'])})")
        pid_col = _column(columns, "patient_id")
        cohort_col = _column(columns, "cohort")
        slides, seen, no_patient = [], set(), []
        for lineno, row in enumerate(rows, start=2):
            sid = row[sid_col].strip()
            if not sid:
                raise PathkitError(f"{path}: line {lineno}: empty slide id")
            plain_name(sid, f"{path}: line {lineno}: slide id")  # it names feature and tile files
            if sid in seen:
                raise PathkitError(f"{path}: line {lineno}: slide id {sid!r} appears twice")
            seen.add(sid)
            patient = row[pid_col].strip() if pid_col else ""
            patient = patient or (tcga_patient(sid) or "")
            if not patient:
                no_patient.append(sid)
                continue
            cohort = (row[cohort_col].strip() if cohort_col else "") or ("TCGA" if is_tcga(sid) else "external")
            slides.append(SlideRecord(sid, patient, cohort, row))
        if no_patient:
            raise PathkitError(
                f"{path}: {len(no_patient)} slide(s) without a patient id and not a TCGA barcode "
                f"(add a patient_id column): {', '.join(no_patient[:20])}"
            )
        return slides

    def _assign_labels(self, slides: list[SlideRecord], rows: list[dict[str, str]], path: Path) -> list[SlideRecord]:
        """Label every slide of the task; return the slides that belong to the task's tumour type."""
        key = self.task_key
        task = TASKS_BY_KEY.get(key)
        code, _, gene = key.partition("-")
        columns = list(rows[0])
        tumour_col = _column(columns, "tumor_code")

        def in_tumour(s: SlideRecord) -> bool:
            if tumour_col is None:
                return True
            value = s.row[tumour_col].strip().upper()
            return not value or value.removeprefix("TCGA-") == code

        label_file = self._label_file()
        if label_file is not None:
            return self._labels_from_table(slides, label_file, key, gene, in_tumour)
        lowered = {c.lower(): c for c in columns}
        exact = next((lowered[v.lower()] for v in (key, key.replace("-", ":"), key.replace("-", "_"))
                      if v.lower() in lowered), None)
        col = exact or lowered.get(gene.lower())
        if col is None:
            known = ", ".join(TASKS_BY_KEY) if task is None else ""
            raise PathkitError(
                f"{path}: no label column for task {key} (looked for {key!r} or {gene!r}) and no label table "
                f"({', '.join(LABEL_NAMES)})" + (f"; {key} is not a GOLDMARK task either (known: {known})"
                                                if task is None else "")
            )
        members = [s for s in slides if in_tumour(s)]
        for s in members:
            s.label = parse_label(s.row[col], f"{path}: slide {s.slide_id}, column {col}")
        return members

    def _labels_from_table(self, slides: list[SlideRecord], label_file: Path, key: str, gene: str,
                           in_tumour: Any) -> list[SlideRecord]:
        table = _read_table(label_file)
        if not table:
            raise PathkitError(f"{label_file}: the label table is empty")
        columns = list(table[0])
        pid_col = _column(columns, "patient_id")
        label_col = _column(columns, "label")
        task_col = _column(columns, "task")
        gene_col = _column(columns, "gene")
        tumour_col = _column(columns, "tumor_code")
        cohort_col = _column(columns, "cohort")
        if pid_col is None or label_col is None or (task_col is None and gene_col is None):
            raise PathkitError(f"{label_file}: a label table needs patient_id, task (or gene [+ tumor_code]) and "
                               f"label columns; it has {', '.join(columns)}")
        labels: dict[tuple[str, str], int | None] = {}
        code = key.partition("-")[0]
        for lineno, row in enumerate(table, start=2):
            if task_col is not None:
                if normalise_task_key(row[task_col]) != key:
                    continue
            else:
                if row[gene_col].strip().upper() != gene or (
                        tumour_col and row[tumour_col].strip().upper().removeprefix("TCGA-") not in ("", code)):
                    continue
            patient = row[pid_col].strip()
            cohort = row[cohort_col].strip() if cohort_col else ""
            value = parse_label(row[label_col], f"{label_file}: line {lineno}")
            previous = labels.get((patient, cohort), "unset")
            if previous != "unset" and previous != value:
                raise PathkitError(f"{label_file}: line {lineno}: patient {patient} has two different {key} labels")
            labels[(patient, cohort)] = value
        if not labels:
            raise PathkitError(f"{label_file}: no row for task {key}")
        patients = {(s.patient_id, s.cohort) for s in slides} | {(s.patient_id, "") for s in slides}
        unmatched = sorted(p for (p, c) in labels if (p, c) not in patients)
        if unmatched:
            message = (f"{label_file}: {len(unmatched)} patient(s) labelled for {key} have no slide in the "
                       f"manifest: {', '.join(unmatched[:30])}" + (" ..." if len(unmatched) > 30 else ""))
            if not self.options.get("allow_unmatched_labels"):
                raise PathkitError(message + " (fix the tables, or set allow_unmatched_labels to leave them out)")
            self._unmatched_labels = unmatched
        members = []
        for s in slides:
            value = labels.get((s.patient_id, s.cohort), labels.get((s.patient_id, ""), "absent"))
            if value == "absent":
                continue
            s.label = value  # type: ignore[assignment]
            members.append(s)
        return members

    def _cohorts(self, cohorts: list[str], path: Path) -> tuple[str, str]:
        if not cohorts:
            raise PathkitError(f"{path}: no slide belongs to task {self.task_key}")
        train = self.options.get("train_cohort") or ("TCGA" if "TCGA" in cohorts else cohorts[0])
        test = self.options.get("test_cohort") or train
        for name, value in (("train_cohort", train), ("test_cohort", test)):
            if value not in cohorts:
                raise PathkitError(f"goldmark:{self.task_key}: {name} {value!r} is not a cohort of this task "
                                   f"(cohorts: {', '.join(cohorts)})")
        return train, test

    def _filter(self, slides: list[SlideRecord]) -> None:
        """GOLDMARK curation: diagnostic FFPE slides only, one scan per glass slide, enough tissue."""
        if not slides:
            return
        columns = list(slides[0].row)
        if self.options.get("diagnostic_only"):
            _exclude_non_diagnostic(slides, _column(columns, "ffpe"))
        if self.options.get("dedupe"):
            _exclude_duplicate_scans(slides, columns)
        minimum = self.options.get("min_tissue_mm2")
        tissue_col = _column(columns, "tissue_mm2")
        if minimum is not None and tissue_col is not None:
            for s in slides:
                area = _float(s.row[tissue_col])
                if s.excluded is None and area is not None and area < float(minimum):
                    s.excluded = f"too little tissue: {area:g} mm2 < {float(minimum):g} mm2"

    def _check_classes(self, slides: list[SlideRecord], cohort: str) -> None:
        labels = Counter(s.label for s in slides)
        if len(labels) < 2:
            only = next(iter(labels), None)
            raise PathkitError(
                f"goldmark:{self.task_key}: cohort {cohort} has {len(slides)} eligible slide(s), all with label "
                f"{only}; the task needs positive and negative slides (check the label column or table)"
            )

    # ------------------------------------------------------------------ splits

    def _splits_dir(self) -> Path | None:
        """Where split manifests are kept: option splits_dir, else the workspace; never the
        dataset folder (None outside a run: the seeded draw is repeated, not written)."""
        if self.options.get("splits_dir"):
            return Path(self.options["splits_dir"])
        return splits_folder("goldmark", self.options.get("workdir"))

    def _splits(self, records: list[SlideRecord], cohort: str) -> Any:
        from pathkit_sdk.splits import SplitParams, as_records, load_or_create_splits

        params = SplitParams(n_splits=int(self.options["n_splits"]), test_fraction=float(self.options["test_fraction"]),
                             val_fraction=float(self.options["val_fraction"]), seed=int(self.options["split_seed"]))
        fold = int(self.options["fold"])
        if not 1 <= fold <= params.n_splits:
            raise PathkitError(f"goldmark: fold {fold} is outside 1..{params.n_splits}")
        split_records = as_records((s.slide_id, s.patient_id, s.label) for s in records)
        version = int(self.options["splits_version"])
        safe_cohort = re.sub(r"[^A-Za-z0-9_.-]+", "_", cohort)
        folder = self._splits_dir()
        path = confined(folder, f"{self.task_key}.{safe_cohort}.v{version}.splits.csv",
                        what=f"goldmark: splits of cohort {cohort!r}") if folder else None
        if self.options.get("split_manifest"):
            return self._imported_splits(split_records, path, version)
        name = f"goldmark:{self.task_key}:{cohort}"
        return load_or_create_splits(path, split_records, params, name=name, version=version)

    def _imported_splits(self, records: list[Any], path: Path | None, version: int) -> Any:
        """GOLDMARK's versioned split CSV (split_<k>_set columns of train/test per slide), with a
        stratified validation part carved from each training part (never from test)."""
        from pathkit_core.workspace import FileLock
        from pathkit_sdk.splits import carve_validation, from_assignments, load_splits, patient_strata

        source = Path(self.options["split_manifest"])
        source = source if source.is_absolute() else Path(self.root) / source
        table = _read_table(source)
        if not table:
            raise PathkitError(f"{source}: the split manifest is empty")
        columns = list(table[0])
        sid_col = _column(columns, "slide_id")
        split_cols = sorted((c for c in columns if re.fullmatch(r"split_\d+_set", c)),
                            key=lambda c: int(c.split("_")[1]))
        if sid_col is None or not split_cols:
            raise PathkitError(f"{source}: expected slide_id and split_<k>_set columns (GOLDMARK split manifest)")
        lock = FileLock(path.with_name(path.name + ".lock"), timeout=600) if path else contextlib.nullcontext()
        with lock:
            if path is not None and path.exists():
                manifest = load_splits(path)
                if manifest.meta.get("params", {}).get("source") == str(source):
                    return manifest
            by_slide = {row[sid_col].strip(): row for row in table}
            missing = [r.case_id for r in records if r.case_id not in by_slide]
            if missing:
                raise PathkitError(f"{source}: {len(missing)} eligible slide(s) are not in the split manifest: "
                                   f"{', '.join(missing[:20])}")
            strata = patient_strata(records)
            assignments: dict[int, dict[str, str]] = {}
            for col in split_cols:
                fold = int(col.split("_")[1])
                parts: dict[str, str] = {}
                for r in records:
                    value = by_slide[r.case_id][col].strip().lower()
                    part = {"validation": "val"}.get(value, value)
                    if part not in ("train", "val", "test"):
                        raise PathkitError(f"{source}: slide {r.case_id}: {col} is {value!r}, not train/test")
                    if parts.setdefault(r.patient_id, part) != part:
                        raise PathkitError(f"{source}: {col}: patient {r.patient_id} has slides in "
                                           f"{parts[r.patient_id]} and {part} (patient leakage)")
                if "val" not in parts.values():
                    train = {p: strata[p] for p, part in parts.items() if part == "train"}
                    for p in carve_validation(train, float(self.options["val_fraction"]),
                                              [int(self.options["split_seed"]), fold]):
                        parts[p] = "val"
                assignments[fold] = parts
            manifest = from_assignments(records, assignments, name=f"goldmark:{self.task_key}", version=version,
                                        source=str(source))
            if path is not None:
                manifest.save(path)
            return manifest

    # ------------------------------------------------------------------ features and QC

    def _features_dir(self) -> Path | None:
        given = self.options.get("features_dir")
        encoder = self.options.get("encoder") or ""
        if given:
            text = str(given)
            if "{encoder}" in text and not encoder:
                raise PathkitError("goldmark: features_dir contains {encoder} but no encoder is known")
            path = Path(text.replace("{encoder}", encoder))
            path = path if path.is_absolute() else Path(self.root) / path
            if not path.is_dir():
                raise PathkitError(f"goldmark: features_dir {path} is not a folder")
            return path
        default = Path(self.root) / "features"
        if encoder and (default / encoder).is_dir():
            return default / encoder
        return default if default.is_dir() else None

    def _resolve_files(self, slides: list[SlideRecord]) -> None:
        if not slides:
            return
        columns = list(slides[0].row)
        feat_col, slide_col = _column(columns, "feature_path"), _column(columns, "slide_path")
        tiles_col, thumb_col = _column(columns, "tile_manifest"), _column(columns, "thumbnail")
        mpp_col = _column(columns, "mpp")
        default_mpp = None if self.options.get("mpp") is None else plausible_mpp(
            self.options["mpp"], "dataset 'goldmark'", "--dataset-option mpp=MICRONS")
        features_dir = self._features_dir()
        given_tiles = self.options.get("tile_manifest_dir")
        tile_dir = Path(self.root) / (given_tiles or "tiles")

        def local(value: str, base: Path | None, what: str) -> Path | None:
            # A relative path from the manifest stays inside its folder; an absolute one is the user's.
            if not value.strip():
                return None
            path = Path(value.strip())
            if path.is_absolute():
                return path
            for folder in (base, Path(self.root)):
                if folder is not None and path_inside(folder, path, what).exists():
                    return folder / path
            return path_inside(self.root, path, what)

        for s in slides:
            if s.excluded is not None:
                continue
            what = f"goldmark manifest: slide {s.slide_id!r}:"
            s.feature = local(s.row[feat_col], features_dir, f"{what} {feat_col}") if feat_col else None
            if s.feature is not None and not s.feature.exists():
                failed = self._failed_variant(s.feature.parent, s.slide_id)
                s.feature = failed or s.feature
            if s.feature is None and features_dir is not None:
                s.feature = self._find_feature(features_dir, s.slide_id)
            s.slide_path = local(s.row[slide_col], None, f"{what} {slide_col}") if slide_col else None
            given = _float(s.row[mpp_col]) if mpp_col else None
            s.mpp = plausible_mpp(given, f"{self._manifest_path()}: slide {s.slide_id}", "fix its mpp column") \
                if given is not None else default_mpp
            s.tile_manifest = local(s.row[tiles_col], tile_dir, f"{what} {tiles_col}") if tiles_col else None
            s.thumbnail = local(s.row[thumb_col], tile_dir, f"{what} {thumb_col}") if thumb_col else None
            for suffix in (".parquet", ".csv"):
                if s.tile_manifest is None and (tile_dir / f"{s.slide_id}{suffix}").exists():
                    s.tile_manifest = tile_dir / f"{s.slide_id}{suffix}"
            if s.thumbnail is None and (tile_dir / f"{s.slide_id}.qc.png").exists():
                s.thumbnail = tile_dir / f"{s.slide_id}.qc.png"
            if s.feature is None and s.slide_path is None:
                where = f" in {features_dir}" if features_dir else ""
                s.excluded = f"no features: no feature file{where} and no slide path"

    @staticmethod
    def _find_feature(folder: Path, slide_id: str) -> Path | None:
        for name in (f"features_{slide_id}.pt", f"{slide_id}.safetensors", f"features_img{slide_id}.pt",
                     f"{slide_id}.h5", f"{slide_id}.pt"):
            if (folder / name).exists():
                return folder / name
        return GoldmarkDataset._failed_variant(folder, slide_id)

    @staticmethod
    def _failed_variant(folder: Path, slide_id: str) -> Path | None:
        if not folder.is_dir():
            return None
        for pattern in (f"features_{slide_id}.FAILED*", f"{slide_id}.FAILED*"):
            found = sorted(folder.glob(pattern))
            if found:
                return found[0]
        return None

    def _gate_features(self, slides: list[SlideRecord]) -> None:
        """Fail-closed QC: a failed, truncated or degenerate feature file excludes its slide, with the reason."""
        for s in slides:
            if s.excluded is not None or s.feature is None:
                continue
            check = self._check_feature(s.feature)
            s.feature_dim = check.dim
            if check.status != "ok":
                s.excluded = f"failed QC: {check.reason} ({s.feature.name})"

    def _check_feature(self, path: Path) -> FeatureCheck:
        cached = self._qc_cache.get(str(path))
        if cached is not None:
            return cached
        check = self._feature_record(path)
        if check is None:
            if not self.options.get("compute_missing_qc"):
                check = FeatureCheck("failed", "no QC record (set compute_missing_qc to compute it)")
            else:
                check = self._computed_qc(path)
        self._qc_cache[str(path)] = check
        return check

    def _feature_record(self, path: Path) -> FeatureCheck | None:
        """The QC verdict recorded with a feature file (FAILED suffix, GOLDMARK JSON, pathkit
        metadata); None when nothing was recorded."""
        if ".FAILED" in path.name:
            reason = path.name.split(".FAILED", 1)[1].lstrip("_").split(".")[0] or "failed"
            return FeatureCheck("failed", f"extraction marked failed ({reason})")
        if not path.exists():
            return FeatureCheck("failed", f"feature file {path} does not exist")
        side = path.with_suffix(".json")
        if path.suffix in (".pt", ".pth") and side.exists():
            try:
                meta = json.loads(side.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                return FeatureCheck("failed", f"unreadable QC record {side.name}: {exc}")
            return _verdict_from_goldmark(meta)
        if path.suffix == ".safetensors":
            from pathkit_core.features.store import read_feature_meta

            try:
                meta = read_feature_meta(path)
            except PathkitError as exc:
                return FeatureCheck("failed", str(exc))
            dim = int(meta["embed_dim"]) if str(meta.get("embed_dim", "")).isdigit() else None
            n = int(meta["n_tiles"]) if str(meta.get("n_tiles", "")).isdigit() else None
            if meta.get("status") == "failed":
                return FeatureCheck("failed", meta.get("failure_reason") or "extraction failed", dim, n)
            if meta.get("qc"):
                try:
                    qc = json.loads(meta["qc"])
                except json.JSONDecodeError:
                    return FeatureCheck("failed", "unreadable qc metadata", dim, n)
                if qc.get("failures"):
                    return FeatureCheck("failed", "; ".join(qc["failures"]), dim, n)
                variance = qc.get("mean_variance")
                if variance is not None and n and n > 1 and float(variance) <= DEGENERATE_VARIANCE:
                    return FeatureCheck("failed", f"degenerate features (mean variance {variance:.3g})", dim, n)
                return FeatureCheck("ok", "", dim, n)
        return None

    def _qc_cache_file(self, path: Path) -> Path | None:
        workdir = self.options.get("workdir")
        if not workdir:
            return None
        from pathkit_core.workspace import content_hash

        stat = path.stat()
        key = content_hash([str(path), stat.st_size, stat.st_mtime_ns])
        return Path(workdir) / "qc-cache" / "goldmark" / f"{key}.json"

    def _computed_qc(self, path: Path) -> FeatureCheck:
        from pathkit_core.features.qc import compute_qc
        from pathkit_core.features.store import load_feature_file
        from pathkit_core.workspace import atomic_write_json

        cache = self._qc_cache_file(path)
        if cache is not None and cache.exists():
            try:
                data = json.loads(cache.read_text())
                return FeatureCheck(data["status"], data["reason"], data.get("dim"), data.get("n_tiles"))
            except (OSError, json.JSONDecodeError, KeyError):
                pass
        try:
            loaded = load_feature_file(path)
        except PathkitError as exc:
            return FeatureCheck("failed", str(exc))
        report = compute_qc(loaded.features)
        check = FeatureCheck(report.status, report.reason, report.embed_dim, report.n_tiles)
        if cache is not None:
            atomic_write_json(cache, {"status": check.status, "reason": check.reason, "dim": check.dim,
                                      "n_tiles": check.n_tiles, "file": str(path)})
        return check

    def _check_dims(self, slides: list[SlideRecord]) -> None:
        by_cohort: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
        for s in slides:
            if s.excluded is None and s.feature_dim is not None:
                by_cohort[s.cohort][s.feature_dim].append(s.feature.name if s.feature else s.slide_id)
        for cohort, dims in by_cohort.items():
            if len(dims) > 1:
                shown = "; ".join(f"{dim}-d: {len(files)} file(s), e.g. {files[0]}"
                                  for dim, files in sorted(dims.items()))
                raise PathkitError(
                    f"goldmark:{self.task_key}: cohort {cohort} mixes feature dimensions ({shown}); features of "
                    "one cohort must come from one encoder"
                )
        all_dims = {d for dims in by_cohort.values() for d in dims}
        if len(all_dims) > 1:
            raise PathkitError(f"goldmark:{self.task_key}: training and test cohorts have features of different "
                               f"dimensions {sorted(all_dims)}; frozen weights need one encoder for both")


def _verdict_from_goldmark(meta: Mapping[str, Any]) -> FeatureCheck:
    """GOLDMARK's per-slide metadata JSON: status, failure_reason, num_tiles/num_features,
    embedding_variance/embedding_degenerate, feature_dim."""
    dim = meta.get("feature_dim")
    n_features, n_tiles = meta.get("num_features"), meta.get("num_tiles")
    dim = int(dim) if isinstance(dim, int | float) else None
    status = str(meta.get("status", "ok")).lower()
    if status != "ok":
        return FeatureCheck("failed", str(meta.get("failure_reason") or status), dim, n_features)
    if isinstance(n_features, int) and isinstance(n_tiles, int) and n_features != n_tiles:
        return FeatureCheck("failed", f"tile-feature count mismatch: {n_features} features for {n_tiles} tiles",
                            dim, n_features)
    variance = meta.get("embedding_variance")
    if meta.get("embedding_degenerate") is True or (
            isinstance(variance, int | float) and (n_features or 2) > 1 and variance <= DEGENERATE_VARIANCE):
        return FeatureCheck("failed", f"degenerate features (embedding variance {variance})", dim, n_features)
    return FeatureCheck("ok", "", dim, n_features)


@hookimpl
def register_datasets(register):
    register(GoldmarkDataset)


@hookimpl
def register_commands(app):
    # `pathkit crossval`: GOLDMARK's folds and reciprocal cross-site settings, with encoder rank-sums
    from pathkit_datasets._goldmark_cli import register

    register(app)


@hookimpl
def report_sections(run):
    # a GOLDMARK cell's cross-validation and cross-site results, when `pathkit crossval` ran it
    from pathkit_datasets._goldmark_report import cross_site_sections

    return cross_site_sections(run)


@hookimpl
def matrix_report_sections(board):
    # encoder rank-sums across tasks (GOLDMARK Table 2), when `pathkit crossval` wrote them
    from pathkit_datasets._goldmark_report import rank_sum_sections

    return rank_sum_sections(board)


@hookimpl
def suite_report_sections(suite):
    # GOLDMARK's encoder rank-sums over a suite's GOLDMARK tasks, beside the suite's own ranks
    from pathkit_datasets._goldmark_report import suite_rank_sum_sections

    return suite_rank_sum_sections(suite)


def _exclude_non_diagnostic(slides: list[SlideRecord], ffpe_col: str | None) -> None:
    """TCGA barcodes without -DX (frozen or other sections), and slides whose ffpe column is false."""
    for s in slides:
        if s.excluded:
            continue
        if is_tcga(s.slide_id) and "-DX" not in s.slide_id.upper():
            s.excluded = "not diagnostic FFPE: TCGA barcode without -DX (frozen or other section)"
        elif ffpe_col and parse_label(s.row[ffpe_col], f"slide {s.slide_id} ffpe") == 0:
            s.excluded = "not diagnostic FFPE: ffpe column is false"


def _exclude_duplicate_scans(slides: list[SlideRecord], columns: list[str]) -> None:
    """One scan per glass slide (its barcode): the highest resolution (smallest mpp), then the least
    compressed (largest file), then the first id."""
    barcode_col = _column(columns, "slide_barcode")
    mpp_col, size_col = _column(columns, "mpp"), _column(columns, "file_size")
    groups: dict[str, list[SlideRecord]] = defaultdict(list)
    for s in slides:
        if s.excluded:
            continue
        barcode = (s.row[barcode_col].strip() if barcode_col else "") or (
            s.slide_id.split(".")[0] if is_tcga(s.slide_id) else s.slide_id)
        groups[barcode].append(s)

    def rank(s: SlideRecord) -> tuple[float, float, str]:
        mpp = _float(s.row[mpp_col]) if mpp_col else None
        size = _float(s.row[size_col]) if size_col else None
        return (mpp if mpp is not None else float("inf"), -(size or 0.0), s.slide_id)

    for barcode, scans in groups.items():
        if len(scans) < 2:
            continue
        keep = min(scans, key=rank)
        for s in scans:
            if s is not keep:
                s.excluded = f"duplicate scan: {barcode} is also scanned as {keep.slide_id} (kept)"
