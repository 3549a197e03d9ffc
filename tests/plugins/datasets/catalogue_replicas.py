"""Tiny replicas of the public patch benchmarks, laid out as their publishers distribute them: the
same folder and file names, CSV headers, h5 keys, shapes and dtypes, a few images per class.
Each image is a small patch whose colour says its class (learnable, so a head beats chance)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

# One colour per class index: far apart, so a kNN head on tiny-vit features separates them.
PALETTE = [(220, 60, 60), (60, 200, 60), (60, 60, 220), (230, 220, 40), (200, 60, 220), (40, 210, 220),
           (250, 140, 20), (120, 120, 120), (20, 20, 20)]


def patch(class_index: int, rng: np.random.Generator, px: int = 16) -> np.ndarray:
    base = np.array(PALETTE[class_index % len(PALETTE)], dtype=np.float32)
    return np.clip(base + rng.normal(0, 8, (px, px, 3)), 0, 255).astype(np.uint8)


def save(path: Path, pixels: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)


def mhist(root: Path, n_train: int = 8, n_test: int = 5) -> Path:
    rng = np.random.default_rng(1)
    rows = [("Image Name", "Majority Vote Label", "Number of Annotators who Selected SSA (Out of 7)", "Partition")]
    n = 0
    for part, count in (("train", n_train), ("test", n_test)):
        for label_index, label in enumerate(("HP", "SSA")):
            for _ in range(count):
                name = f"MHIST_{chr(97 + n // 676)}{chr(97 + n // 26 % 26)}{chr(97 + n % 26)}.png"
                n += 1
                save(root / "images" / name, patch(label_index, rng))
                rows.append((name, label, str(5 if label == "SSA" else 1), part))
    with open(root / "annotations.csv", "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return root


BACH_PREFIX = {"Benign": "b", "InSitu": "is", "Invasive": "iv", "Normal": "n"}


def bach(root: Path) -> Path:
    rng = np.random.default_rng(2)
    for index, (label, prefix) in enumerate(BACH_PREFIX.items()):
        for n in range(1, 101):
            save(root / "ICIAR2018_BACH_Challenge" / "Photos" / label / f"{prefix}{n:03d}.tif", patch(index, rng, 8))
    return root


CRC_CLASSES = ("ADI", "BACK", "DEB", "LYM", "MUC", "MUS", "NORM", "STR", "TUM")


def _crc_name(rng: np.random.Generator) -> str:
    return "".join(chr(65 + int(k)) for k in rng.integers(0, 26, 8))


def crc(root: Path, n_train: int = 4, n_test: int = 2, real_tiles: tuple[Path, ...] = ()) -> Path:
    """NCT-CRC-HE-100K/<class>/<CLASS>-<8 letters>.tif and CRC-VAL-HE-7K likewise; `real_tiles`
    (MUC-*.tif, TUM-*.tif of the real release) are copied into the training set's class folders."""
    import shutil

    rng = np.random.default_rng(3)
    for folder, count in (("NCT-CRC-HE-100K", n_train), ("CRC-VAL-HE-7K", n_test)):
        for index, label in enumerate(CRC_CLASSES):
            for _ in range(count):
                save(root / folder / label / f"{label}-{_crc_name(rng)}.tif", patch(index, rng))
    for tile in real_tiles:
        shutil.copy(tile, root / "NCT-CRC-HE-100K" / tile.name.split("-")[0] / tile.name)
    return root


def pcam(root: Path, counts: dict[str, int] | None = None) -> Path:
    import h5py

    rng = np.random.default_rng(4)
    root.mkdir(parents=True, exist_ok=True)
    for part, n in (counts or {"train": 12, "valid": 6, "test": 6}).items():
        labels = np.array([i % 2 for i in range(n)], dtype=np.uint8)
        images = np.stack([patch(int(v), rng, 96) for v in labels])
        with h5py.File(root / f"camelyonpatch_level_2_split_{part}_x.h5", "w") as handle:
            handle.create_dataset("x", data=images, dtype=np.uint8)
        with h5py.File(root / f"camelyonpatch_level_2_split_{part}_y.h5", "w") as handle:
            handle.create_dataset("y", data=labels.reshape(n, 1, 1, 1), dtype=np.uint8)
    return root


