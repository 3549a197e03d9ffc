"""Tiny replicas of the public slide benchmarks' downloads (the real file names, CSV headers and
XML schema; every slide a copy of one tiny pyramidal TIFF), shared by the dataset and suite tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from pathkit_sdk import Blob, write_synthetic_slide

ASAP_XML = """<?xml version="1.0"?>
<ASAP_Annotations>
\t<Annotations>
\t\t<Annotation Name="Annotation 0" Type="Polygon" PartOfGroup="Tumor" Color="#F4FA58">
\t\t\t<Coordinates>
\t\t\t\t<Coordinate Order="0" X="10.5" Y="20.25" />
\t\t\t\t<Coordinate Order="1" X="30" Y="20" />
\t\t\t\t<Coordinate Order="2" X="30" Y="40" />
\t\t\t</Coordinates>
\t\t</Annotation>
\t</Annotations>
\t<AnnotationGroups>
\t\t<Group Name="Tumor" PartOfGroup="None" Color="#00ff00"><Attributes /></Group>
\t</AnnotationGroups>
</ASAP_Annotations>
"""


def tiny_slide(cache: Path, colour: tuple[int, int, int] = (170, 90, 160)) -> Path:
    """One 256 x 256 pyramidal TIFF at 0.5 um/px (written once per colour)."""
    path = cache / f"tiny-{colour[0]}-{colour[1]}-{colour[2]}.tif"
    if not path.exists():
        write_synthetic_slide(path, width=256, height=256, mpp=0.5, compression="deflate", seed=sum(colour),
                              tissue=[Blob(0.5, 0.5, 0.35, 0.35, colour=colour)])
    return path


def place(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


CAMELYON_TRAIN = ("normal_001", "normal_002", "normal_003", "normal_010", "normal_013",
                  "tumor_002", "tumor_003", "tumor_004", "tumor_001", "tumor_005")
CAMELYON_TEST = {"test_001": "Tumor,Macro,Metastases", "test_002": "Normal,,", "test_003": "Tumor,Micro,Metastases",
                 "test_004": "Normal,,"}


def camelyon16(root: Path, cache: Path) -> Path:
    """training/{normal,tumor}, testing/images, testing/reference.csv (no header), one ASAP XML."""
    pink, purple = tiny_slide(cache, (225, 150, 190)), tiny_slide(cache, (150, 70, 150))
    for slide in CAMELYON_TRAIN:
        label = slide.split("_")[0]
        place(purple if label == "tumor" else pink, root / "training" / label / f"{slide}.tif")
    for slide, row in CAMELYON_TEST.items():
        place(purple if row.startswith("Tumor") else pink, root / "testing/images" / f"{slide}.tif")
    (root / "testing/reference.csv").write_text("".join(f"{s},{r}\n" for s, r in CAMELYON_TEST.items()))
    (root / "training/lesion_annotations").mkdir(parents=True, exist_ok=True)
    (root / "training/lesion_annotations/tumor_002.xml").write_text(ASAP_XML)
    return root


PANDA_HEADER = "image_id,data_provider,isup_grade,gleason_score"
GLEASON = {"0": "0+0", "1": "3+3", "2": "3+4", "3": "4+3", "4": "4+4", "5": "4+5"}


def panda(root: Path, cache: Path, n: int = 24) -> Path:
    """train.csv (the Kaggle header), train_images/<id>.tiff, two train_label_masks/<id>_mask.tiff;
    grades 0-5 in turn, providers karolinska / radboud alternating (Radboud writes "negative")."""
    slide = tiny_slide(cache)
    lines = [PANDA_HEADER]
    for i in range(n):
        image_id = f"{i:04x}f37a1c9b6e2d48{i:010x}"[:32]
        grade, provider = str(i % 6), ("karolinska", "radboud")[(i // 6) % 2]
        gleason = "negative" if provider == "radboud" and grade == "0" else GLEASON[grade]
        lines.append(f"{image_id},{provider},{grade},{gleason}")
        place(slide, root / "train_images" / f"{image_id}.tiff")
        if i < 2:
            place(slide, root / "train_label_masks" / f"{image_id}_mask.tiff")
    (root / "train.csv").write_text("\n".join(lines) + "\n")
    return root


GDC_HEADER = ("case_id\tcase_submitter_id\tproject_id\tage_at_index\tvital_status\tdays_to_death\t"
              "days_to_last_follow_up\tprimary_diagnosis\ttreatment_type")
CDR_HEADER = ("bcr_patient_barcode\ttype\tage_at_initial_pathologic_diagnosis\thistological_type\tOS\tOS.time\tDSS\t"
              "DSS.time\tPFI\tPFI.time")
BRCA_HISTOLOGY = ("Infiltrating duct carcinoma, NOS", "Lobular carcinoma, NOS")


def tcga_patient(project: str, i: int) -> str:
    return f"TCGA-{project[0]}{project[-1]}-{i:04d}"  # the tissue-source-site code differs by project


def tcga(root: Path, cache: Path, projects: tuple[str, ...], n: int = 8, *, cdr: bool = False) -> Path:
    """A GDC download: per-file uuid folders holding TCGA-XX-XXXX-01Z-00-DX1.<UUID>.svs (the first
    patient also a frozen TS1 section, the second two DX slides), clinical.tsv in the GDC layout
    (two rows per patient: one per treatment, "'--" where empty), or with `cdr` the TCGA-CDR table."""
    slide = tiny_slide(cache)
    gdc, cdr_rows = [GDC_HEADER], [CDR_HEADER]
    for project in projects:
        for i in range(n):
            patient = tcga_patient(project, i)
            sections = ["01Z-00-DX1"] + (["01A-01-TS1"] if i == 0 else []) + (["01Z-00-DX2"] if i == 1 else [])
            for k, section in enumerate(sections):
                uuid = f"{i:08x}-{k:04x}-4a1b-9c2d-{abs(hash(project)) % 10**12:012d}"
                place(slide, root / uuid / f"{patient}-{section}.{uuid.upper()}.svs")
            dead = i % 2 == 0
            histology = BRCA_HISTOLOGY[i % 2]
            for treatment in ("Radiation Therapy, NOS", "Pharmaceutical Therapy, NOS"):
                gdc.append("\t".join([f"c0ffee{i:02d}-{project}", patient, f"TCGA-{project}", str(50 + i),
                                      "Dead" if dead else "Alive", str(100 + 30 * i) if dead else "'--",
                                      "'--" if dead else str(400 + 20 * i), histology, treatment]))
            cdr_rows.append("\t".join([patient, project, str(50 + i), histology.replace("duct", "ductal"),
                                       str(int(dead)), str(100 + 30 * i), str(int(dead and i % 4 == 0)),
                                       str(100 + 30 * i), str(int(i % 3 == 0)), str(60 + 10 * i)]))
    if cdr:
        (root / "TCGA-CDR-SupplementalTableS1.tsv").write_text("\n".join(cdr_rows) + "\n")
    else:
        (root / "clinical.tsv").write_text("\n".join(gdc) + "\n")
    return root
