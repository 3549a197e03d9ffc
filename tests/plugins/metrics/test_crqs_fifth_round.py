"""CRQS reading rules of the fifth TCGA round: a synoptic value that closes one statement does not
negate the next ("Lymph-vascular invasion / Not identified / Perineural invasion / Present"), a
differentiation word glued by OCR to the next word ("DIFFERENTIATEDSQUAMOIUS"), and "intraepithelial
squamous neoplasia" with its words in that order. Every snippet is written for the test."""

from __future__ import annotations

import pytest
from pathkit_metrics._crqs.extract import ClinicalExtractor
from pathkit_metrics.crqs import CRQSMetric


@pytest.fixture(scope="module")
def extractor():
    return ClinicalExtractor()


SYNOPTIC = "Squamous cell carcinoma.\nLymph-Vascular Invasion\n{lvi}\nPerineural Invasion\n{pni}\n"


@pytest.mark.parametrize(("lvi", "pni", "want_lvi", "want_pni"), [
    ("Not Identified", "Present", "absent", "present"),
    ("Not Identified", "Not identified", "absent", "absent"),
    ("Present", "Not identified", "present", "absent"),
    ("Present", "Present", "present", "present"),
])
def test_a_value_closing_one_synoptic_item_does_not_negate_the_next(extractor, lvi, pni, want_lvi, want_pni):
    fields = extractor.extract(SYNOPTIC.format(lvi=lvi, pni=pni)).fields
    assert fields["lymphovascular_invasion"] == want_lvi
    assert fields["perineural_invasion"] == want_pni


@pytest.mark.parametrize("text", [
    "Squamous cell carcinoma, no perineural invasion identified.",
    "Squamous cell carcinoma, negative for perineural invasion.",
    "Squamous cell carcinoma. Perineural invasion not identified.",
])
def test_negations_in_front_of_a_finding_still_negate_it(extractor, text):
    assert extractor.extract(text).fields["perineural_invasion"] == "absent"


def test_a_differentiation_glued_to_the_next_word_is_read(extractor):
    glued = extractor.extract("- MODERATELY DIFFERENTIATEDSQUAMOIUS CELT. CARCINOMA").fields
    assert glued["differentiation"] == "moderate"
    assert extractor.extract("- POORLY DIFFERENTIATEDSQUAMOUS CELL CARCINOMA").fields["differentiation"] == "poor"


def test_intraepithelial_squamous_neoplasia_in_that_word_order_has_its_grade(extractor):
    high = "Invasive squamous cell carcinoma. High-grade intraepithelial squamous neoplasia, involving the ectocervix."
    assert extractor.extract(high).fields["dysplasia_grade"] == "high"
    assert extractor.extract(high.replace("High-grade", "Low-grade")).fields["dysplasia_grade"] == "low"


def test_the_changed_statements_now_cost_score():
    reference = SYNOPTIC.format(lvi="Not Identified", pni="Present")
    changed = SYNOPTIC.format(lvi="Not Identified", pni="Not identified")
    result = CRQSMetric().compute([changed, reference], [reference, reference],
                                  context={"dataset": "tcga", "bootstrap_resamples": 0})
    changed_score, same_score = result.per_case["CRQS"].to_list()
    assert same_score == 1.0 and changed_score < 1.0