# class -> (benign/malignant, type folder, [(patient, held out by eva?)])
BREAKHIS = {
    "TA": ("benign", "tubular_adenoma", ("3411F", "13200", "21978AB", "3909")),
    "F": ("benign", "fibroadenoma", ("9133", "23222AB", "29960AB", "2773")),
    "MC": ("malignant", "mucinous_carcinoma", ("13418DE", "18842", "16456", "19979")),
    "DC": ("malignant", "ductal_carcinoma", ("2523", "6241", "4372", "5287")),
}
# patients of the replica that eva holds out: the last of each class above
BREAKHIS_HELD_OUT = ("3909", "2773", "19979", "5287")


def breakhis(root: Path, per_patient: int = 2) -> Path:
    rng = np.random.default_rng(5)
    breast = root / "BreaKHis_v1" / "histology_slides" / "breast"
    for index, (label, (kind, folder, patients)) in enumerate(BREAKHIS.items()):
        letter = kind[0].upper()
        for patient in patients:
            for magnification, code in (("40X", "40"), ("100X", "100")):
                for n in range(1, per_patient + 1):
                    name = f"SOB_{letter}_{label}-14-{patient}-{code}-{n:03d}.png"
                    save(breast / kind / "SOB" / folder / f"SOB_{letter}_{label}_14-{patient}" / magnification / name,
                         patch(index, rng))
    return root


BRACS_FOLDERS = ("0_N", "1_PB", "2_UDH", "3_FEA", "4_ADH", "5_DCIS", "6_IC")


def bracs(root: Path, per_class: int = 2) -> Path:
    rng = np.random.default_rng(6)
    slide = 1000
    for part in ("train", "val", "test"):
        for index, folder in enumerate(BRACS_FOLDERS):
            for n in range(1, per_class + 1):
                slide += 1
                short = folder.split("_", 1)[1]
                save(root / "BRACS_RoI" / "latest_version" / part / folder / f"BRACS_{slide}_{short}_{n}.png",
                     patch(index, rng))
    return root


UNITOPATHO = ("HP", "NORM", "TA.HG", "TA.LG", "TVA.HG", "TVA.LG")


def unitopatho(root: Path, slides_per_class: int = 3, per_slide: int = 2) -> Path:
    rng = np.random.default_rng(7)
    base = root / "800"
    tables = {"train": [], "test": []}
    for index, label in enumerate(UNITOPATHO):
        for s in range(slides_per_class + 1):
            wsi = f"{index}{s}-B3-{label.replace('.', '')}.ndpi"
            part = "test" if s == slides_per_class else "train"
            for n in range(per_slide):
                image_id = f"{wsi}_ROI__mpp0.44_reg00{n}_crop_sk0000{n}_({n},0,1812,1812).png"
                save(base / label / image_id, patch(index, rng))
                tables[part].append((image_id, index, label, wsi))
    for part, rows in tables.items():
        with open(base / f"{part}.csv", "w", newline="") as handle:
            csv.writer(handle).writerows([("image_id", "top_label", "top_label_name", "wsi"), *rows])
    return root


ASAP_XML = """<?xml version="1.0"?>
<ASAP_Annotations>
\t<Annotations>
{annotations}\t</Annotations>
\t<AnnotationGroups>
\t\t<Group Name="_0" PartOfGroup="None" Color="#ff0000"><Attributes /></Group>
\t</AnnotationGroups>
</ASAP_Annotations>
"""
ASAP_LESION = ("\t\t<Annotation Name=\"Annotation {n}\" Type=\"Polygon\" PartOfGroup=\"_0\" Color=\"#F4FA58\">\n"
               "\t\t\t<Coordinates>\n\t\t\t\t<Coordinate Order=\"0\" X=\"100.5\" Y=\"200.25\" />\n"
               "\t\t\t\t<Coordinate Order=\"1\" X=\"150\" Y=\"260\" />\n\t\t\t</Coordinates>\n\t\t</Annotation>\n")


