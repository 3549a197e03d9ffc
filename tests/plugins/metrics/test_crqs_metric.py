"""CRQS metric: component arithmetic, field rules, the paper's Table 3, inputs, summary and the three interfaces."""

from __future__ import annotations

import json

import polars as pl
import pytest
from pathkit_metrics._crqs.clinical_schema import ClinicalSchema
from pathkit_metrics._crqs.compare import compare_fields, values_equivalent
from pathkit_metrics._crqs.schemas import HISTAI, REG, TCGA
from pathkit_metrics.crqs import CRQSMetric, extract_fields

from pathkit_core.contracts import PathkitError
from pathkit_sdk.bootstrap import bootstrap_ci

TABLE3_REFERENCE_1 = "Uterine cervix, colposcopic biopsy; High-grade squamous intraepithelial lesion (HSIL; CIN 2)"
TABLE3_PREDICTION_1 = "Uterine cervix, colposcopic biopsy; Low-grade squamous intraepithelial lesion (LSIL; CIN 1)"
TABLE3_REFERENCE_2 = ("The lymph node biopsy from the right supraclavicular area corresponds to a reactive lymph node. "
                      "No evidence of metastatic carcinoma is identified.")
TABLE3_PREDICTION_2 = "Morphological and immunophenotypic features correspond to reactive lymph node hyperplasia."

NO_CI = {"bootstrap_resamples": 0}


def _score(prediction, reference, **context):
    result = CRQSMetric().compute([prediction], [reference], context={**NO_CI, **context})
    return result.per_case.row(0, named=True)


# ----------------------------------------------------------------------------- components by hand

SCHEMA = ClinicalSchema(
    "hand", fields=("diagnosis", "tumor_grade", "necrosis", "margin_status", "calcification"),
    key_fields=("diagnosis", "tumor_grade"),
)


def test_components_by_hand():
    reference = {"diagnosis": "adenocarcinoma", "tumor_grade": "2", "necrosis": "present", "margin_status": "negative"}
    prediction = {"diagnosis": "adenocarcinoma", "tumor_grade": "3", "necrosis": "present", "calcification": "present"}
    case = compare_fields(reference, prediction, SCHEMA)
    assert case.matched == ("diagnosis", "necrosis")
    assert case.discordant == ("tumor_grade",)
    assert case.missed == ("margin_status",)
    assert case.hallucinated == ("calcification",)
    # CFC = 2/4, KIR = 1/2, HR = 1/4 (only the field absent from the reference), CDS = 1/3
    assert case.cfc == pytest.approx(0.5)
    assert case.kir == pytest.approx(0.5)
    assert case.hr == pytest.approx(0.25)
    assert case.cds == pytest.approx(1 / 3)
    raw = 0.3 * 0.5 + 0.4 * 0.5 - 0.2 * 0.25 - 0.4 / 3
    assert case.crqs_raw == pytest.approx(raw)
    assert case.crqs == pytest.approx(raw / 0.7)
    eq6 = 0.3 * 0.5 + 0.4 * 0.5 + 0.2 * 0.75 + 0.4 * (2 / 3)
    assert case.crqs_eq6_raw == pytest.approx(eq6)
    assert case.crqs_eq6 == pytest.approx(eq6 / 0.7)


def test_edge_cases_of_the_components():
    perfect = compare_fields({"necrosis": "present"}, {"necrosis": "present"}, SCHEMA)
    # no key field in the reference: KIR is undefined and CFC stands in for it, so a perfect copy scores 1
    assert perfect.kir is None and perfect.crqs == pytest.approx(1.0)
    empty_prediction = compare_fields({"diagnosis": "adenocarcinoma"}, {}, SCHEMA)
    assert (empty_prediction.cfc, empty_prediction.kir, empty_prediction.hr, empty_prediction.cds) == (0, 0, 0, 0)
    assert empty_prediction.crqs == 0.0
    no_reference = compare_fields({}, {"diagnosis": "adenocarcinoma"}, SCHEMA)
    assert no_reference.cfc is None and no_reference.crqs is None and no_reference.hr == 1.0
    worst = compare_fields({"diagnosis": "a", "tumor_grade": "1"}, {"diagnosis": "b", "tumor_grade": "3"}, SCHEMA)
    assert worst.crqs == pytest.approx(-0.4 / 0.7)  # CDS = 1 with nothing hallucinated


