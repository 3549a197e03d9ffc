"""The public slide-level benchmarks (camelyon16, panda, tcga-*) on tiny replicas of their downloads:
official splits and their counts, class maps, and every damaged or partial download refused naming
the file (docs/slide-benchmarks.md)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pathkit_datasets.camelyon16 import Camelyon16
from pathkit_datasets.panda import PANDA

from pathkit_core.contracts import PathkitError
from tests.plugins.datasets import _slide_replicas as replicas


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny-slides")


@pytest.fixture
def camelyon(tmp_path, cache) -> Path:
    return replicas.camelyon16(tmp_path / "CAMELYON16", cache)


def test_camelyon16_reads_the_release_with_the_official_split_and_eva_val(camelyon):
    ds = Camelyon16(camelyon)
    ds.validate()
    parts = ds.splits()
    assert sorted(parts["val"]) == ["normal_010", "normal_013", "tumor_001", "tumor_005"]
    assert sorted(parts["train"]) == ["normal_001", "normal_002", "normal_003", "tumor_002", "tumor_003", "tumor_004"]
    assert sorted(parts["test"]) == ["test_001", "test_002", "test_003", "test_004"]
    assert ds.class_names() == ("normal", "tumor")
    targets = {c.case_id: c.target for part in parts for c in ds.cases(part)}
    assert targets["test_001"] == "tumor" and targets["test_002"] == "normal" and targets["tumor_005"] == "tumor"
    facts = ds.split_facts()
    assert facts["source"] == "official" and facts["counts"] == {"train": 6, "val": 4, "test": 4}
    assert facts["annotated_slides"] == 1


@pytest.mark.parametrize(("damage", "message"), [
    (lambda r: (r / "testing/images/test_003.tif").unlink(), "test_003.tif"),
    (lambda r: (r / "testing/reference.csv").unlink(), "reference.csv is missing"),
    (lambda r: shutil.rmtree(r / "training/normal"), "training/normal is missing"),
    (lambda r: (r / "testing/reference.csv").write_text("image,label\ntest_001,Tumor\n"), "line 1: expected test_NNN"),
    (lambda r: replicas.place(r / "testing/images/test_001.tif", r / "testing/images/test_009.tif"),
     "have no row: test_009"),
    (lambda r: (r / "training/lesion_annotations/tumor_002.xml").write_text("<Annotations><Annotation/></Annotations>"),
     "not ASAP's schema"),
    (lambda r: (r / "training/lesion_annotations/tumor_002.xml").write_text(
        replicas.ASAP_XML.replace(' PartOfGroup="Tumor" Color', ' Color')), "has no PartOfGroup"),
    (lambda r: (r / "training/lesion_annotations/tumor_002.xml").write_text("<ASAP_Annotations"), "not readable XML"),
    (lambda r: replicas.place(r / "training/lesion_annotations/tumor_002.xml",
                              r / "training/lesion_annotations/tumor_077.xml"), "tumor_077.tif absent"),
])
def test_camelyon16_refuses_a_damaged_download_naming_the_file(camelyon, damage, message):
    damage(camelyon)
    with pytest.raises(PathkitError, match=re.escape(message)):
        Camelyon16(camelyon).validate()


def test_camelyon16_skip_missing_leaves_an_absent_test_slide_out_and_records_it(camelyon):
    (camelyon / "testing/images/test_004.tif").unlink()
    ds = Camelyon16(camelyon, skip_missing=True)
    assert "test_004" not in ds.splits()["test"] and "test_004" in ds.excluded_cases()


# --------------------------------------------------------------------------- panda


@pytest.fixture
def panda(tmp_path, cache) -> Path:
    return replicas.panda(tmp_path / "prostate-cancer-grade-assessment", cache)


def test_panda_reads_train_csv_as_ordinal_grades_with_a_stratified_drawn_split(panda, tmp_path):
    ds = PANDA(panda, workdir=str(tmp_path / "work"))
    ds.validate()
    parts = ds.splits()
    assert {p: len(v) for p, v in parts.items()} == {"train": 16, "val": 4, "test": 4}
    assert sorted(sum(parts.values(), [])) == sorted(p.stem for p in (panda / "train_images").glob("*.tiff"))
    assert ds.ordered_classes() == ("0", "1", "2", "3", "4", "5")
    case = next(ds.cases("train"))
    assert case.target in ds.ordered_classes() and case.meta["cohort"] in ("karolinska", "radboud")
    assert "gleason_score" not in case.meta  # the grade's own source never reaches the model
    facts = ds.split_facts()
    assert facts["source"] == "drawn" and facts["label_masks"] == 2
    again = PANDA(panda, workdir=str(tmp_path / "work"))
    assert again.splits() == parts  # the drawn split is kept and read back


@pytest.mark.parametrize(("damage", "message"), [
    (lambda r: next((r / "train_images").glob("*.tiff")).unlink(), "1 slide file(s) do not exist"),
    (lambda r: (r / "train.csv").write_text("image_id,data_provider,gleason_score\nab,radboud,3+3\n"),
     "has no isup_grade column"),
    (lambda r: (r / "train.csv").write_text(replicas.PANDA_HEADER + "\nab,radboud,7,4+5\n"), "line 2: image_id 'ab'"),
    (lambda r: shutil.rmtree(r / "train_images"), "train_images is missing"),
    (lambda r: replicas.place(replicas.Path(r / "train.csv"), r / "train_label_masks/zz_mask.tiff"),
     "zz_mask.tiff: names no image"),
])
def test_panda_refuses_a_damaged_download_naming_the_file(panda, damage, message):
    damage(panda)
    with pytest.raises(PathkitError, match=re.escape(message)):
        PANDA(panda).validate()


def test_panda_k_folds_are_patient_disjoint_and_cover_every_image_once_as_test(panda):
    tests = []
    for fold in range(3):
        parts = PANDA(panda, folds=3, fold=fold).splits()
        assert not set(parts["train"]) & set(parts["val"]) and not set(parts["train"]) & set(parts["test"])
        tests += parts["test"]
    assert sorted(tests) == sorted(p.stem for p in (panda / "train_images").glob("*.tiff"))
