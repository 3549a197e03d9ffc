"""Property-based robustness of CRQS: the extractor never raises, scoring is reflexive, bounded and deterministic."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pathkit_metrics._crqs.compare import compare_fields
from pathkit_metrics._crqs.extract import ClinicalExtractor
from pathkit_metrics._crqs.schemas import BUILTIN_SCHEMAS, GENERIC, REG, TCGA

# Pieces of real report language, so that generated texts reach the field patterns and the
# negation/uncertainty logic rather than only the "nothing found" path.
FRAGMENTS = (
    "Breast, sono-guided core biopsy;", "Uterine cervix, colposcopic biopsy;", "Prostate, biopsy;",
    "Invasive carcinoma of no special type", "grade II", "(Tubule formation: 3, Nuclear grade: 2, Mitoses: 1)",
    "Gleason's score 7 (4+3)", "grade group 3", "tumor volume: 40%", "HSIL; CIN 2", "LSIL", "CIN",
    "Ductal carcinoma in situ", "- Necrosis: Present (Focal)", "Necrosis: absent", "no evidence of",
    "negative for", "cannot be excluded", "suspicious for", "lymphovascular invasion", "not identified",
    "margins", "(3/16)", "lymph nodes", "pT3a, N2", "with involvement of muscle proper", "Note)",
    "The specimen does not include muscle proper.", "high grade", "low-grade dysplasia", "favor",
    "Non-small cell carcinoma", "measures 2.5 x 2 x 1 cm", "45 mm", "H. pylori", "OLGA stage II",
    "chronic active gastritis", "interstinal metaplasia", "metastatic", "NET G2", "1.", "2)", "\n", "\n\n",
    ",", ";", ":", "(", ")", "-", "%", "/", "+", "=", " ", "\u2013", "\u00a0", "\t", "\x00", "\u200b",
)
report_like = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=12), max_size=40).map(" ".join)
any_text = st.text(max_size=400)
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def extractor():
    return ClinicalExtractor()


@PROPERTY_SETTINGS
@given(text=any_text | report_like)
def test_extractor_never_raises_and_returns_canonical_strings(text):
    result = ClinicalExtractor(cache_size=0).extract(text)
    for name, value in result.fields.items():
        assert isinstance(name, str) and isinstance(value, str) and value == value.strip() and value
    for value in result.uncertain.values():
        assert isinstance(value, str)


@PROPERTY_SETTINGS
@given(text=any_text | report_like, schema_name=st.sampled_from(sorted(BUILTIN_SCHEMAS)))
def test_a_report_scores_one_against_itself(extractor, text, schema_name):
    schema = BUILTIN_SCHEMAS[schema_name]
    fields = {k: v for k, v in extractor.extract(text).fields.items() if k in schema.fields}
    case = compare_fields(fields, fields, schema)
    if fields:
        assert case.crqs == pytest.approx(1.0) and case.cfc == 1.0 and case.hr == 0.0 and case.cds == 0.0
    else:
        assert case.crqs is None


@PROPERTY_SETTINGS
@given(reference=report_like, prediction=any_text | report_like)
def test_scores_stay_in_range(extractor, reference, prediction):
    for schema in (REG, TCGA, GENERIC):
        ref = {k: v for k, v in extractor.extract(reference).fields.items() if k in schema.fields}
        pred = {k: v for k, v in extractor.extract(prediction).fields.items() if k in schema.fields}
        case = compare_fields(ref, pred, schema)
        for value in (case.cfc, case.kir, case.hr, case.cds):
            assert value is None or 0.0 <= value <= 1.0
        if case.crqs is not None:
            assert -0.6 / 0.7 - 1e-12 <= case.crqs <= 1.0 + 1e-12
        assert len(case.matched) + len(case.discordant) + len(case.missed) == case.n_reference
        assert len(case.matched) + len(case.discordant) + len(case.hallucinated) == case.n_prediction


@PROPERTY_SETTINGS
@given(text=report_like)
def test_extraction_is_deterministic_and_cache_transparent(text):
    cached = ClinicalExtractor()
    first = cached.extract(text)
    assert cached.extract(text) is first
    assert ClinicalExtractor(cache_size=0).extract(text) == first


def test_very_long_and_pathological_reports_are_fast(extractor):
    texts = [
        "Invasive carcinoma, no necrosis, grade 2; margins negative (0/3). " * 1600,  # ~100k characters
        "a" * 100_000,
        "(" * 50_000 + ")" * 50_000,
        "no " * 33_000,
        "gleason " * 12_000 + "3+",
        "grade " * 16_000,
        "lymph node " * 9_000 + "(1/2)",
        "\n" * 100_000,
        "\u00e9\u0301\U0001f600" * 30_000,
    ]
    for text in texts:
        started = time.perf_counter()
        ClinicalExtractor(cache_size=0).extract(text)
        assert time.perf_counter() - started < 5.0, text[:30]