def test_field_rules():
    # text: non-strict fields accept a phrase contained in the other, strict ones do not
    assert values_equivalent("specimen_type", "biopsy", "colposcopic biopsy", REG)
    assert not values_equivalent("diagnosis", "adenocarcinoma", "acinar adenocarcinoma", REG)
    assert values_equivalent("diagnosis", "adenocarcinoma", "acinar adenocarcinoma", SCHEMA)
    # numeric: REG tumour volume within 10 percentage points; TCGA size within 15 % relative
    assert values_equivalent("tumor_volume", "40%", "50%", REG)
    assert not values_equivalent("tumor_volume", "40%", "51%", REG)
    assert values_equivalent("tumor_size", "2 cm", "2.3 cm", TCGA)
    assert not values_equivalent("tumor_size", "2 cm", "2.4 cm", TCGA)
    strict_volume = ClinicalSchema("s", fields=("tumor_volume",), key_fields=(), strict_fields=("tumor_volume",),
                                   numeric_fields=("tumor_volume",))
    assert not values_equivalent("tumor_volume", "40%", "41%", strict_volume)
    # ordinal: equal rank only, and never across scales
    assert values_equivalent("tumor_grade", "2", "2", REG)
    assert not values_equivalent("tumor_grade", "2", "3", REG)
    assert not values_equivalent("tumor_grade", "2", "high", REG)
    tolerant = ClinicalSchema("t", fields=("nuclear_grade",), key_fields=(), numeric_fields=("nuclear_grade",),
                              numeric_tolerance={"nuclear_grade": 1})
    assert values_equivalent("nuclear_grade", "2", "3", tolerant)
    assert not values_equivalent("nuclear_grade", "1", "3", tolerant)
    # Gleason: same sum, same patterns where both give them; strict (REG) wants the same notation
    loose = ClinicalSchema("g", fields=("gleason_score",), key_fields=())
    assert values_equivalent("gleason_score", "3+4=7", "7", loose)
    assert not values_equivalent("gleason_score", "3+4=7", "4+3=7", loose)
    assert not values_equivalent("gleason_score", "3+4=7", "7", REG)


# ----------------------------------------------------------------------------- the paper's Table 3


def test_table3_example_1_reproduces_published_crqs():
    row = _score(TABLE3_PREDICTION_1, TABLE3_REFERENCE_1, dataset="reg2025")
    assert row["CRQS"] == pytest.approx(-0.0714, abs=5e-5)
    assert row["CRQS"] == pytest.approx(-1 / 14)
    assert (row["CFC"], row["KIR"], row["HR"], row["CDS"]) == pytest.approx((0.5, 0.0, 0.0, 0.5))
    assert row["matched"] == ["organ_site", "specimen_type", "in_situ_component"]
    assert row["discordant"] == ["diagnosis", "histologic_type", "dysplasia_grade"]
    assert row["missed"] == [] and row["hallucinated"] == []


def test_table3_example_1_with_learned_vocabulary():
    train = ["Uterine cervix, colposcopic biopsy;\n  Low-grade squamous intraepithelial lesion (LSIL; CIN 1)"] * 3
    row = _score(TABLE3_PREDICTION_1, TABLE3_REFERENCE_1, dataset="reg", train_reports=train)
    assert row["CRQS"] == pytest.approx(-1 / 14)


def test_table3_example_2_equivalent_wording_scores_high():
    row = _score(TABLE3_PREDICTION_2, TABLE3_REFERENCE_2, dataset="histai")
    assert row["CRQS"] >= 0.9  # published 0.9143; METEOR gives it 0.0114
    assert row["discordant"] == [] and row["hallucinated"] == []


def test_contradictions_score_low_and_paraphrases_high():
    reference = "Prostate, biopsy; Acinar adenocarcinoma, Gleason's score 7 (3+4), grade group 2, tumor volume: 30%"
    paraphrase = "Prostate, biopsy; acinar adenocarcinoma, Gleason score 3+4=7, ISUP grade group 2, tumor volume 35%"
    contradiction = "Prostate, biopsy; Acinar adenocarcinoma, Gleason's score 8 (4+4), grade group 4, tumor volume: 30%"
    benign = "Prostate, biopsy; No tumor present"
    assert _score(paraphrase, reference, dataset="reg")["CRQS"] == pytest.approx(1.0)
    wrong = _score(contradiction, reference, dataset="reg")
    assert wrong["discordant"] == ["gleason_score", "grade_group"]
    assert wrong["CRQS"] < 0.7
    assert _score(benign, reference, dataset="reg")["CRQS"] < 0.2


# ----------------------------------------------------------------------------- corpus results


