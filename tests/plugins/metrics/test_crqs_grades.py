"""How grades are written in TCGA reports, and the CRQS rules that read them: a tier after a grade
label ("Tumor grade: high"), the grading system in brackets ("Histologic grade (Nottingham): 2",
"Nuclear grade (Fuhrman): 3"), differentiation as a noun ("moderate to poor differentiation",
"Differentiation: moderate to poor") and a synoptic form's primary and secondary Gleason grades
without a total. Every snippet is written for the test."""

from __future__ import annotations

import pytest
from pathkit_metrics._crqs.extract import ClinicalExtractor
from pathkit_metrics.crqs import CRQSMetric

# long enough (with the diagnosis) for the long-report reader (400 characters or more)
GROSS = ("GROSS DESCRIPTION:\nReceived in formalin, labelled with the patient's name, a resection specimen, "
         "6 x 4 x 3 cm, with an inked margin; the cut surface is tan-white and firm. Representative sections are "
         "submitted in cassettes A1 to A9, the margins in A10 and A11.\n")


def long_report(line: str) -> str:
    return f"FINAL DIAGNOSIS:\nA. Left kidney, radical nephrectomy:\n{line}\n{GROSS}"


def crqs_scores(pairs: list[tuple[str, str]]) -> list[float]:
    predictions, references = [p for p, _ in pairs], [r for _, r in pairs]
    result = CRQSMetric().compute(predictions, references, context={"dataset": "tcga", "bootstrap_resamples": 0})
    return result.per_case["CRQS"].to_list()


@pytest.fixture(scope="module")
def extractor():
    return ClinicalExtractor()


# (reference line, changed line, field, reference value, changed value)
GRADE_LINES = [
    ("Carcinoma. Tumor grade: high", "Carcinoma. Tumor grade: low", "tumor_grade", "high", "low"),
    ("Carcinoma. Histologic grade: intermediate", "Carcinoma. Histologic grade: high", "tumor_grade",
     "intermediate", "high"),
    ("Carcinoma. Grade (WHO): High", "Carcinoma. Grade (WHO): Low", "tumor_grade", "high", "low"),
    ("Invasive ductal carcinoma. Histologic grade (Nottingham): 2",
     "Invasive ductal carcinoma. Histologic grade (Nottingham): 3", "tumor_grade", "2", "3"),
    ("Leiomyosarcoma. Grade (FNCLCC): 2", "Leiomyosarcoma. Grade (FNCLCC): 3", "tumor_grade", "2", "3"),
    ("Renal cell carcinoma. Grade (Fuhrman): 3", "Renal cell carcinoma. Grade (Fuhrman): 2", "nuclear_grade",
     "3", "2"),
    ("Renal cell carcinoma. Nuclear grade (Fuhrman): III", "Renal cell carcinoma. Nuclear grade (Fuhrman): II",
     "nuclear_grade", "3", "2"),
    ("Squamous cell carcinoma with moderate differentiation", "Squamous cell carcinoma with poor differentiation",
     "differentiation", "moderate", "poor"),
    ("Squamous cell carcinoma, moderate to poor differentiation",
     "Squamous cell carcinoma, well to moderate differentiation", "differentiation", "poor", "moderate"),
    ("Adenocarcinoma. Differentiation: moderately to poorly",
     "Adenocarcinoma. Differentiation: well to moderately", "differentiation", "poor", "moderate"),
    ("Adenocarcinoma.\nPrimary Gleason grade: 3\nSecondary Gleason grade: 4",
     "Adenocarcinoma.\nPrimary Gleason grade: 4\nSecondary Gleason grade: 4", "gleason_score", "3+4=7", "4+4=8"),
    ("Adenocarcinoma. Primary pattern: 4; secondary pattern: 3",
     "Adenocarcinoma. Primary pattern: 3; secondary pattern: 3", "gleason_score", None, None),
]


@pytest.mark.parametrize("form", ["short", "long"])
def test_each_way_of_writing_a_grade_is_read_and_its_change_costs(extractor, form):
    make = (lambda line: line) if form == "short" else long_report
    pairs = [(make(changed), make(reference)) for reference, changed, *_ in GRADE_LINES]
    for (prediction, reference), (_, _, field, before, after) in zip(pairs, GRADE_LINES, strict=True):
        assert extractor.extract(reference).fields.get(field) == before, (reference, field)
        assert extractor.extract(prediction).fields.get(field) == after, (prediction, field)
    scores = crqs_scores(pairs[:-1])
    # a changed grade never scores like an equivalent report (their means are 0.98 or more); the
    # nuclear grade and Gleason weigh least (0.86 and 0.83 in a report that states nothing else)
    assert all(score is not None and score < 0.9 for score in scores), list(zip(GRADE_LINES, scores, strict=False))


def test_primary_and_secondary_patterns_need_the_secondary_within_the_item(extractor):
    # ";" ends the statement: "primary pattern: 4; secondary pattern: 3" is two items of a list the
    # rule does not join (the last line of GRADE_LINES), a total or a "3+4" is read as before
    assert "gleason_score" not in extractor.extract("Primary pattern: 4; secondary pattern: 3").fields
    fields = extractor.extract("Primary Gleason grade: 3\nSecondary Gleason grade: 4\nTotal Gleason score: 7").fields
    assert fields["gleason_score"] == "7"


def test_a_nuclear_grade_tier_and_a_dysplasia_tier_are_no_tumour_grade(extractor):
    dcis = extractor.extract("Breast, core biopsy; Ductal carcinoma in situ\n- Nuclear grade: High").fields
    assert dcis["nuclear_grade"] == "3" and "tumor_grade" not in dcis
    dysplasia = extractor.extract("Colon, biopsy; Tubular adenoma. Grade: high grade dysplasia").fields
    assert "tumor_grade" not in dysplasia
    # the tier after the label and the tier before "grade" are one statement, read once
    assert extractor.extract("Urothelial carcinoma. Histologic grade: high grade").fields["tumor_grade"] == "high"


def test_a_bracketed_system_does_not_hide_the_grade_number(extractor):
    fields = extractor.extract("Renal cell carcinoma. Histologic grade (Fuhrman nuclear grade): 2").fields
    assert fields["tumor_grade"] == "2" and fields["nuclear_grade"] == "2"
    # a bracketed number is no system name: "grade (3)" stays unread as before
    assert "tumor_grade" not in extractor.extract("Carcinoma, grade (3)").fields
