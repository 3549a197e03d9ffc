"""CRQS on long, multi-part, OCR-noisy reports (TCGA): sections read, specimen parts, schema, OCR repair."""

from __future__ import annotations

import pytest
from pathkit_metrics._crqs.clinical_schema import ClinicalSchema
from pathkit_metrics._crqs.compare import compare_fields
from pathkit_metrics._crqs.extract import ClinicalExtractor
from pathkit_metrics._crqs.ocr import SpellingRepair
from pathkit_metrics._crqs.sections import read_spans, specimen_parts, strip_clutter
from pathkit_metrics.crqs import CRQSMetric

HISTORY = (
    "UUID:0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9\nTCGA-XX-1234-01A-PR Redacted\n"
    "III IIIIIII IIIII IIIIIIII IIIII\n"
    "CLINICAL HISTORY:\nThe patient is a 60-year-old man; rule out squamous cell carcinoma.\n"
    "Postoperative diagnosis: poorly differentiated carcinoma.\n"
)
PARTS = (
    "A. Right pelvic lymph nodes; dissection:\n- Eight benign lymph nodes (0/8).\n"
    "B. Left pelvic lymph nodes; dissection:\n- Three of sixteen lymph nodes with metastatic urothelial "
    "carcinoma (3/16).\n- No extranodal extension.\n"
    "C. Bladder; radical cystectomy:\n- Invasive high grade urothelial carcinoma, invading the muscularis propria "
    "(pT2b, pN2).\n- Surgical margins negative for carcinoma.\n- Lymphovascular invasion: not identified.\n"
)
GROSS = (
    "GROSS DESCRIPTION:\nReceived in three containers. The left margin is inked and involved by a "
    "hemorrhagic mass, 4 x 3 cm; the right ureter is grossly unremarkable.\n"
    "I attest that the above diagnosis is based upon my personal examination of the slides.\n"
)


def report(parts: str = PARTS) -> str:
    return HISTORY + "FINAL PATHOLOGIC DIAGNOSIS\n" + parts + GROSS


def crqs(prediction: str, reference: str) -> float:
    result = CRQSMetric().compute([prediction], [reference], context={"dataset": "tcga", "bootstrap_resamples": 0})
    return result.per_case["CRQS"][0]


@pytest.fixture(scope="module")
def extractor():
    return ClinicalExtractor()


def test_the_final_diagnosis_is_read_not_history_gross_or_attestation(extractor):
    text = report()
    sections = read_spans(text)
    assert [s.label for s in sections] == ["final pathologic diagnosis"]
    read = text[sections[0].start:sections[0].end]
    assert read.startswith("\nA. Right pelvic") and "GROSS" not in read and "Postoperative" not in read
    extraction = extractor.extract(text)
    assert extraction.section == sections[0].describe()
    fields = extraction.fields
    # the history's squamous cell carcinoma and "poorly differentiated" are not read; the gross
    # description's involved margin and 4 cm mass are not either
    assert "squamous cell carcinoma" not in fields["diagnosis"]
    assert "differentiation" not in fields and "tumor_size" not in fields
    assert fields["margin_status"] == "negative"
    assert fields["histologic_type"] == "urothelial carcinoma"
    assert fields["tumor_grade"] == "high"
    assert (fields["pathologic_t"], fields["pathologic_n"]) == ("2b", "2")
    assert fields["lymph_node_ratios"] == "0/8,3/16"
    assert fields["lymphovascular_invasion"] == "absent" and fields["extranodal_extension"] == "absent"
    assert fields["organ_site"] == "bladder" and fields["laterality"] not in ("", None)
    assert fields["invasion_depth"] == "muscle proper"
    assert len(fields["specimen_parts"].split("; ")) == 3


def test_diagnosis_words_in_a_sentence_do_not_open_a_section():
    text = ("Surgical pathology report\nThe final diagnosis reflects that evaluation and the frozen section.\n"
            "CLINICAL HISTORY: mass\n" + "Comment: none. " * 30)
    assert all(s.kind != "diagnosis" for s in read_spans(text))


def test_a_report_without_a_diagnosis_header_is_read_up_to_its_first_other_section():
    text = "Kidney, left, nephrectomy:\nRenal cell carcinoma, clear cell type.\n" + GROSS * 3
    sections = read_spans(text)
    assert sections[0].kind == "fallback" and sections[0].end == text.index("GROSS")


