"""CRQS on the real REG 2025 and TCGA reports: extraction never fails, every report scores 1.0 against itself."""

from __future__ import annotations

import json

import pytest
from pathkit_metrics._crqs.compare import compare_fields
from pathkit_metrics._crqs.extract import ClinicalExtractor
from pathkit_metrics._crqs.schemas import GENERIC, REG, TCGA
from pathkit_metrics._crqs.vocabulary import build_vocabulary
from pathkit_metrics.crqs import CRQSMetric

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def reg_splits(realdata):
    return json.loads((realdata / "reports" / "reg2025_pathbench_splits.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tcga_reports(realdata):
    rows = json.loads((realdata / "reports" / "tcga_ocr_reports_sample.json").read_text(encoding="utf-8"))
    return [row["ocr_text"] for row in rows]


def test_every_reg_report_scores_one_against_itself(reg_splits):
    train = [row["report"] for row in reg_splits["train"]]
    reports = [row["report"] for split in ("train", "val", "test") for row in reg_splits[split]]
    assert len(reports) == 7405
    result = CRQSMetric().compute(reports, reports, context={"dataset": "reg2025", "train_reports": train,
                                                            "bootstrap_resamples": 0})
    table = result.per_case
    with_fields = table.filter(table["n_reference_fields"] > 0)
    assert with_fields.height == 7405  # the REG extractor finds fields in every real report
    assert with_fields["CRQS"].min() == pytest.approx(1.0) and with_fields["CRQS"].max() == pytest.approx(1.0)
    # the main diagnosis is found in (nearly) all of them, with the vocabulary learned from train only
    assert (table["reference_fields"].str.contains('"diagnosis"')).mean() > 0.99


def test_reg_learned_vocabulary_keeps_table3(reg_splits):
    train = [row["report"] for row in reg_splits["train"]]
    vocabulary = build_vocabulary(train)
    extractor = ClinicalExtractor(vocabulary)
    hsil = "Uterine cervix, colposcopic biopsy; High-grade squamous intraepithelial lesion (HSIL; CIN 2)"
    lsil = "Uterine cervix, colposcopic biopsy; Low-grade squamous intraepithelial lesion (LSIL; CIN 1)"
    ref = {k: v for k, v in extractor.extract(hsil).fields.items() if k in REG.fields}
    pred = {k: v for k, v in extractor.extract(lsil).fields.items() if k in REG.fields}
    assert compare_fields(ref, pred, REG).crqs == pytest.approx(-1 / 14)


def test_tcga_reports_sample(tcga_reports):
    # a spread-out sample in the default run; all 1,939 in the slow test below
    _check_reports(tcga_reports[::10])


@pytest.mark.slow
def test_all_tcga_reports(tcga_reports):
    assert len(tcga_reports) == 1939
    _check_reports(tcga_reports)


def test_every_tcga_report_scores_one_against_itself_or_says_why(tcga_reports):
    # no silent null: a TCGA report scored against itself gets 1.0, or a stated reason for none
    assert len(tcga_reports) == 1939
    result = CRQSMetric().compute(tcga_reports, tcga_reports, context={"dataset": "tcga", "bootstrap_resamples": 0})
    table = result.per_case
    scored = table.filter(table["CRQS"].is_not_null())
    assert scored["CRQS"].min() == pytest.approx(1.0) and scored["CRQS"].max() == pytest.approx(1.0)
    unscored = table.filter(table["CRQS"].is_null())
    assert unscored["unscored_reason"].null_count() == 0
    # 40 of 1,939 (2.1 %) today, nearly all scanned forms whose text before the first header holds no statement
    assert unscored.height < 0.025 * table.height
    assert table["reference_section"].null_count() == 0
    # most reports are read from a diagnosis or synoptic section, not whole
    assert (table["reference_section"] == "whole report").mean() < 0.02


def _check_reports(reports):
    extractor = ClinicalExtractor()
    n_with_fields = 0
    for text in reports:
        extraction = extractor.extract(text)
        for schema in (TCGA, GENERIC):
            fields = {k: v for k, v in extraction.fields.items() if k in schema.fields}
            case = compare_fields(fields, fields, schema)
            if fields:
                assert case.crqs == pytest.approx(1.0)
        n_with_fields += bool(extraction.fields)
    assert n_with_fields >= 0.95 * len(reports)