def camelyon16(root: Path) -> Path:
    """training/{normal,tumor}/*.tif (two of each of eva's validation slides among them), their
    lesion XMLs, testing/images/*.tif and the header-less testing/reference.csv. The slides are
    small placeholder TIFFs: the reader checks names and labels, not pixels."""
    rng = np.random.default_rng(8)
    names = {"normal": ("normal_001", "normal_002", "normal_010", "normal_013"),
             "tumor": ("tumor_002", "tumor_003", "tumor_001", "tumor_005")}
    for label, stems in names.items():
        for stem in stems:
            save(root / "training" / label / f"{stem}.tif", patch(CLASS_INDEX[label], rng))
    for n, stem in enumerate(names["tumor"], start=1):
        xml = ASAP_XML.format(annotations="".join(ASAP_LESION.format(n=k) for k in range(n)))
        (root / "training" / "lesion_annotations").mkdir(parents=True, exist_ok=True)
        (root / "training" / "lesion_annotations" / f"{stem}.xml").write_text(xml)
    rows = []
    for n, label in enumerate(("Tumor", "Normal", "Normal", "Tumor"), start=1):
        stem = f"test_{n:03d}"
        save(root / "testing" / "images" / f"{stem}.tif", patch(CLASS_INDEX[label.lower()], rng))
        rows.append((stem, label, "Macro" if label == "Tumor" else "", "") if label == "Tumor" else (stem, label))
    with open(root / "testing" / "reference.csv", "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return root


CLASS_INDEX = {"normal": 0, "tumor": 1}


PANDA_GLEASON = {"0": "0+0", "1": "3+3", "2": "3+4", "3": "4+3", "4": "4+4", "5": "4+5"}


def panda(root: Path, per_grade: int = 4) -> Path:
    """train.csv (Kaggle's header) and train_images/<image_id>.tiff placeholders, both providers
    (Radboud writes negative biopsies' Gleason score as "negative", Karolinska as "0+0")."""
    import hashlib

    rng = np.random.default_rng(9)
    rows = [("image_id", "data_provider", "isup_grade", "gleason_score")]
    for grade, gleason in PANDA_GLEASON.items():
        for n in range(per_grade):
            image_id = hashlib.md5(f"{grade}-{n}".encode()).hexdigest()
            provider = "radboud" if n % 2 else "karolinska"
            score = "negative" if provider == "radboud" and grade == "0" else gleason
            save(root / "train_images" / f"{image_id}.tiff", patch(int(grade), rng))
            rows.append((image_id, provider, grade, score))
    with open(root / "train.csv", "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return root


def tcga(root: Path, projects: tuple[str, ...], patients: int = 4) -> Path:
    """GDC Data Transfer Tool folders: <project>/<file uuid>/<barcode>.<uuid>.svs, a diagnostic (DX)
    slide per patient, a second DX slide for the first patient and a frozen (TS) one for each
    (placeholder files: the reader checks names, not pixels)."""
    import uuid

    rng = np.random.default_rng(10)
    for k, project in enumerate(projects):
        for n in range(patients):
            patient = f"TCGA-{k:02d}-{1000 + n}"
            names = [f"{patient}-01Z-00-DX1", f"{patient}-01A-01-TS1"] + ([f"{patient}-01Z-00-DX2"] if n == 0 else [])
            for name in names:
                file_id = str(uuid.UUID(int=int(rng.integers(1 << 62))))
                path = root / project / file_id / f"{name}.{file_id}.svs"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"placeholder")
    return root
