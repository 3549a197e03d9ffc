"""tcga-nsclc, tcga-rcc: TCGA cancer subtyping from the diagnostic slides, with patient-level splits.

Read as the GDC Data Transfer Tool lays out a download, one folder per TCGA project:
`<root>/TCGA-LUAD/<file uuid>/<barcode>.<uuid>.svs` (the GDC's file folders; slides directly
under the project folder are read too). The class is the project (NSCLC: LUAD vs LUSC; RCC:
KIRC, KIRP, KICH as CCRCC, PRCC, CHRCC), the patient the barcode's first 12 characters
(`TCGA-05-4244`). Only formalin-fixed diagnostic slides (`-DX` in the barcode's slide part) are
read by default, as UNI, CLAM and Patho-Bench use them (option `slide_types=all` adds the frozen
`-TS`/`-BS` slides). There is no official split: pathkit draws a patient-level seeded split
stratified by class (a patient's slides stay together), or, with options `folds`/`fold`, one of k
patient-disjoint stratified folds (`_slide_catalogue.fold_split`, the tcga-clinical datasets'
split). docs/catalogue.md#tcga-subtyping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_datasets._protocols import SlideClassification
from pathkit_datasets._slide_catalogue import FOLD_OPTIONS, fold_split
from pathkit_sdk.cohort import CaseRows, CohortDataset, check_part_classes, drawn_split, option

# TCGA-<TSS>-<participant>-<sample><vial>-<portion><analyte>-<slide type><n>
BARCODE = re.compile(r"^(TCGA-[A-Z0-9]{2}-[A-Z0-9]{4})-\d{2}[A-Z]-\d{2}[A-Z]?-([A-Z]{2})\d*", re.IGNORECASE)
SLIDE_SUFFIXES = (".svs", ".tif", ".tiff")


@dataclass(frozen=True)
class SubtypingTask:
    """One subtyping task: its dataset name, TCGA projects and the class each is."""

    name: str
    description: str
    projects: dict[str, str]  # project folder -> class


TASKS = (
    SubtypingTask("tcga-nsclc", "TCGA NSCLC subtyping: LUAD vs LUSC diagnostic slides, patient-level split",
                  {"TCGA-LUAD": "LUAD", "TCGA-LUSC": "LUSC"}),
    SubtypingTask("tcga-rcc", "TCGA RCC subtyping: CCRCC (KIRC), PRCC (KIRP), CHRCC (KICH), patient-level split",
                  {"TCGA-KIRC": "CCRCC", "TCGA-KIRP": "PRCC", "TCGA-KICH": "CHRCC"}),
)


def parse_barcode(file_name: str) -> tuple[str, str] | None:
    """(patient, slide type: DX, TS, BS, MS) of a TCGA slide file name, or None."""
    found = BARCODE.match(file_name)
    return (found.group(1).upper(), found.group(2).upper()) if found else None


class TcgaSubtyping(SlideClassification, CohortDataset):
    """A TCGA subtyping task over the GDC layout (see the module docstring)."""

    spec: ClassVar[SubtypingTask]
    license: ClassVar[str] = "TCGA open access (NIH Genomic Data Commons data use policy)"
    citation: ClassVar[str] = ("The Cancer Genome Atlas Research Network; slides from the NCI Genomic Data Commons "
                               "(https://portal.gdc.cancer.gov)")
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("slide_types", "DX|all", "DX", "diagnostic (FFPE, -DX) slides only, or every slide type"),
        option("split_seed"), option("val_fraction"), option("test_fraction"),
        DatasetOption("case", "slide|patient", "patient", "one case per patient (its slides together) or per slide"),
        *FOLD_OPTIONS,
    )
    run_options: ClassVar[tuple[str, ...]] = ("workdir",)

    def class_names(self) -> tuple[str, ...]:
        return tuple(self.spec.projects.values())

    def _slides(self) -> list[tuple[Path, str, str]]:
        """(slide, class, patient) of every slide of the task's project folders."""
        out = []
        for project, label in self.spec.projects.items():
            folder = Path(self.root) / project
            if not folder.is_dir():
                raise PathkitError(f"dataset {self.name!r}: project folder {folder} is missing; expected "
                                   f"{', '.join(self.spec.projects)} under {self.root} (one GDC download each)")
            files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in SLIDE_SUFFIXES and p.is_file())
            kept = 0
            for path in files:
                parsed = parse_barcode(path.name)
                if parsed is None:
                    raise PathkitError(f"{path}: not named by a TCGA barcode (TCGA-XX-XXXX-01Z-00-DX1...)")
                if self.options["slide_types"] == "DX" and parsed[1] != "DX":
                    continue
                out.append((path, label, parsed[0]))
                kept += 1
            if not kept:
                raise PathkitError(f"dataset {self.name!r}: {folder} holds no {self.options['slide_types']} slide")
        return out

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        slides = self._slides()
        classes_of: dict[str, set[str]] = {}
        for _, label, patient in slides:
            classes_of.setdefault(patient, set()).add(label)
        both = sorted(p for p, c in classes_of.items() if len(c) > 1)
        if both:
            raise PathkitError(f"dataset {self.name!r}: patient(s) {', '.join(both[:10])} have slides in two projects")
        per_patient = self.options["case"] == "patient"
        groups: dict[str, list[Path]] = {}
        for path, _, patient in slides:
            groups.setdefault(patient if per_patient else path.name.split(".")[0], []).append(path)
        patient_of = {c: c[:12] for c in groups}
        labels = {c: next(iter(classes_of[patient_of[c]])) for c in groups}
        seed = int(self.options["split_seed"])
        fractions = (float(self.options["val_fraction"]), float(self.options["test_fraction"]))
        found = fold_split(self.name, {c: CaseRows(c, p, []) for c, p in patient_of.items()}, labels, self.options)
        parts, facts = found or drawn_split(self.name, patient_of, seed=seed, fractions=fractions,
                                            workdir=self.options.get("workdir"), labels=labels, unit="patient")
        check_part_classes(parts, labels, f"dataset {self.name!r}")
        kind = "k patient-level folds stratified by class" if found else "patient-level, seeded, stratified by class"
        self._split_facts = {**facts, "protocol": f"no official split: {kind}"}
        cases = {c: Case(c, patient_of[c], target=labels[c], slides=tuple(sorted(files)),
                         meta={"project": next(p for p, v in self.spec.projects.items() if v == labels[c])})
                 for c, files in groups.items()}
        return cases, parts, {}


def _dataset(spec: SubtypingTask) -> type[TcgaSubtyping]:
    layout = " and ".join(f"<root>/{p}/<uuid>/<barcode>.svs" for p in spec.projects)
    return type(spec.name.replace("-", "_").title().replace("_", ""), (TcgaSubtyping,),
                {"spec": spec, "name": spec.name, "description": spec.description, "layout": layout,
                 "metric_options": {"classification": {"classes": list(spec.projects.values())}},
                 "__module__": __name__})


DATASETS = tuple(_dataset(t) for t in TASKS)


@hookimpl
def register_datasets(register):
    for cls in DATASETS:
        register(cls)
