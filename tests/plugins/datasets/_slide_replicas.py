"""Tiny replicas of a GDC download of TCGA slides (the real file names and folders, GDC clinical.tsv
and TCGA-CDR headers; every slide a copy of one tiny pyramidal TIFF), shared by the dataset and
suite tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from pathkit_sdk import Blob, write_synthetic_slide


def tiny_slide(cache: Path, colour: tuple[int, int, int] = (170, 90, 160)) -> Path:
    """One 512 x 512 pyramidal TIFF at 1 um/px holding enough tissue for a few tiles (written once
    per colour)."""
    path = cache / f"tiny-{colour[0]}-{colour[1]}-{colour[2]}.tif"
    if not path.exists():
        write_synthetic_slide(path, width=512, height=512, mpp=1.0, compression="deflate", seed=sum(colour),
                              tissue=[Blob(0.5, 0.5, 0.42, 0.4, colour=colour, texture="noise")])
    return path


def place(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


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
