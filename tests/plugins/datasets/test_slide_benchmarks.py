"""The TCGA clinical-table benchmarks (tcga-brca, tcga-<project>-os|dss|pfi) on tiny replicas of a GDC
download: patient-level cases and splits, k folds, and every partial download refused naming the
file (docs/slide-benchmarks.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pathkit_datasets.tcga_clinical import TCGABRCA

from pathkit_core.contracts import PathkitError
from tests.plugins.datasets import _slide_replicas as replicas


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny-slides")


# --------------------------------------------------------------------------- tcga


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


def test_tcga_brca_k_folds_keep_patients_whole_and_test_each_patient_once(tmp_path, cache):
    root = replicas.tcga(tmp_path / "gdc", cache, ("BRCA",), n=15)
    tested = []
    for fold in range(3):
        ds = TCGABRCA(root, folds=3, fold=fold, val_fraction=0.34)
        ds.validate()
        parts = ds.splits()
        assert not set(parts["train"]) & (set(parts["val"]) | set(parts["test"]))
        tested += parts["test"]
        assert ds.split_facts()["source"] == "folds" and ds.class_names() == ("IDC", "ILC")
    assert sorted(tested) == sorted(replicas.tcga_patient("BRCA", i) for i in range(15))


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
        registered("tcga-luad-os")(root).validate()


def test_the_slide_benchmarks_are_registered_for_pathkit_list():
    from pathkit_core.plugins import get_plugin_manager

    names = set(get_plugin_manager().names("dataset"))
    assert {"tcga-brca", "tcga-luad-os", "tcga-brca-pfi", "tcga-kirc-dss"} <= names


def registered(name: str):
    from pathkit_core.plugins import get_component

    return get_component("dataset", name)
