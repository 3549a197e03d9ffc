"""CRQS reading rules of the sixth TCGA round (issue 43): OCR's glyph confusions and broken words
read through (rapidfuzz over the clinical words), layout read as prose, parts found by content
whatever their order, a count of none (0/12) read as negative, LVI and PNI each with its own
negation, and grades of two named systems never equal. Every snippet is written for the test."""

from __future__ import annotations

import pytest
from pathkit_metrics._crqs.compare import compare_fields
from pathkit_metrics._crqs.extract import ClinicalExtractor
from pathkit_metrics._crqs.normalise import grade_system, plain_layout, split_grade_system
from pathkit_metrics._crqs.ocr import SpellingRepair
from pathkit_metrics._crqs.schemas import TCGA
from pathkit_metrics.crqs import CRQSMetric

# what follows the diagnosis of a long report (the long-report reading starts at 400 characters)
GROSS = ("\nGROSS DESCRIPTION:\nReceived in formalin, labeled with the patient's name, a specimen of "
         "5 x 4 x 3 cm. Representative sections are submitted in cassettes A1 to A6 for processing.\n") * 2


def long_report(diagnosis: str) -> str:
    return "FINAL DIAGNOSIS:\n" + diagnosis + GROSS


@pytest.fixture(scope="module")
def extractor():
    return ClinicalExtractor()


def crqs(prediction: str, reference: str) -> float:
    result = CRQSMetric().compute([prediction], [reference],
                                  context={"dataset": "tcga-pathtext", "bootstrap_resamples": 0})
    return result.summary["CRQS"]


@pytest.mark.parametrize(("token", "word"), [
    ("carcinorna", "carcinoma"),  # "rn" read for "m": two edits, one confusion
    ("adenocarciiioma", "adenocarcinoma"),  # "ii" read for "n"
    ("1ymphovascular", "lymphovascular"),  # a digit for a letter
    ("olioblastoma", "glioblastoma"),  # one edit (Levenshtein)
    ("hepatocelluler", "hepatocellular"),
])
def test_ocr_noisy_clinical_words_are_read(extractor, token, word):
    assert extractor._spelling.correction(token) == word


def test_a_broken_word_is_rejoined_and_known_words_are_left():
    repair = SpellingRepair(["adenocarcinoma", "squamous", "papillary"], known=["capillary"])
    assert repair.repair("invasive adeno carcinoma, squa mous") == "invasive adenocarcinoma, squamous"
    # two known words are never joined, a capillary is no papillary
    assert repair.repair("squamous papillary capillary") == "squamous papillary capillary"


CLEAN = ("A. Right colon, hemicolectomy: Moderately differentiated adenocarcinoma.\n"
         "Lymphovascular invasion: not identified.\nPerineural invasion: present.\n"
         "Margins free of carcinoma.\nMetastatic carcinoma in 2 of 15 lymph nodes (2/15).\n"
         "B. Appendix, resection: no pathologic abnormality.\n")


def test_an_ocr_damaged_copy_reads_as_the_clean_report(extractor):
    noisy = (CLEAN.replace("adenocarcinoma", "adenocarcinorna").replace("Lymphovascular", "Lympho vascular")
             .replace("Perineural", "Perineura1").replace("differentiated", "differentiatcd"))
    assert noisy != CLEAN
    assert extractor.extract(long_report(noisy)).fields == extractor.extract(long_report(CLEAN)).fields
    assert crqs(long_report(noisy), long_report(CLEAN)) == 1.0


def test_reordered_parts_read_as_the_same_report(extractor):
    lines = CLEAN.splitlines(keepends=True)
    reordered = "".join(lines[5:] + lines[:5])  # part B before part A, letters kept
    assert extractor.extract(long_report(reordered)).fields == extractor.extract(long_report(CLEAN)).fields
    assert crqs(long_report(reordered), long_report(CLEAN)) == 1.0


def test_headings_and_bullets_read_like_prose(extractor):
    inline = "Adenocarcinoma of the prostate.\nExtraprostatic extension: No\nPerineural invasion: Present\n"
    laid_out = "* Adenocarcinoma of the prostate.\nEXTRAPROSTATIC EXTENSION\nNo\nPERINEURAL INVASION\nPresent\n"
    assert plain_layout(laid_out) == ("Adenocarcinoma of the prostate.\nEXTRAPROSTATIC EXTENSION: No\n"
                                      "PERINEURAL INVASION: Present\n")
    fields = extractor.extract(long_report(laid_out)).fields
    assert fields == extractor.extract(long_report(inline)).fields
    assert fields["extraprostatic_extension"] == "absent" and fields["perineural_invasion"] == "present"


