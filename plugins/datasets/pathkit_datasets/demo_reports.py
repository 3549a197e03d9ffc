"""`demo-reports`: a synthetic REG-style miniature that `pathkit run` builds and runs with no arguments.

Sixty small pyramidal slides (ten per report class by default) whose tissue encodes the report
in part: the stain colour encodes the organ (stomach, breast, uterine cervix) and, on two slides
of three, the nuclei encode the diagnosis and grade (sparse small nuclei: adenoma with low-grade
dysplasia, grade II carcinoma, LSIL; dense large nuclei: poorly differentiated carcinoma, grade
III carcinoma, HSIL). On every third slide (`grade_visible` false in reports.json) the nuclei are
the same intermediate ones for both grades, so no model can tell the grade there: the demo is
imperfect on purpose, and a model lands between the most-frequent report and a perfect score.
Each class's report is a real REG 2025 report string. The split is stratified by class
(60/20/20 per class: 36/12/12 slides), so every class is seen in training, and a third of
each part hides its grade.

It is NOT pathology: it lets the whole pipeline (tiling, extraction, training, decoding,
scoring) run in minutes on a laptop and shows that a model can beat the most-frequent report.
The folder is built on first use under the workspace (`<workdir>/datasets/demo-reports/`) and
reused afterwards; its layout is the REG release layout (reports.json + slides/).
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Case, DatasetOption, PathkitError
from pathkit_core.workspace import atomic_write_json
from pathkit_datasets._demo_build import already_built, write_slides
from pathkit_datasets._reports import ReportDataset, find_file, strip_slide_suffix
from pathkit_sdk.cohort import part_counts, plain_name
from pathkit_sdk.reports import read_json

log = logging.getLogger(__name__)

DEMO_VERSION = 2  # 2: the grade is hidden on a third of the slides
SLIDE_PX = 1024  # 512 um at 0.5 mpp: about a dozen 128 um tissue tiles per slide
MPP = 0.5
STOMACH, BREAST, CERVIX = (214, 118, 146), (228, 152, 204), (168, 118, 206)
SPARSE, DENSE = (0.45, 2.5), (1.6, 4.5)  # (nuclei per 100 um^2, nucleus radius in um)
HIDDEN = (1.0, 3.5)  # between the two: the nuclei of a slide whose grade is not visible

# (REG 2025 report, organ colour, nuclei texture) per class
DEMO_CLASSES: tuple[tuple[str, tuple[int, int, int], tuple[float, float]], ...] = (
    ("Stomach, endoscopic biopsy;\n  Tubular adenoma with low grade dysplasia", STOMACH, SPARSE),
    ("Stomach, endoscopic biopsy;\n  Adenocarcinoma, poorly differentiated ", STOMACH, DENSE),
    ("Breast, sono-guided core biopsy;\n  Invasive carcinoma of no special type, grade II "
     "(Tubule formation: 3, Nuclear grade: 2, Mitoses: 1)", BREAST, SPARSE),
    ("Breast, sono-guided core biopsy;\n  Invasive carcinoma of no special type, grade III "
     "(Tubule formation: 3, Nuclear grade: 3, Mitoses: 2)", BREAST, DENSE),
    ("Uterine cervix, colposcopic biopsy;\n  Low-grade squamous intraepithelial lesion (LSIL; CIN 1)", CERVIX, SPARSE),
    ("Uterine cervix, colposcopic biopsy;\n  High-grade squamous intraepithelial lesion (HSIL; CIN 3)", CERVIX, DENSE),
)


def split_counts(per_class: int) -> tuple[int, int, int]:
    """(train, val, test) slides per class: 60/20/20, at least one in each part."""
    n_val = max(1, round(0.2 * per_class))
    n_test = max(1, round(0.2 * per_class))
    return per_class - n_val - n_test, n_val, n_test


def grade_visible(class_index: int, slide_index: int) -> bool:
    """Whether slide `slide_index` of class `class_index` shows its grade: two slides in three,
    staggered by class so that every split part (and every class) hides a third."""
    return (slide_index + class_index) % 3 != 2


def _slide_job(job: dict[str, Any]) -> str:
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    path = Path(job["path"])
    if path.exists():
        return path.name  # a finished slide from an interrupted build (writes are atomic)
    rng = random.Random(job["seed"])
    colour = tuple(max(0, min(255, c + rng.randint(-8, 8))) for c in job["colour"])
    density, radius = job["texture"]
    blob = Blob(0.5 + rng.uniform(-0.05, 0.05), 0.5 + rng.uniform(-0.05, 0.05), rng.uniform(0.33, 0.4),
                rng.uniform(0.3, 0.38), colour=colour, texture="nuclei", angle_deg=rng.uniform(0, 180),
                nuclei_density=density * rng.uniform(0.9, 1.1), nucleus_radius_um=radius)
    write_synthetic_slide(path, width=SLIDE_PX, height=SLIDE_PX, mpp=MPP, tissue=[blob], seed=job["seed"])
    return path.name


def build_demo(folder: Path, per_class: int = 10, workers: int = 2) -> Path:
    """Write the demo slides, reports.json, splits.json and (last) demo.json into `folder`."""
    if per_class < 3:
        raise PathkitError(f"demo-reports: slides_per_class must be at least 3 (one per split), got {per_class}")
    marker = folder / "demo.json"
    facts = {"version": DEMO_VERSION, "slides_per_class": per_class, "classes": len(DEMO_CLASSES)}
    if already_built(marker, facts):
        return folder
    slides_dir = folder / "slides"
    slides_dir.mkdir(parents=True, exist_ok=True)
    n_train, n_val, _ = split_counts(per_class)
    records, splits, jobs = [], {"train": [], "val": [], "test": []}, []
    for k in range(per_class):
        for c, (report, colour, texture) in enumerate(DEMO_CLASSES):
            case_id = f"DEMO_{c + 1:02d}_{k + 1:03d}"
            part = "train" if k < n_train else "val" if k < n_train + n_val else "test"
            splits[part].append(case_id)
            visible = grade_visible(c, k)
            records.append({"id": f"{case_id}.tiff", "report": report, "grade_visible": visible})
            jobs.append({"path": str(slides_dir / f"{case_id}.tiff"), "seed": 1000 * c + k, "colour": colour,
                         "texture": texture if visible else HIDDEN})
    write_slides(_slide_job, jobs, workers)
    atomic_write_json(folder / "reports.json", records)
    atomic_write_json(folder / "splits.json", splits)
    atomic_write_json(marker, facts)
    return folder


class DemoReports(ReportDataset):
    """Synthetic REG-style slides and reports (not pathology): the embedded demo."""

    name = "demo-reports"
    description = "Synthetic REG-style miniature (60 slides, 6 report classes) for the embedded demo; NOT pathology"
    license = "generated locally; report strings from REG 2025 (challenge terms)"
    citation = "pathkit demo; report phrasing from the REG 2025 challenge"
    metric_options: ClassVar[dict[str, dict[str, Any]]] = {"crqs": {"clinical_schema": "reg2025"}}
    report_cleaning: ClassVar[str] = "none"
    max_report_tokens: ClassVar[int] = 64
    synthetic: ClassVar[bool] = True
    option_table: ClassVar[tuple[DatasetOption, ...]] = (
        DatasetOption("slides_per_class", "int", 10, "slides built per report class (at least 3)"),
        DatasetOption("workers", "int", 2, "processes that build the slides"),
        DatasetOption("mpp", "float", None, "level-0 micrometres per pixel of every slide (over the files' own, "
                      f"{MPP})"),
    )
    layout: ClassVar[str] = "<root>/reports.json, <root>/splits.json, <root>/slides/<id>.tiff (built by make_demo)"
    # `pathkit run` with no arguments (this dataset answers the `default_demo` hook): a one-layer
    # WSI-Caption that learns the demo in about a minute on two CPU cores; the benchmark protocol
    # (PathBench) is the generator's and trainer's defaults, not this (docs/report-generation.md,
    # "The embedded demo")
    demo_run: ClassVar[dict[str, Any] | None] = {
        "encoder": "tiny-vit",
        "generator": "wsi-caption",
        "hparams": {"d_model": 128, "d_ff": 256, "num_heads": 4, "num_layers": 1, "drop_prob_lm": 0.1},
        "train": {"max_epochs": 20, "lr": 2e-3, "batch_size": 4, "eval_batch_size": 16,
                  "early_stop_patience": 6, "plateau_patience": 3},
        "max_tiles": 64,
    }

    def make_demo(self, path: str | Path) -> Path:
        per_class = int(self.options["slides_per_class"])
        folder = Path(path) / f"v{DEMO_VERSION}-{per_class}-per-class"
        return build_demo(folder, per_class, workers=int(self.options.get("workers") or 1))

    def load(self) -> tuple[dict[str, Case], dict[str, list[str]], dict[str, str]]:
        root = Path(self.root)
        records = read_json(root / "reports.json", "demo-reports report file")
        splits = read_json(root / "splits.json", "demo-reports split file")
        cases: dict[str, Case] = {}
        excluded: dict[str, str] = {}
        mpp = self.mpp_option()
        for i, record in enumerate(records):
            case_id = plain_name(strip_slide_suffix(record["id"]),
                                 f"demo-reports {root / 'reports.json'}: record {i} id")
            slide = find_file(root / "slides", case_id, (".tiff",))
            meta = {"grade_visible": record.get("grade_visible", True), **({"mpp": mpp} if mpp else {})}
            found = self.report_case(case_id, case_id, record["report"], slides=(slide,) if slide else (), meta=meta)
            self.keep(cases, excluded, case_id, found)
        parts = {p: [c for c in splits.get(p, []) if c in cases] for p in ("train", "val", "test")}
        self._split_facts = {"source": "given", "description": "the demo's own split (splits.json): stratified by "
                             "report class, 60/20/20, the grade hidden on a third of each part",
                             "file": str(root / "splits.json"),
                             **part_counts(parts, {c: c for c in cases})}
        return cases, parts, excluded


@hookimpl
def register_datasets(register):
    register(DemoReports)


@hookimpl
def default_demo():
    return DemoReports.name
