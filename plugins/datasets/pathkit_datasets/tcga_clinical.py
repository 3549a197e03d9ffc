"""`tcga-brca` (IDC vs ILC subtyping) and `tcga-<project>-os|dss|pfi` (survival): the TCGA tasks whose
target is in the clinical table, over diagnostic slides as the GDC delivers them, one case per
patient (docs/slide-benchmarks.md). The project-labelled subtyping tasks `tcga-nsclc` and
`tcga-rcc` are `pathkit_datasets.tcga_subtyping`'s.

Layout (a GDC download: the slides of the projects, and their clinical table):

    <root>/**/TCGA-XX-XXXX-01Z-00-DX1.<uuid>.svs   anywhere below the root (the GDC client puts each
                                                   file in a folder named by its file uuid)
    <root>/clinical.tsv                            GDC clinical table (case_submitter_id, project_id,
                                                   primary_diagnosis, vital_status, days_to_death,
                                                   days_to_last_follow_up; old or dotted column names)
    or <root>/TCGA-CDR-SupplementalTableS1.tsv     the TCGA-CDR table (Liu et al. 2018) saved as TSV/CSV:
                                                   bcr_patient_barcode, type, histological_type, OS,
                                                   OS.time, DSS, DSS.time, PFI, PFI.time

The patient is the first 12 characters of the barcode (TCGA-XX-XXXX); a patient's DX slides (FFPE
diagnostic sections) form its case, so every split is patient-level. The BRCA labels come from
the histology (IDC: "Infiltrating duct carcinoma, NOS" / "Infiltrating Ductal Carcinoma"; ILC:
"Lobular carcinoma, NOS" / "Infiltrating Lobular Carcinoma"; other histologies are left out,
recorded). Survival needs the TCGA-CDR table for DSS and PFI; OS also reads a GDC clinical table
(vital_status, days_to_death or days_to_last_follow_up). Times are in days.

TCGA publishes no split: pathkit draws a patient-disjoint stratified one (split_seed), or k folds
(folds=K, fold=I); option splits_file takes a published one (e.g. Patho-Bench's) exactly.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import DatasetOption, PathkitError
from pathkit_datasets._slide_catalogue import CATALOGUE_OPTIONS, SlideCatalogueDataset
from pathkit_datasets.tcga_pathtext import diagnostic_rank, files_by_patient
from pathkit_sdk.cohort import MISSING_CELL, CaseRows, CohortRow, cell, find_table, read_table, require_columns
from pathkit_tasks import TASK_SLIDE_CLASSIFICATION, TASK_SURVIVAL

SLIDE_SUFFIXES = (".svs", ".tif", ".tiff")
CLINICAL_NAMES = ("clinical.tsv", "TCGA-CDR-SupplementalTableS1.tsv", "TCGA-CDR-SupplementalTableS1.csv",
                  "TCGA-CDR-SupplementalTableS1.txt", "clinical.csv")
ALIASES: dict[str, tuple[str, ...]] = {
    "patient": ("case_submitter_id", "cases.submitter_id", "bcr_patient_barcode", "submitter_id"),
    "project": ("project_id", "project.project_id", "type"),
    "histology": ("primary_diagnosis", "diagnoses.primary_diagnosis", "histological_type"),
    "vital_status": ("vital_status", "demographic.vital_status"),
    "days_to_death": ("days_to_death", "demographic.days_to_death"),
    "days_to_last_follow_up": ("days_to_last_follow_up", "diagnoses.days_to_last_follow_up"),
    **{k: (k.lower(),) for k in ("OS", "OS.time", "DSS", "DSS.time", "PFI", "PFI.time")},  # matched lower-cased
}
OPTIONAL = tuple(k for k in ALIASES if k not in ("patient", "project"))
LAYOUT = ("GDC slides TCGA-XX-XXXX-...-DX1.<uuid>.svs anywhere below <root> (per-file uuid folders allowed) and "
          "<root>/clinical.tsv (GDC: case_submitter_id, project_id, ...) or <root>/TCGA-CDR-SupplementalTableS1.tsv "
          "(bcr_patient_barcode, type, OS, OS.time, ...); option clinical=FILE for another name")
TCGA_OPTIONS: tuple[DatasetOption, ...] = (
    DatasetOption("clinical", "path", None, "the clinical table: GDC clinical.tsv or the TCGA-CDR table as TSV/CSV "
                  "(default: clinical.tsv or TCGA-CDR-SupplementalTableS1.tsv in the root)"),
    DatasetOption("slides_dir", "path", None, "folder searched recursively for the slides (default: the root)"),
    *CATALOGUE_OPTIONS,
)


def project_code(value: str) -> str:
    """"TCGA-LUAD" (GDC project_id) and "LUAD" (TCGA-CDR type) alike as "LUAD"."""
    text = value.strip().upper()
    return text[len("TCGA-"):] if text.startswith("TCGA-") else text


def read_clinical(path: Path) -> tuple[dict[str, dict[str, set[str]]], dict[str, str | None]]:
    """({patient: {field: its distinct non-missing values}}, {field: column}) of a GDC or TCGA-CDR
    table (GDC writes one row per diagnosis or treatment, "'--" where empty)."""
    table = read_table(path, "TCGA clinical table")
    found = require_columns(table, ("patient", "project"), OPTIONAL, ALIASES, what="TCGA clinical table")
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in table.rows:
        patient = cell(row.get(found["patient"])).upper()[:12]
        if not patient:
            continue
        for field, column in found.items():
            value = cell(row.get(column)) if column else ""
            if value and value.lower() not in MISSING_CELL and value != "'--":
                out[patient][field].add(value)
    return out, found


class LeftOut(str):
    """Why a patient of the task has no target (recorded with the excluded cases)."""


def one_value(fields: dict[str, set[str]], field: str) -> str | None:
    values = fields.get(field, set())
    return next(iter(values)) if len(values) == 1 else None


class TCGASlides(SlideCatalogueDataset):
    """TCGA diagnostic slides of a GDC download with a clinical table; subclasses give the target."""

    license: ClassVar[str] = "GDC open access (NIH Genomic Data Sharing policy)"
    citation: ClassVar[str] = ("The Cancer Genome Atlas Research Network; Liu et al., An Integrated TCGA "
                               "Pan-Cancer Clinical Data Resource (TCGA-CDR), Cell 2018")
    case_rule: ClassVar[str] = "patient"
    option_table: ClassVar[tuple[DatasetOption, ...]] = TCGA_OPTIONS
    layout: ClassVar[str] = LAYOUT
    projects: ClassVar[tuple[str, ...]] = ()

    def target(self, fields: dict[str, set[str]], columns: dict[str, str | None], path: Path) -> Any:
        """The patient's target, or a `LeftOut` reason why the patient has none."""
        raise NotImplementedError

    def slide_rows(self) -> tuple[list[CohortRow], Path]:
        root = Path(self.root)
        path = find_table(root, CLINICAL_NAMES, self.option_path("clinical"), "TCGA clinical table", LAYOUT)
        clinical, columns = read_clinical(path)
        in_task = {p: f for p, f in clinical.items() if {project_code(v) for v in f["project"]} & set(self.projects)}
        if not in_task:
            raise PathkitError(f"TCGA clinical table {path}: no patient of project(s) {', '.join(self.projects)}")
        slides = files_by_patient(self.option_path("slides_dir") or root, SLIDE_SUFFIXES)
        rows: list[CohortRow] = []
        self._left_out: dict[str, str] = {}
        absent = []
        for patient, fields in sorted(in_task.items()):
            target = self.target(fields, columns, path)
            if isinstance(target, LeftOut):
                self._left_out[patient] = target
                continue
            dx = sorted((s for s in slides.get(patient, []) if diagnostic_rank(s)), key=diagnostic_rank)
            if not dx:
                absent.append(patient)
            for slide in dx:
                rows.append(CohortRow(len(rows), f"{patient}: {slide.name}", slide.name.split(".")[0], patient,
                                      target, slide))
        self._check_absent(absent, path)
        if not rows:
            reasons = "; ".join(f"{p}: {why}" for p, why in list(self._left_out.items())[:5])
            raise PathkitError(f"TCGA clinical table {path}: no patient of {', '.join(self.projects)} has a target "
                               f"and a DX slide ({reasons})")
        strays = sorted(set(slides) - set(clinical))
        if strays:
            raise PathkitError(f"TCGA clinical table {path}: {len(strays)} patient(s) with slides below {root} have no "
                               f"row: {', '.join(strays[:20])} (a partial clinical download?)")
        return rows, path

    def _check_absent(self, absent: list[str], path: Path) -> None:
        """Patients of the task whose DX slide is not in the download: an error, or left out with
        --skip-missing (recorded)."""
        if absent and not self.options.get("skip_missing"):
            raise PathkitError(f"TCGA clinical table {path}: {len(absent)} patient(s) of the task have no diagnostic "
                               f"(DX) slide below the root: {', '.join(absent[:20])}"
                               f"{' and more' if len(absent) > 20 else ''}; download them, or rerun with "
                               "--skip-missing to leave them out (they are recorded)")
        for patient in absent:
            self._left_out[patient] = "left out: no diagnostic (DX) slide in the download"

    def load(self):
        cases, parts, excluded = super().load()
        return cases, parts, {**excluded, **getattr(self, "_left_out", {})}


