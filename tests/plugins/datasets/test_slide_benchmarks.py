"""The public slide-level benchmarks (camelyon16, panda, tcga-*) on tiny replicas of their downloads:
official splits and their counts, class maps, and every damaged or partial download refused naming
the file (docs/slide-benchmarks.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pathkit_datasets.camelyon16 import Camelyon16

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
    with pytest.raises(PathkitError, match=message.replace("(", r"\(")):
        Camelyon16(camelyon).validate()


def test_camelyon16_skip_missing_leaves_an_absent_test_slide_out_and_records_it(camelyon):
    (camelyon / "testing/images/test_004.tif").unlink()
    ds = Camelyon16(camelyon, skip_missing=True)
    assert "test_004" not in ds.splits()["test"] and "test_004" in ds.excluded_cases()