def test_clutter_is_removed():
    cleaned = strip_clutter("UUID:0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9 Redacted\nIIIII IIIII II\nPage 1 of 2\n"
                            "Adenocarcinoma. Clinical correlation is recommended.\nTCGA-AB-1234-01A-PR")
    assert "adenocarcinoma" in cleaned.lower()
    assert "uuid" not in cleaned.lower() and "page" not in cleaned.lower() and "correlation" not in cleaned
    assert "IIIII" not in cleaned and "TCGA-AB" not in cleaned


def test_specimen_parts_lettered_and_numbered_but_not_synoptic_items():
    assert [p[0] for p in specimen_parts(PARTS)] == ["a", "b", "c"]
    synoptic = "1. Tumor type: urothelial carcinoma\n2. Grade of tumor: high grade\n3. Margins: negative\n"
    assert specimen_parts(synoptic) == []
    numbered = "1. Left temporal lesion:\nAstrocytoma\n2. Left temporal lesion, deep:\nAstrocytoma\n"
    assert [p[0] for p in specimen_parts(numbered)] == ["1", "2"]


def test_identical_and_equivalent_long_reports_score_one():
    reference = report()
    assert crqs(reference, reference) == pytest.approx(1.0)
    a, b, c = PARTS.split("B. ")[0], "B. " + PARTS.split("B. ")[1].split("C. ")[0], "C. " + PARTS.split("C. ")[1]
    reordered = report(b.replace("B. ", "A. ", 1) + a.replace("A. ", "B. ", 1) + c)
    assert crqs(reordered, reference) == pytest.approx(1.0)  # part order (and letters) do not matter
    noisy = report(PARTS.replace("carcinoma (3/16)", "carcinma (3 of 16)").replace("Invasive", "Invasve")
                   .replace("urothelial carcinoma,", "transitional cell carcinoma,")
                   + "Page 1 of 2\nClinical correlation is recommended.\n")
    assert crqs(noisy, reference) == pytest.approx(1.0)
    assert crqs(reference.upper(), reference) == pytest.approx(1.0)


@pytest.mark.parametrize("change", [
    ("Eight benign lymph nodes (0/8)", "Eight lymph nodes with metastatic carcinoma (2/8)"),  # node status, part A
    ("negative for carcinoma", "positive for carcinoma"),  # margin
    ("high grade", "low grade"),  # grade
    ("pT2b", "pT3a"),  # stage
    ("not identified", "present"),  # negation (LVI)
    ("Right pelvic", "Left pelvic"),  # site (side) of one part
    ("muscularis propria", "lamina propria"),  # depth of invasion
    ("urothelial carcinoma, invading", "squamous cell carcinoma, invading"),  # histologic type
    ("- Invasive high grade urothelial carcinoma, invading the muscularis propria (pT2b, pN2).\n", ""),  # dropped
])
def test_every_clinically_wrong_change_costs(change):
    reference = report()
    wrong = report(PARTS.replace(*change))
    assert wrong != reference
    assert crqs(wrong, reference) < 0.95


def test_one_part_turning_malignant_counts_even_when_another_part_has_carcinoma():
    reference = report(PARTS.replace("Eight benign lymph nodes (0/8).", "Eight lymph nodes, no evidence of carcinoma."))
    wrong = report(PARTS.replace("Eight benign lymph nodes (0/8).", "Eight lymph nodes, carcinoma present."))
    assert crqs(wrong, reference) < 0.95


@pytest.mark.parametrize(("one", "other"), [
    ("Chromophobe renal cell carcinoma", "Renal cell carcinoma, chromophobe type"),
    ("Renal cell carcinoma, conventional (clear cell) type", "Clear cell renal cell carcinoma"),
    ("Serous carcinoma of the ovary", "Serous adenocarcinoma of the ovary"),
    ("Squamous carcinoma, moderately differentiated", "Squamous cell carcinoma, moderately differentiated"),
    ("Glioblastoma, WHO grade IV", "Glioblastoma, WHO grade 4"),
    ("Fuhrman nuclear grade III/IV", "Fuhrman nuclear grade 3"),
    ("Olioblastoma, WHO grade IV", "Glioblastoma, WHO grade IV"),
])
def test_equivalent_names_and_notations_compare_equal(one, other):
    def wrap(line: str) -> str:
        return HISTORY + "DIAGNOSIS:\nA. Left, resection:\n" + line + ".\n" + GROSS

    assert crqs(wrap(one), wrap(other)) == pytest.approx(1.0)