@pytest.mark.parametrize(("nodes", "want"), [
    ("Metastatic carcinoma in 0/12 lymph nodes.", "absent"),
    ("Metastatic carcinoma in 0 of 12 lymph nodes.", "absent"),
    ("Twelve lymph nodes, negative for carcinoma (0/12).", "absent"),
    ("Metastatic carcinoma in 2/12 lymph nodes.", "present"),
])
def test_a_count_of_none_is_negative(extractor, nodes, want):
    fields = extractor.extract(long_report("A. Breast, mastectomy: invasive ductal carcinoma.\nB. Axilla: "
                                           + nodes + "\n")).fields
    assert fields["lymph_node_involvement"] == want
    assert fields.get("metastatic_involvement", "absent") == want


def test_node_counts_are_compared_as_counts():
    reference = long_report("Adenocarcinoma of the colon.\nMetastatic carcinoma in 2 of 15 lymph nodes (2/15).\n")
    assert crqs(reference.replace("2/15", "3/15").replace("2 of 15", "3 of 15"), reference) < 1.0
    assert crqs(reference.replace("(2/15)", "(2 / 15)"), reference) == 1.0


@pytest.mark.parametrize(("statement", "lvi", "pni"), [
    ("Lymphovascular invasion: not identified. Perineural invasion: present.", "absent", "present"),
    ("Lymphovascular invasion: present. Perineural invasion: not identified.", "present", "absent"),
    ("No lymphovascular invasion is identified. Perineural invasion is present.", "absent", "present"),
])
def test_lvi_and_pni_are_findings_of_their_own_with_their_own_negation(extractor, statement, lvi, pni):
    fields = extractor.extract(long_report("Adenocarcinoma of the colon.\n" + statement + "\n")).fields
    assert (fields["lymphovascular_invasion"], fields["perineural_invasion"]) == (lvi, pni)


def test_an_lvi_change_lowers_crqs():
    reference = long_report("Adenocarcinoma of the colon.\nLymphovascular invasion: not identified.\n")
    assert crqs(reference.replace("not identified", "present"), reference) < 1.0


def test_grade_systems_are_kept_apart(extractor):
    nottingham = extractor.extract(long_report("Invasive ductal carcinoma of the breast, Nottingham grade 2.\n"))
    fnclcc = extractor.extract(long_report("Leiomyosarcoma of the uterus, FNCLCC grade 2.\n"))
    unnamed = extractor.extract(long_report("Invasive ductal carcinoma of the breast, grade 2.\n"))
    assert nottingham.fields["tumor_grade"] == "nottingham 2"
    assert fnclcc.fields["tumor_grade"] == "fnclcc 2"
    assert unnamed.fields["tumor_grade"] == "2"
    assert split_grade_system("nottingham 2") == ("nottingham", "2") and split_grade_system("2") == (None, "2")
    assert grade_system("grade (elston) 3 and who grade 2") is None  # two systems named: none chosen
    # two named systems never match; a grade without its system matches either
    assert compare_fields({"tumor_grade": "nottingham 2"}, {"tumor_grade": "fnclcc 2"}, TCGA).cds == 1.0
    assert compare_fields({"tumor_grade": "nottingham 2"}, {"tumor_grade": "2"}, TCGA).cds == 0.0
    assert compare_fields({"tumor_grade": "nottingham 2"}, {"tumor_grade": "nottingham 3"}, TCGA).cds == 1.0


def test_gleason_never_matches_a_nottingham_grade(extractor):
    gleason = extractor.extract(long_report("Adenocarcinoma of the prostate, Gleason grade 3, Gleason score 3+3=6.\n"))
    assert "tumor_grade" not in gleason.fields and gleason.fields["gleason_score"] == "3+3=6"
    reference = long_report("Invasive ductal carcinoma of the breast, Nottingham grade 3.\n")
    assert crqs(reference.replace("Nottingham grade 3", "Gleason grade 3"), reference) < 1.0


def test_a_part_merged_into_the_line_before_is_still_a_part_and_the_article_a_is_none():
    from pathkit_metrics._crqs.sections import specimen_parts

    text = "A. Colon, resection: adenocarcinoma. A Lymph node is free of tumor.\nB. Appendix: no abnormality.\n"
    assert [label for label, _, _ in specimen_parts(text)] == ["a", "b"]
    assert [label for label, _, _ in specimen_parts(text.replace(".\nB.", ". B."))] == ["a", "b"]