def test_per_case_table_and_summary():
    references = [TABLE3_REFERENCE_1, TABLE3_REFERENCE_1, "Stomach, endoscopic biopsy; Tubular adenoma with low grade "
                  "dysplasia", "nothing clinical here"]
    predictions = [TABLE3_PREDICTION_1, TABLE3_REFERENCE_1, "Stomach, endoscopic biopsy; Tubular adenoma", ""]
    result = CRQSMetric().compute(predictions, references, ids=["a", "b", "c", "d"],
                                  context={"dataset": "reg2025", "bootstrap_resamples": 200, "seed": 1})
    table = result.per_case
    assert table["id"].to_list() == ["a", "b", "c", "d"]
    for column in ("CRQS", "CRQS_raw", "CFC", "KIR", "HR", "CDS", "CRQS_eq6"):
        assert table.schema[column] == pl.Float64
    for column in ("matched", "missed", "hallucinated", "discordant"):
        assert table.schema[column] == pl.List(pl.Utf8)
    assert json.loads(table["reference_fields"][0])["dysplasia_grade"] == "high"
    assert table["CRQS"].to_list()[1] == pytest.approx(1.0)
    assert table["missed"].to_list()[2] == ["dysplasia_grade"]
    # a reference without any clinical field cannot be scored; it is counted, not averaged
    assert table["CRQS"].to_list()[3] is None
    assert result.summary["n_cases"] == 4 and result.summary["n_scored"] == 3
    scored = [v for v in table["CRQS"].to_list() if v is not None]
    assert result.summary["CRQS"] == pytest.approx(sum(scored) / 3)
    assert (result.summary["CRQS_ci_low"], result.summary["CRQS_ci_high"]) == bootstrap_ci(scored, 200, seed=1)
    assert result.summary["CRQS_ci_low"] <= result.summary["CRQS"] <= result.summary["CRQS_ci_high"]
    assert set(table["schema"].to_list()) == {"reg2025"}
    assert result.summary["distinct_prediction_fraction"] == 1.0


def test_vocabulary_is_recorded_per_case(tmp_path):
    from pathkit_metrics._crqs.vocabulary import BUILTIN_VOCABULARY, build_vocabulary

    builtin = CRQSMetric().compute(["x"], ["y"], context=NO_CI).per_case["vocabulary_sha256"][0]
    assert builtin == BUILTIN_VOCABULARY.sha256
    train = ["Lung, biopsy; Sclerosing pneumocytoma"] * 2
    learned = build_vocabulary(train)
    path = learned.save(tmp_path / "vocab.json")
    for context in ({"train_reports": train}, {"vocabulary": str(path)}, {"options": {"vocabulary": path}}):
        table = CRQSMetric().compute(["Lung, biopsy; Sclerosing pneumocytoma"], ["Lung, biopsy; Sclerosing "
                                     "pneumocytoma"], context={**NO_CI, **context}).per_case
        assert table["vocabulary_sha256"][0] == learned.sha256
        assert json.loads(table["reference_fields"][0])["diagnosis"] == "sclerosing pneumocytoma"


@pytest.mark.parametrize(
    ("predictions", "references", "ids", "message"),
    [
        (["a"], ["a", "b"], None, "1 predictions but 2 references"),
        ([], [], None, "no cases to score"),
        (["a", "b"], ["a", "b"], ["x"], "1 ids for 2 cases"),
        (["a", "b"], ["a", "b"], ["x", "x"], "duplicate case ids x"),
        (["a", 3], ["a", "b"], ["p", "q"], "prediction for case 'q' is int, not text"),
        (["a"], [None], None, "reference for case '0' is NoneType"),
        ("a report", ["a"], None, "predictions must be a list"),
    ],
)
def test_bad_input_is_a_clear_error(predictions, references, ids, message):
    with pytest.raises(PathkitError, match=message):
        CRQSMetric().compute(predictions, references, ids=ids, context=NO_CI)


def test_bad_options_are_clear_errors(tmp_path):
    with pytest.raises(PathkitError, match="vocabulary file not found"):
        CRQSMetric().compute(["a"], ["a"], context={"vocabulary": str(tmp_path / "none.json")})
    with pytest.raises(PathkitError, match="train_reports"):
        CRQSMetric().compute(["a"], ["a"], context={"train_reports": {"train": ["a"]}})
    with pytest.raises(PathkitError, match="none.txt: no such file"):  # a string is a reports file
        CRQSMetric().compute(["a"], ["a"], context={"train_reports": str(tmp_path / "none.txt")})
    with pytest.raises(PathkitError, match="variants must be true or false"):
        CRQSMetric().compute(["a"], ["a"], context={"variants": "yes"})
    with pytest.raises(PathkitError, match="bootstrap_resamples"):
        CRQSMetric().compute(["a"], ["a"], context={"bootstrap_resamples": -1})


def test_empty_and_long_predictions_get_defined_scores():
    reference = "Lung, biopsy; Squamous cell carcinoma"
    empty = _score("", reference, dataset="reg")
    assert (empty["CFC"], empty["HR"], empty["CDS"], empty["CRQS"]) == (0.0, 0.0, 0.0, 0.0)
    long_prediction = reference + " and more text." * 7000  # over 100,000 characters
    assert _score(long_prediction, reference, dataset="reg")["CRQS"] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- the three interfaces