def test_grades_stages_read_in_tcga_notations(extractor):
    fields = extractor.extract(HISTORY + "FINAL DIAGNOSIS:\nRenal cell carcinoma, clear cell type, Fuhrman nuclear "
                               "grade III/IV. pT3a pNO pMX. AJCC stage III.\n" + GROSS).fields
    assert fields["histologic_type"] == "clear cell renal cell carcinoma"
    assert fields["nuclear_grade"] == "3"
    assert (fields["pathologic_t"], fields["pathologic_n"], fields["pathologic_m"]) == ("3a", "0", "x")
    assert fields["stage_group"] == "3"
    fields = extractor.extract(HISTORY + "FINAL DIAGNOSIS:\nAdenocarcinoma, moderately differentiated, of the "
                               "sigmoid colon.\n" + GROSS).fields
    assert fields["differentiation"] == "moderate" and fields["tumor_grade"] == "2"  # differentiation as grade
    assert fields["organ_site"] == "colon"


def test_another_organs_report_scores_low():
    kidney = (HISTORY + "FINAL DIAGNOSIS:\nA. Kidney, left, radical nephrectomy:\nClear cell renal cell carcinoma, "
              "Fuhrman nuclear grade 2, confined to the kidney (pT1b). Margins negative.\n" + GROSS)
    prostate = (HISTORY + "FINAL DIAGNOSIS:\nA. Prostate, radical prostatectomy:\nAcinar adenocarcinoma, Gleason score "
                "4+3=7, extraprostatic extension present (pT3a). Margins positive.\n" + GROSS)
    assert crqs(prostate, kidney) < 0.3
    assert crqs(kidney, prostate) < 0.3


def test_spelling_repair_one_edit_unambiguous_only():
    repair = SpellingRepair(["glioblastoma", "papillary", "serous", "serosa"], known=["capillary"])
    assert repair.correction("olioblastoma") == "glioblastoma"  # one letter dropped
    assert repair.correction("glioblastmoa") == "glioblastoma"  # neighbours swapped
    assert repair.correction("capillary") is None  # an ordinary word, listed as known
    assert repair.correction("glioblastoma") is None  # already a clinical word
    assert repair.correction("gliobalstomaa") is None  # two edits
    assert repair.repair("a papilary olioblastoma") == "a papillary glioblastoma"


def test_known_words_are_answered_without_a_search():
    repair = SpellingRepair(["glioblastoma", "papillary"], known=["capillary"])
    # known words (all a REG report holds) are answered without a fuzzy search, nothing memoised
    assert repair.repair("a capillary papillary glioblastoma") == "a capillary papillary glioblastoma"
    assert repair._memo == {}
    assert repair.correction("papilary") == "papillary"
    assert repair._memo["papilary"] == "papillary"


def test_severity_weights_enter_every_component():
    schema = ClinicalSchema("w", fields=("type", "size"), key_fields=("type",), field_weights={"type": 3})
    case = compare_fields({"type": "a", "size": "1"}, {"type": "b", "size": "1"}, schema)
    # by hand: CFC = 1/4, KIR = 0/3, HR = 0, CDS = 3/4; CRQS = (0.3/4 - 0.4*3/4) / 0.7
    assert (case.cfc, case.kir, case.hr, case.cds) == pytest.approx((0.25, 0.0, 0.0, 0.75))
    assert case.crqs == pytest.approx((0.3 * 0.25 - 0.4 * 0.75) / 0.7)
    unweighted = compare_fields({"type": "a", "size": "1"}, {"type": "b", "size": "1"},
                                ClinicalSchema("u", fields=("type", "size"), key_fields=("type",)))
    assert unweighted.crqs == pytest.approx((0.3 * 0.5 - 0.4 * 0.5) / 0.7)
    halluc = compare_fields({"type": "a"}, {"type": "a", "size": "1"}, schema)
    assert halluc.hr == pytest.approx(1 / 4)


def test_unscored_cases_say_why():
    result = CRQSMetric().compute(["Adenocarcinoma.", "x"], ["Adenocarcinoma.", ""],
                                  context={"dataset": "tcga", "bootstrap_resamples": 0})
    table = result.per_case
    assert table["unscored_reason"][0] is None and table["CRQS"][0] is not None
    assert table["CRQS"][1] is None and table["unscored_reason"][1] == "empty reference report"
    assert table["reference_section"][0] == "whole report"
