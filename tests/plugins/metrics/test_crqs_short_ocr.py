"""CRQS on short reports (REG style, under 400 characters) with OCR damage (issue 43): the OCR
spelling repair of long reports applies to them too, a word that is itself a clinical or a known
report word is never "corrected" into another term, and a changed grade still scores lower. Every
snippet is written for the test."""

from __future__ import annotations

import pytest
from pathkit_metrics._crqs.extract import ClinicalExtractor
from pathkit_metrics.crqs import CRQSMetric

COLON = "Colon, colonoscopic biopsy;\n  Adenocarcinoma, moderately differentiated"
BLADDER = ("Urinary bladder, transurethral resection;\n  Non-invasive papillary urothelial carcinoma, low grade\n\n"
           "Note) The specimen does not include muscle proper.")


@pytest.fixture(scope="module")
def extractor():
    return ClinicalExtractor()


def crqs(prediction: str, reference: str) -> float:
    result = CRQSMetric().compute([prediction], [reference], context={"dataset": "reg2025", "bootstrap_resamples": 0})
    return result.summary["CRQS"]


@pytest.mark.parametrize(("clean", "typo"), [
    (COLON, "Adenocacinoma"),  # a letter dropped from the diagnosis word
    (COLON, "Adenocarcinorna"),  # OCR's "rn" for "m"
    (COLON, "Adeno carcinoma"),  # a word broken by a space
    (BLADDER, "Non-invaive"),  # the negated word: "non" is kept, "invaive" is read "invasive"
])
def test_a_short_report_with_an_ocr_typo_in_a_diagnosis_word_reads_the_same(extractor, clean, typo):
    word = "Adenocarcinoma" if clean is COLON else "Non-invasive"
    noisy = clean.replace(word, typo, 1)
    assert noisy != clean and len(noisy) < 400
    assert extractor.extract(noisy).fields == extractor.extract(clean).fields
    assert crqs(noisy, clean) == 1.0


def test_a_short_report_whose_grade_changed_scores_lower_even_with_a_typo():
    poorly = COLON.replace("moderately", "poorly")
    assert crqs(poorly, COLON) < 1.0
    # the typo is repaired, the grade change is not: both pairs score the same, below the typo alone
    noisy_poorly = poorly.replace("Adenocarcinoma", "Adenocacinoma")
    assert crqs(noisy_poorly, COLON) == crqs(poorly, COLON)
    assert crqs(COLON.replace("Adenocarcinoma", "Adenocacinoma"), COLON) > crqs(noisy_poorly, COLON)


def test_a_grade_word_typo_keeps_its_grade_and_other_grades_are_not_fuzzed(extractor):
    assert extractor.extract(COLON.replace("moderately", "moderatly")).fields["differentiation"] == "moderate"
    # "poorly" and "well" are short exact words: never read as another grade
    assert extractor.extract(COLON.replace("moderately", "poorly")).fields["differentiation"] == "poor"
    assert extractor.extract(COLON.replace("moderately", "well")).fields["differentiation"] == "well"
    low, high = BLADDER, BLADDER.replace("low grade", "high grade")
    assert extractor.extract(low).fields["tumor_grade"] == "low"
    assert extractor.extract(high).fields["tumor_grade"] == "high"


@pytest.mark.parametrize(("word", "not_read_as"), [
    ("endometriosis", "endometrioid"), ("cerebriform", "cribriform"), ("ectocervical", "endocervical"),
    ("pharyngectomy", "laryngectomy"), ("microcystic", "fibrocystic"), ("functional", "junctional"),
])
def test_a_real_word_one_edit_from_another_clinical_term_is_left_as_written(extractor, word, not_read_as):
    assert extractor._spelling.correction(word) is None
    assert extractor._spelling.repair(f"a {word} focus") == f"a {word} focus"
    assert not_read_as not in str(extractor.extract(f"Uterus, biopsy;\n  {word.capitalize()} focus").fields)


def test_transitional_cell_is_the_urothelial_name_in_a_short_report():
    transitional = BLADDER.replace("urothelial carcinoma", "transitional cell carcinoma")
    assert crqs(transitional, BLADDER) == 1.0