class TCGASubtyping(TCGASlides):
    """A TCGA subtyping task read from the clinical table: one class per project, or per histology
    within one project."""

    task: ClassVar[str] = TASK_SLIDE_CLASSIFICATION
    default_metrics: ClassVar[tuple[str, ...]] = ("classification",)
    selection_metric: ClassVar[str | None] = "classification:AUROC"
    selection_options: ClassVar[dict[str, Any]] = {"n_resamples": 0}
    classes: ClassVar[dict[str, str]] = {}  # project (or histology, lower-case) -> class name
    by_histology: ClassVar[bool] = False

    def target(self, fields, columns, path):
        if self.by_histology:
            values = {self.classes.get(v.strip().lower()) for v in fields.get("histology", set())}
            if columns.get("histology") is None:
                raise PathkitError(f"TCGA clinical table {path}: no histology column (accepted names: "
                                   f"{', '.join(ALIASES['histology'])})")
        else:
            values = {self.classes.get(project_code(v)) for v in fields["project"]}
        values.discard(None)
        if len(values) != 1:
            shown = ", ".join(sorted(fields.get("histology" if self.by_histology else "project", set()))) or "none"
            return LeftOut(f"left out: not one class of the task ({shown})")
        return values.pop()

    def class_order(self, labels, table):
        return tuple(dict.fromkeys(self.classes.values()))


