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
from pathkit_datasets.tcga import TCGABRCA, TCGANSCLC, TCGARCC

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


# --------------------------------------------------------------------------- tcga


def test_tcga_nsclc_reads_the_gdc_layout_one_case_per_patient_with_patient_level_splits(tmp_path, cache):
    root = replicas.tcga(tmp_path / "gdc", cache, ("LUAD", "LUSC"))
    ds = TCGANSCLC(root, workdir=str(tmp_path / "work"))
    ds.validate()
    assert ds.class_names() == ("LUAD", "LUSC")
    cases = {c.case_id: c for part in ds.splits() for c in ds.cases(part)}
    assert sorted(cases) == sorted(replicas.tcga_patient(p, i) for p in ("LUAD", "LUSC") for i in range(8))
    assert cases["TCGA-LD-0000"].target == "LUAD" and len(cases["TCGA-LD-0000"].slides) == 1  # TS1 not used
    assert [s.name.split(".")[0] for s in cases["TCGA-LD-0001"].slides] == ["TCGA-LD-0001-01Z-00-DX1",
                                                                           "TCGA-LD-0001-01Z-00-DX2"]
    facts = ds.split_facts()
    assert facts["source"] == "drawn" and sum(facts["counts"].values()) == 16 and facts["case"] == "patient"


def test_tcga_rcc_maps_projects_to_subtypes_and_k_folds_keep_patients_whole(tmp_path, cache):
    root = replicas.tcga(tmp_path / "gdc", cache, ("KIRC", "KIRP", "KICH"), n=6)
    ds = TCGARCC(root, folds=3, fold=1, val_fraction=0.34)
    ds.validate()
    assert ds.class_names() == ("CCRCC", "PRCC", "CHRCC")
    targets = {c.case_id: c.target for part in ds.splits() for c in ds.cases(part)}
    assert {targets["TCGA-KC-0000"]} <= {"CCRCC", "PRCC", "CHRCC"}
    assert ds.split_facts()["counts"]["test"] == 6  # 18 patients, 3 folds


def test_tcga_brca_labels_idc_and_ilc_from_the_histology_and_records_the_others(tmp_path, cache):
    root = replicas.tcga(tmp_path / "gdc", cache, ("BRCA",), n=12)
    text = (root / "clinical.tsv").read_text()
    lines = text.splitlines()
    # patient 0 (both of its rows): a histology outside the task
    lines[1:3] = [line.replace("Infiltrating duct carcinoma, NOS", "Mucinous adenocarcinoma") for line in lines[1:3]]
    (root / "clinical.tsv").write_text("\n".join(lines) + "\n")
    ds = TCGABRCA(root)
    ds.validate()
    targets = {c.case_id: c.target for part in ds.splits() for c in ds.cases(part)}
    assert targets["TCGA-BA-0001"] == "ILC" and targets["TCGA-BA-0002"] == "IDC"
    assert "TCGA-BA-0000" not in targets and "Mucinous" in ds.excluded_cases()["TCGA-BA-0000"]


def test_tcga_survival_reads_the_cdr_endpoints_and_gdc_overall_survival(tmp_path, cache):
    cdr = replicas.tcga(tmp_path / "cdr", cache, ("LUAD",), n=10, cdr=True)
    by_endpoint = {}
    for endpoint in ("os", "dss", "pfi"):
        ds = registered(f"tcga-luad-{endpoint}")(cdr)
        ds.validate()
        by_endpoint[endpoint] = {c.case_id: c.target for part in ds.splits() for c in ds.cases(part)}
    assert by_endpoint["os"]["TCGA-LD-0002"] == {"time": 160.0, "event": 1}
    assert by_endpoint["dss"]["TCGA-LD-0002"] == {"time": 160.0, "event": 0}
    assert by_endpoint["pfi"]["TCGA-LD-0003"] == {"time": 90.0, "event": 1}
    gdc = replicas.tcga(tmp_path / "gdc", cache, ("LUAD",), n=10)
    os_gdc = registered("tcga-luad-os")(gdc)
    targets = {c.case_id: c.target for part in os_gdc.splits() for c in os_gdc.cases(part)}
    assert targets["TCGA-LD-0002"] == {"time": 160.0, "event": 1}
    assert targets["TCGA-LD-0003"] == {"time": 460.0, "event": 0}
    with pytest.raises(PathkitError, match="DSS needs the TCGA-CDR table"):
        registered("tcga-luad-dss")(gdc).validate()


@pytest.mark.parametrize(("damage", "message"), [
    (lambda r: [p.unlink() for p in r.rglob("TCGA-LD-0003-01Z-00-DX1.*.svs")],
     "1 patient(s) of the task have no diagnostic (DX) slide below the root: TCGA-LD-0003"),
    (lambda r: (r / "clinical.tsv").write_text("case_submitter_id\tprimary_diagnosis\nTCGA-LU-0000\tx\n"),
     "has no project column"),
    (lambda r: (r / "clinical.tsv").write_text("\n".join((r / "clinical.tsv").read_text().splitlines()[:-4])),
     "2 patient(s) with slides below"),
    (lambda r: (r / "clinical.tsv").unlink(), "clinical.tsv"),
])
def test_tcga_refuses_a_partial_download_naming_the_file_and_patients(tmp_path, cache, damage, message):
    root = replicas.tcga(tmp_path / "gdc", cache, ("LUAD", "LUSC"))
    damage(root)
    with pytest.raises(PathkitError, match=re.escape(message)):
        TCGANSCLC(root).validate()


def test_the_slide_benchmarks_are_registered_for_pathkit_list():
    from pathkit_core.plugins import get_plugin_manager

    names = set(get_plugin_manager().names("dataset"))
    assert {"camelyon16", "panda", "tcga-nsclc", "tcga-rcc", "tcga-brca", "tcga-luad-os", "tcga-brca-pfi"} <= names


def registered(name: str):
    from pathkit_core.plugins import get_component

    return get_component("dataset", name)
