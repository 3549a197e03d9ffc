"""The public patch benchmarks (mhist, bach, crc-100k, pcam, breakhis, bracs, unitopatho) read from
tiny replicas of their published layouts: official parts and class maps, the validation part
carved where the source has none, the published counts beside the folder's, and a damaged or
partial download refused naming the file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from pathkit_datasets.bach import BachDataset
from pathkit_datasets.bracs import BracsDataset
from pathkit_datasets.breakhis import BreakHisDataset
from pathkit_datasets.crc_100k import Crc100kDataset
from pathkit_datasets.mhist import MhistDataset
from pathkit_datasets.pcam import PcamDataset
from pathkit_datasets.unitopatho import UniToPathoDataset

from pathkit_core.contracts import PathkitError
from pathkit_core.features.images import read_image
from tests.plugins.datasets import catalogue_replicas as replicas


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("catalogue")
    return {name: getattr(replicas, name)(base / name) for name in
            ("mhist", "bach", "crc", "pcam", "breakhis", "bracs", "unitopatho")}


def counts(dataset):
    dataset.validate()
    return {part: len(ids) for part, ids in dataset.splits().items()}


def labels(dataset, part):
    return [c.target for c in dataset.cases(part)]


def test_mhist_partition_and_carved_validation(built):
    ds = MhistDataset(built["mhist"])
    # 8 + 8 training images, one per class carved into validation (10% of 8 rounds to 1)
    assert counts(ds) == {"train": 14, "val": 2, "test": 10}
    assert sorted(set(labels(ds, "val"))) == ["HP", "SSA"]
    facts = ds.split_facts()
    assert facts["source"] == "published" and facts["published_counts"] == {"train": 2175, "test": 977}
    assert "Partition" in facts["description"] and "image-level" in facts["description"]
    # the replica is not the release: the summary says the counts differ from the published ones
    assert "published 2175" in ds.summary()["warnings"][0]
    assert ds.class_names() == ("HP", "SSA")


def test_mhist_refuses_a_table_naming_absent_images(built, tmp_path):
    root = shutil.copytree(built["mhist"], tmp_path / "m")
    (root / "images" / "MHIST_aab.png").unlink()
    with pytest.raises(PathkitError, match=r"annotations.csv names 1 image\(s\) not in .*MHIST_aab.png"):
        MhistDataset(root).validate()
    text = (root / "annotations.csv").read_text().replace("Partition", "Split")
    (root / "annotations.csv").write_text(text)
    with pytest.raises(PathkitError, match="'Partition' missing"):
        MhistDataset(root).validate()


def test_bach_follows_eva_index_ranges(built):
    ds = BachDataset(built["bach"])
    got = counts(ds)
    assert got["train"] + got["val"] == 268 and got["test"] == 132  # eva's 268 / 132
    test = {c.case_id for c in ds.cases("test")}
    # eva's validation ranges [41, 59) and [60, 90) are Benign b042..b059 and b061..b090
    assert {"b042", "b059", "b061", "b090"} <= test and not {"b041", "b060", "b091"} & test
    # [139, 169): InSitu is040..is069; [345, 368): Normal n046..n068
    assert {"is040", "is069", "n046", "n068"} <= test and "n069" not in test
    assert ds.class_names() == ("Benign", "InSitu", "Invasive", "Normal")


def test_bach_refuses_a_missing_class_folder_or_photo(built, tmp_path):
    root = shutil.copytree(built["bach"], tmp_path / "b")
    (root / "ICIAR2018_BACH_Challenge" / "Photos" / "Normal" / "n100.tif").unlink()
    with pytest.raises(PathkitError, match="holds 399 photos .*Normal 99.*400"):
        BachDataset(root).validate()
    shutil.rmtree(root / "ICIAR2018_BACH_Challenge" / "Photos" / "InSitu")
    with pytest.raises(PathkitError, match="class folder .*InSitu is missing"):
        BachDataset(root).validate()


def test_crc_train_and_external_test(built):
    ds = Crc100kDataset(built["crc"])
    got = counts(ds)
    assert got == {"train": 27, "val": 9, "test": 18}  # 9 x 4 training tiles, one per class carved
    assert sorted(set(labels(ds, "test"))) == sorted(replicas.CRC_CLASSES)
    assert all(c.case_id.startswith("7K-") for c in ds.cases("test"))
    assert ds.field_of_view_um() == 112.0


def test_crc_refuses_a_missing_test_set(built, tmp_path):
    root = shutil.copytree(built["crc"], tmp_path / "c")
    shutil.rmtree(root / "CRC-VAL-HE-7K" / "STR")
    with pytest.raises(PathkitError, match="class folder .*CRC-VAL-HE-7K/STR is missing"):
        Crc100kDataset(root).validate()
    shutil.rmtree(root / "CRC-VAL-HE-7K")
    with pytest.raises(PathkitError, match="CRC-VAL-HE-7K is missing"):
        Crc100kDataset(root).validate()


def test_crc_replica_with_the_real_tiles(tmp_path):
    real = os.environ.get("PATHKIT_REALDATA")
    if not real:
        pytest.skip("PATHKIT_REALDATA is not set (the real NCT-CRC-HE-100K tiles live there)")
    tiles = tuple(sorted(Path(real, "patches").glob("*-TCGA-*.tif")))
    assert [t.name.split("-")[0] for t in tiles] == ["MUC", "TUM"]
    root = replicas.crc(tmp_path / "c", real_tiles=tiles)
    ds = Crc100kDataset(root)
    ds.validate()
    cases = {c.case_id: c for part in ("train", "val") for c in ds.cases(part)}
    for tile in tiles:
        case = cases[f"100K-{tile.stem}"]
        assert case.target == tile.name.split("-")[0]
        assert read_image(case.images[0]).size == (224, 224)  # the release's 224 px tiles
    assert ds.excluded_cases() == {}


def test_pcam_reads_h5_rows_lazily(built):
    ds = PcamDataset(built["pcam"])
    assert counts(ds) == {"train": 12, "val": 6, "test": 6}
    case = next(ds.cases("val"))
    assert case.case_id == "valid-0" and case.target == "no_tumor"
    image = read_image(case.images[0])
    assert image.size == (96, 96) and image.mode == "RGB"
    with h5py.File(built["pcam"] / "camelyonpatch_level_2_split_valid_x.h5") as handle:
        assert np.array_equal(np.asarray(image), handle["x"][0])
    assert ds.split_facts()["published_counts"] == {"train": 262144, "val": 32768, "test": 32768}


def test_pcam_refuses_wrong_shapes_and_missing_files(built, tmp_path):
    root = shutil.copytree(built["pcam"], tmp_path / "p")
    x = root / "camelyonpatch_level_2_split_test_x.h5"
    with h5py.File(x, "w") as handle:
        handle.create_dataset("x", data=np.zeros((6, 64, 64, 3), np.uint8))
    with pytest.raises(PathkitError, match=r"test_x.h5: array 'x' is uint8 of shape \(6, 64, 64, 3\)"):
        PcamDataset(root).validate()
    with h5py.File(x, "w") as handle:
        handle.create_dataset("x", data=np.zeros((5, 96, 96, 3), np.uint8))
    with pytest.raises(PathkitError, match="holds 5 images but camelyonpatch_level_2_split_test_y.h5 6 labels"):
        PcamDataset(root).validate()
    x.unlink()
    x.with_name(x.name + ".gz").write_bytes(b"")
    with pytest.raises(PathkitError, match="test_x.h5 is missing; camelyonpatch_level_2_split_test_x.h5.gz is "
                                           "there: gunzip it"):
        PcamDataset(root).validate()


def test_breakhis_patient_split_at_one_magnification(built):
    ds = BreakHisDataset(built["breakhis"])
    got = counts(ds)
    # 4 classes x 4 patients x 2 images at 40X; eva's held-out patients (one per class) are the test
    assert got["test"] == 8 and got["train"] + got["val"] == 24
    assert {c.patient_id for c in ds.cases("test")} == set(replicas.BREAKHIS_HELD_OUT)
    train = {c.patient_id for c in ds.cases("train")}
    assert not train & {c.patient_id for c in ds.cases("val")}  # carved by patient
    assert all(c.meta["file"].split("/")[-2] == "40X" for c in ds.cases("test"))
    assert counts(BreakHisDataset(built["breakhis"], magnification="100X"))["test"] == 8


def test_bracs_official_folders(built):
    ds = BracsDataset(built["bracs"])
    assert counts(ds) == {"train": 14, "val": 14, "test": 14}
    assert ds.class_names() == ("N", "PB", "UDH", "FEA", "ADH", "DCIS", "IC")
    case = next(ds.cases("val"))
    assert case.target == "N" and case.patient_id == case.case_id.rsplit("_", 2)[0]
    assert ds.split_facts()["published_counts"] == {"train": 3657, "val": 312, "test": 570}


@pytest.mark.parametrize(("cls", "folder", "message"), [
    (BreakHisDataset, "BreaKHis_v1/histology_slides/breast/malignant/SOB/mucinous_carcinoma",
     "mucinous_carcinoma is missing"),
    (BracsDataset, "BRACS_RoI/latest_version/val/3_FEA", "class folder .*val/3_FEA is missing"),
])
def test_a_missing_class_folder_is_refused_naming_it(built, tmp_path, cls, folder, message):
    root = shutil.copytree(built[cls.name], tmp_path / "r")
    shutil.rmtree(root / folder)
    with pytest.raises(PathkitError, match=message):
        cls(root).validate()


def test_unitopatho_tables(built):
    ds = UniToPathoDataset(built["unitopatho"])
    got = counts(ds)
    assert got["test"] == 12 and got["train"] + got["val"] == 36
    assert sorted(set(labels(ds, "test"))) == sorted(replicas.UNITOPATHO)
    slides = {p: {c.patient_id for c in ds.cases(p)} for p in ("train", "val", "test")}
    assert not slides["train"] & slides["val"]


def test_unitopatho_refuses_tables_and_files_that_disagree(built, tmp_path):
    root = shutil.copytree(built["unitopatho"], tmp_path / "u")
    victim = next((root / "800" / "NORM").iterdir())
    victim.unlink()
    with pytest.raises(PathkitError, match=r"names 1 image\(s\) not under"):
        UniToPathoDataset(root).validate()
    replicas.save(root / "800" / "NORM" / "stray.png", replicas.patch(1, np.random.default_rng(0)))
    replicas.save(victim, replicas.patch(1, np.random.default_rng(0)))
    with pytest.raises(PathkitError, match=r"1 image\(s\) under .* are in neither table: stray.png"):
        UniToPathoDataset(root).validate()


def test_an_unreadable_image_is_excluded_with_its_name(built, tmp_path):
    root = shutil.copytree(built["bracs"], tmp_path / "r")
    bad = root / "BRACS_RoI/latest_version/train/0_N/BRACS_1001_N_1.png"
    bad.write_bytes(b"")
    ds = BracsDataset(root)
    ds.validate()
    assert ds.excluded_cases() == {"BRACS_1001_N_1": "train/0_N/BRACS_1001_N_1.png: empty file (0 bytes)"}


@pytest.mark.slow
@pytest.mark.parametrize("name, folder, n_images", [("bracs", "bracs", 42), ("pcam", "pcam", 24)])
def test_a_patch_head_runs_on_the_replica(cli, built, tmp_path, name, folder, n_images):
    """`pathkit run` with the kNN head: h5 rows and PNG files reach the encoder, the published split
    reaches metrics.json, and the head beats the majority class on the class-coloured replica."""
    import json

    config = tmp_path / "knn.toml"
    config.write_text("[hparams]\nk = 1\n")  # two to six training patches per class
    result = cli("run", "--dataset", name, "--dataset-root", built[folder], "--encoder", "tiny-vit",
                 "--generator", "knn", "--workdir", tmp_path, "--config", config)
    assert result.exit_code == 0, result.output
    run_dir = next((tmp_path / "runs" / name / "tiny-vit" / "knn").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["split"]["source"] == "published"
    scores = metrics["metrics"]["classification"]
    assert scores["balanced_accuracy"] > metrics["baselines"]["majority-class"]["classification"]["balanced_accuracy"]
    cost = json.loads((run_dir / "cost.json").read_text())  # what the run cost, stage by stage
    assert set(cost["stages"]) == {"dataset", "features", "fit", "predict", "score", "report"}
    assert cost["n_tiles"] == n_images and cost["tiles_per_second"] > 0  # one tile per patch image
    assert cost["device"].startswith("CPU: ")


def test_camelyon16_eva_split_labels_and_lesions(tmp_path):
    from pathkit_datasets.camelyon16 import Camelyon16Dataset

    ds = Camelyon16Dataset(replicas.camelyon16(tmp_path / "c16"))
    assert counts(ds) == {"train": 4, "val": 4, "test": 4}
    assert {c.case_id for c in ds.cases("val")} == {"normal_010", "normal_013", "tumor_001", "tumor_005"}
    assert labels(ds, "test") == ["tumor", "normal", "normal", "tumor"]  # reference.csv, lower-cased
    lesions = {c.case_id: c.meta.get("n_lesions") for part in ("train", "val") for c in ds.cases(part)}
    assert lesions == {"normal_001": None, "normal_002": None, "normal_010": None, "normal_013": None,
                       "tumor_002": 1, "tumor_003": 2, "tumor_001": 3, "tumor_005": 4}
    assert ds.split_facts()["published_counts"] == {"train": 216, "val": 54, "test": 129}


def test_camelyon16_refuses_a_partial_download(tmp_path):
    from pathkit_datasets.camelyon16 import Camelyon16Dataset

    root = replicas.camelyon16(tmp_path / "c16")
    (root / "testing" / "images" / "test_002.tif").unlink()
    with pytest.raises(PathkitError, match=r"reference.csv names 1 slide\(s\) not in testing/images: test_002"):
        Camelyon16Dataset(root).validate()
    ds = Camelyon16Dataset(root, skip_missing=True)
    ds.validate()
    assert list(ds.excluded_cases()) == ["test_002"] and len(ds.splits()["test"]) == 3
    (root / "training" / "lesion_annotations" / "tumor_003.xml").write_text("<ASAP_Annotations><Annotations>")
    with pytest.raises(PathkitError, match="tumor_003.xml: not a readable ASAP annotation XML"):
        Camelyon16Dataset(root, skip_missing=True).validate()
    shutil.rmtree(root / "training" / "tumor")
    with pytest.raises(PathkitError, match="training/tumor is missing"):
        Camelyon16Dataset(root).validate()


def test_panda_grades_providers_and_a_stratified_split(tmp_path):
    from pathkit_datasets.panda import PandaDataset

    root = replicas.panda(tmp_path / "panda")
    ds = PandaDataset(root, workdir=tmp_path / "work")
    got = counts(ds)
    assert sum(got.values()) == 24 and all(n >= 6 for n in got.values())
    for part in ("train", "val", "test"):  # stratified: every grade in training, at least one in each part
        assert len(set(labels(ds, part))) >= (6 if part == "train" else 1)
    assert ds.class_names() == ("0", "1", "2", "3", "4", "5") and ds.ordered_classes() == ds.class_names()
    case = next(ds.cases("train"))
    assert case.slides[0].name == f"{case.case_id}.tiff" and case.meta["data_provider"] in ("karolinska", "radboud")
    assert ds.split_facts()["source"] == "drawn" and ds.split_facts()["seed"] == 42
    again = PandaDataset(root, workdir=tmp_path / "work")
    assert again.splits() == ds.splits()  # kept in the workspace, read back
    only = PandaDataset(root, data_provider="radboud")
    only.validate()
    assert {c.meta["data_provider"] for p in ("train", "val", "test") for c in only.cases(p)} == {"radboud"}


def test_panda_refuses_absent_slides_and_bad_grades(tmp_path):
    from pathkit_datasets.panda import PandaDataset

    root = replicas.panda(tmp_path / "panda")
    victim = next((root / "train_images").iterdir())
    victim.unlink()
    with pytest.raises(PathkitError, match=rf"train.csv names 1 slide\(s\) not in .*{victim.stem}"):
        PandaDataset(root).validate()
    ds = PandaDataset(root, skip_missing=True)
    ds.validate()
    assert list(ds.excluded_cases()) == [victim.stem]
    text = (root / "train.csv").read_text().splitlines()
    text[1] = ",".join(text[1].split(",")[:2] + ["6", "5+5"])
    (root / "train.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(PathkitError, match="isup_grade '6' is not 0-5"):
        PandaDataset(root, skip_missing=True).validate()


def test_few_shot_keeps_n_training_images_per_class(built):
    whole = PcamDataset(built["pcam"])
    whole.validate()
    ds = PcamDataset(built["pcam"], shots=2, shot_seed=3)
    assert counts(ds) == {"train": 4, "val": 6, "test": 6}  # validation and test stay whole
    assert sorted(labels(ds, "train")) == ["no_tumor", "no_tumor", "tumor", "tumor"]
    assert set(ds.splits()["train"]) <= set(whole.splits()["train"])
    assert PcamDataset(built["pcam"], shots=2, shot_seed=3).splits() == ds.splits()  # seeded
    draws = {tuple(PcamDataset(built["pcam"], shots=2, shot_seed=s).splits()["train"]) for s in range(6)}
    assert len(draws) > 1  # another seed, another draw
    assert "few-shot: 2 training image(s) per class" in ds.split_facts()["description"]
    with pytest.raises(PathkitError, match="shots=7 but class.*no_tumor 6"):
        PcamDataset(built["pcam"], shots=7).validate()


def test_tcga_subtyping_reads_the_gdc_layout_by_patient(tmp_path):
    from pathkit_datasets.tcga_subtyping import DATASETS, parse_barcode

    nsclc, rcc = DATASETS
    assert parse_barcode("TCGA-05-4244-01Z-00-DX1.d4ff32cd-38cf-40ea-8213-45c2b100ac01.svs") == ("TCGA-05-4244", "DX")
    root = replicas.tcga(tmp_path / "gdc", ("TCGA-KIRC", "TCGA-KIRP", "TCGA-KICH"), patients=5)
    ds = rcc(root, workdir=tmp_path / "work")
    got = counts(ds)
    assert sum(got.values()) == 15 and ds.class_names() == ("CCRCC", "PRCC", "CHRCC")
    cases = {c.case_id: c for p in ("train", "val", "test") for c in ds.cases(p)}
    assert len(cases["TCGA-00-1000"].slides) == 2  # both DX slides of the patient, no frozen slide
    assert all("-DX" in s.name for c in cases.values() for s in c.slides)
    assert {c.target for c in cases.values() if c.case_id.startswith("TCGA-02-")} == {"CHRCC"}
    slides = rcc(root, case="slide", slide_types="all")
    slides.validate()
    parts = {p: {c.patient_id for c in slides.cases(p)} for p in ("train", "val", "test")}
    assert not (parts["train"] & parts["val"] or parts["train"] & parts["test"])  # patient-level
    assert sum(len(slides.splits()[p]) for p in parts) == 5 * 3 * 2 + 3
    with pytest.raises(PathkitError, match="project folder .*TCGA-LUAD is missing"):
        nsclc(root).validate()
    next((root / "TCGA-KICH").rglob("*.svs")).rename(root / "TCGA-KICH" / "slide.svs")
    with pytest.raises(PathkitError, match="slide.svs: not named by a TCGA barcode"):
        rcc(root).validate()


def test_tcga_subtyping_k_folds_keep_patients_whole_and_test_each_patient_once(tmp_path):
    from pathkit_datasets.tcga_subtyping import DATASETS

    rcc = DATASETS[1]
    root = replicas.tcga(tmp_path / "gdc", ("TCGA-KIRC", "TCGA-KIRP", "TCGA-KICH"), patients=5)
    tested = []
    for fold in range(3):
        ds = rcc(root, folds=3, fold=fold, val_fraction=0.34)
        ds.validate()
        parts = ds.splits()
        assert not set(parts["train"]) & (set(parts["val"]) | set(parts["test"])) and parts["val"]
        tested += parts["test"]
        facts = ds.split_facts()
        assert facts["source"] == "folds" and facts["fold"] == fold and "k patient-level folds" in facts["protocol"]
        for part in ("train", "test"):  # stratified: every class in each part (5 patients a class, 3 folds)
            assert {c.target for c in ds.cases(part)} == {"CCRCC", "PRCC", "CHRCC"}
    assert sorted(tested) == sorted(f"TCGA-{k:02d}-{1000 + n}" for k in range(3) for n in range(5))
    # one case per slide: a patient's slides still fall in one fold
    slides = rcc(root, case="slide", slide_types="all", folds=3, fold=1, val_fraction=0.34)
    parts = {p: {c.patient_id for c in slides.cases(p)} for p in ("train", "val", "test")}
    assert not (parts["train"] & parts["test"] or parts["val"] & parts["test"] or parts["train"] & parts["val"])
    assert rcc(root, folds=3, fold=2).splits() != rcc(root, folds=3, fold=2, split_seed=1).splits()  # seeded
    with pytest.raises(PathkitError, match="folds=3 and fold=3"):
        rcc(root, folds=3, fold=3).validate()