class TCGABRCA(TCGASubtyping):
    name: ClassVar[str] = "tcga-brca"
    description: ClassVar[str] = "TCGA breast cancer subtyping, IDC vs ILC from the histology (patient-level)"
    projects: ClassVar[tuple[str, ...]] = ("BRCA",)
    by_histology: ClassVar[bool] = True
    classes: ClassVar[dict[str, str]] = {
        "infiltrating duct carcinoma, nos": "IDC", "infiltrating ductal carcinoma": "IDC",
        "lobular carcinoma, nos": "ILC", "infiltrating lobular carcinoma": "ILC",
    }


class TCGASurvival(TCGASlides):
    """Overall, disease-specific or progression-free survival of one TCGA project (days)."""

    task: ClassVar[str] = TASK_SURVIVAL
    default_metrics: ClassVar[tuple[str, ...]] = ("survival",)
    endpoint: ClassVar[str] = "OS"

    def target(self, fields, columns, path):
        from pathkit_tasks.survival.target import parse_event, parse_time

        if columns.get(self.endpoint) is None:
            return self._gdc_overall_survival(fields, columns, path)
        try:
            return {"time": parse_time(one_value(fields, f"{self.endpoint}.time")),
                    "event": parse_event(one_value(fields, self.endpoint))}
        except ValueError as exc:
            return LeftOut(f"left out: no {self.endpoint} time and event ({exc})")

    def _gdc_overall_survival(self, fields, columns, path):
        """OS from a GDC table: dead -> days_to_death, event 1; alive -> days_to_last_follow_up, 0."""
        from pathkit_tasks.survival.target import parse_time

        if self.endpoint != "OS" or columns.get("vital_status") is None:
            raise PathkitError(f"TCGA clinical table {path}: no {self.endpoint} and {self.endpoint}.time columns; "
                               f"{self.endpoint} needs the TCGA-CDR table (TCGA-CDR-SupplementalTableS1, saved as "
                               "TSV)" + ("" if self.endpoint != "OS" else " or a GDC table with vital_status"))
        status = (one_value(fields, "vital_status") or "").lower()
        field, event = ("days_to_death", 1) if status == "dead" else ("days_to_last_follow_up", 0)
        if status not in ("dead", "alive"):
            return LeftOut(f"left out: vital_status {status or 'missing'}")
        days = sorted(fields.get(field, set()), key=lambda v: float(v) if v.replace(".", "", 1).isdigit() else -1)
        try:
            return {"time": parse_time(days[-1] if days else None), "event": event}
        except ValueError as exc:
            return LeftOut(f"left out: no {field} ({exc})")

    def task_is_classification(self) -> bool:
        return False

    def strata(self, groups: dict[str, CaseRows]) -> dict[str, str]:
        return {c: str(g.value["event"]) for c, g in groups.items()}

    def target_of(self, group: CaseRows) -> Any:
        return dict(group.value)

    def split_facts(self) -> dict[str, Any]:
        return {**super().split_facts(), "endpoint": self.endpoint, "time_unit": "days"}


# TCGA projects with a diagnostic-slide cohort and follow-up used by slide-level survival benchmarks
SURVIVAL_PROJECTS = ("BLCA", "BRCA", "COAD", "GBM", "HNSC", "KIRC", "KIRP", "LGG", "LIHC", "LUAD", "LUSC", "PAAD",
                     "READ", "SKCM", "STAD", "UCEC")
ENDPOINTS = {"OS": "overall", "DSS": "disease-specific", "PFI": "progression-free interval"}


def survival_dataset(project: str, endpoint: str) -> type[TCGASurvival]:
    name = f"tcga-{project.lower()}-{endpoint.lower()}"
    return type(f"TCGA{project}{endpoint}", (TCGASurvival,), {
        "name": name, "endpoint": endpoint, "projects": (project,), "__module__": __name__,
        "__doc__": f"TCGA-{project} {ENDPOINTS[endpoint]} survival (days), one case per patient.",
        "description": f"TCGA-{project} {ENDPOINTS[endpoint]} survival ({endpoint}, days; patient-level)"})


SURVIVAL_DATASETS = tuple(survival_dataset(p, e) for p in SURVIVAL_PROJECTS for e in ENDPOINTS)


@hookimpl
def register_datasets(register):
    for dataset in (TCGABRCA, *SURVIVAL_DATASETS):
        register(dataset)