def test_registered_and_python_api():
    from pathkit_core.plugins import get_component

    assert get_component("metric", "crqs") is CRQSMetric
    fields = extract_fields(TABLE3_REFERENCE_1, dataset="reg2025")
    assert fields["diagnosis"] == "high grade squamous intraepithelial lesion"
    assert set(fields) <= set(REG.fields)
    assert "benign_vs_malignant" in extract_fields(TABLE3_REFERENCE_1, dataset="histai")
    assert set(extract_fields(TABLE3_REFERENCE_1, clinical_schema=HISTAI)) <= set(HISTAI.fields)


def test_huggingface_evaluate_interface():
    from pathkit_interop.evaluate_modules import as_evaluate_module

    module = as_evaluate_module("crqs")
    out = module.compute(predictions=[TABLE3_PREDICTION_1], references=[TABLE3_REFERENCE_1], dataset="reg2025",
                         bootstrap_resamples=0)
    assert out["CRQS"] == pytest.approx(-1 / 14)


def test_pathkit_score_command(cli, tmp_path):
    predictions = [{"id": "c1", "report": TABLE3_PREDICTION_1}, {"id": "c2", "report": TABLE3_REFERENCE_1}]
    references = [{"id": "c2", "report": TABLE3_REFERENCE_1}, {"id": "c1", "report": TABLE3_REFERENCE_1}]
    (tmp_path / "p.json").write_text(json.dumps(predictions))
    (tmp_path / "r.json").write_text(json.dumps(references))
    result = cli("score", "--metric", "crqs", "--predictions", tmp_path / "p.json", "--references",
                 tmp_path / "r.json", "--json", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    table = pl.read_parquet(tmp_path / "out" / "per_case.parquet")
    by_id = dict(zip(table["id"].to_list(), table["CRQS"].to_list(), strict=True))
    # without --dataset the generic schema applies; the copy scores 1, the HSIL/LSIL swap far lower
    assert by_id["c2"] == pytest.approx(1.0) and by_id["c1"] < 0.4
    assert summary["crqs"]["CRQS"] == pytest.approx((by_id["c1"] + by_id["c2"]) / 2)


def test_crqs_commands(cli, tmp_path):
    result = cli("crqs", "extract", "--dataset", "reg2025", TABLE3_REFERENCE_1)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["schema"] == "reg2025" and shown["fields"]["dysplasia_grade"] == "high"

    splits = {"train": [{"id": str(i), "report": "Lung, biopsy; Sclerosing pneumocytoma"} for i in range(2)],
              "test": [{"id": "t", "report": "Lung, biopsy; Adenocarcinoma"}]}
    (tmp_path / "splits.json").write_text(json.dumps(splits))
    result = cli("crqs", "vocabulary", "--reports", tmp_path / "splits.json", "--out", tmp_path / "v.json")
    assert result.exit_code == 0, result.output
    result = cli("crqs", "extract", "--vocabulary", tmp_path / "v.json", "Lung, biopsy; Sclerosing pneumocytoma")
    assert json.loads(result.output)["fields"]["diagnosis"] == "sclerosing pneumocytoma"

    result = cli("crqs", "vocabulary", "--reports", tmp_path / "splits.json", "--out", tmp_path / "w.json",
                 "--split", "validation")
    assert result.exit_code == 2 and "no split 'validation'" in result.output
    assert not (tmp_path / "w.json").exists()
    result = cli("crqs", "extract")
    assert result.exit_code == 2 and "give the report text or --file" in result.output


def test_pathkit_score_with_a_dataset_plugin_schema(cli, tmp_path):
    from pathkit_core.plugins import get_plugin_manager

    if "reg2025" not in get_plugin_manager().names("dataset"):
        pytest.skip("the reg2025 dataset plugin is not installed")
    (tmp_path / "p.json").write_text(json.dumps([{"id": "c1", "report": TABLE3_PREDICTION_1}]))
    (tmp_path / "r.json").write_text(json.dumps([{"id": "c1", "report": TABLE3_REFERENCE_1}]))
    result = cli("score", "--metric", "crqs", "--dataset", "reg2025", "--predictions", tmp_path / "p.json",
                 "--references", tmp_path / "r.json", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["crqs"]["CRQS"] == pytest.approx(-1 / 14)


def test_any_sequence_of_reports_is_accepted():
    reports = pl.Series([TABLE3_REFERENCE_1, TABLE3_PREDICTION_1])
    result = CRQSMetric().compute(reports, tuple(reports), ids=pl.Series(["a", "b"]),
                                  context={**NO_CI, "train_reports": iter(reports)})
    assert result.per_case["CRQS"].to_list() == pytest.approx([1.0, 1.0])
