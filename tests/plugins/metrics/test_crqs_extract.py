"""CRQS extraction: structured fields, synonyms, negation and uncertainty, vocabulary learning and files."""

from __future__ import annotations

import json
import re

import pytest
from pathkit_metrics._crqs import extract as extract_module
from pathkit_metrics._crqs.extract import ClinicalExtractor, polarity
from pathkit_metrics._crqs.normalise import prepare_text
from pathkit_metrics._crqs.vocabulary import (
    BUILTIN_VOCABULARY,
    NEGATIVE_FOR_MALIGNANCY,
    Vocabulary,
    build_vocabulary,
    candidate_phrases,
)

from pathkit_core.contracts import PathkitError


@pytest.fixture(scope="module")
def extract():
    extractor = ClinicalExtractor()
    return lambda text: dict(extractor.extract(text).fields)


HSIL = "high grade squamous intraepithelial lesion"
NST = "invasive carcinoma of no special type"
SUBEPITHELIAL = "subepithelial connective tissue"

# a report -> the fields it must give
REPORT_FIELDS = {
    "reg-breast": (
        "Breast, sono-guided core biopsy;\n  1. Invasive carcinoma of no special type, grade II "
        "(Tubule formation: 3, Nuclear grade: 2, Mitoses: 1)\n  2. Ductal carcinoma in situ",
        # every finding of the list, sorted; the principal one gives the histologic type
        {"organ_site": "breast", "specimen_type": "core needle biopsy",
         "diagnosis": "ductal carcinoma in situ; invasive carcinoma of no special type",
         "histologic_type": "carcinoma of no special type", "tumor_grade": "2", "tubule_score": "3",
         "nuclear_grade": "2", "mitotic_score": "1", "in_situ_component": "ductal carcinoma in situ",
         "in_situ_vs_invasive": "invasive", "benign_vs_malignant": "malignant"}),
    "reg-prostate": (
        "Prostate, biopsy;\n  Acinar adenocarcinoma, Gleason's score 7 (4+3), grade group 3 "
        "(Gleason pattern 4: 70%), tumor volume:  40%",
        {"gleason_score": "4+3=7", "grade_group": "3", "tumor_volume": "40%", "diagnosis": "acinar adenocarcinoma"}),
    "hsil": ("Cervix, biopsy; HSIL (CIN 3)", {"diagnosis": HSIL, "dysplasia_grade": "high"}),
    "without-necrosis": ("Lung, biopsy; Chronic granulomatous inflammation without necrosis",
                         {"necrosis": "absent", "diagnosis": "chronic granulomatous inflammation"}),
    "negated-findings": (
        "Lymph node: no evidence of metastatic carcinoma is identified. Lymphovascular invasion: "
        "not identified. Perineural invasion is present. Negative for dysplasia.",
        {"diagnosis": NEGATIVE_FOR_MALIGNANCY, "benign_vs_malignant": "benign", "metastatic_involvement": "absent",
         "lymphovascular_invasion": "absent", "perineural_invasion": "present", "dysplasia_grade": "negative"}),
    "nodes-margins-depth": (
        "Left pelvic lymph nodes: three of sixteen lymph nodes with metastatic urothelial carcinoma "
        "(3/16). Ureteral margins: negative. pT3a, N2. Depth of invasion: muscularis propria.",
        {"lymph_node_involvement": "present", "margin_status": "negative", "invasion_depth": "muscle proper"}),
    "no-muscle-proper": (
        "Urinary bladder, transurethral resection;\n  Invasive urothelial carcinoma,\n  with "
        "involvement of subepithelial connective tissue\n\nNote) The specimen does not include muscle proper.",
        {"invasion_depth": SUBEPITHELIAL, "muscle_proper_status": "not included"}),
    "gastritis": (
        "Stomach, biopsy; chronic active gastritis with intestinal metaplasia and atrophy. "
        "H. pylori: positive. OLGA stage II, OLGIM stage I.",
        {"gastritis_type": "chronic active", "inflammation_activity": "active", "hpylori_status": "positive",
         "olga_stage": "2", "olgim_stage": "1", "atrophy": "present", "metaplasia_type": "intestinal"}),
    "adenoma": ("Colon; tubulovillous adenoma with high grade dysplasia",
                {"adenoma_type": "tubulovillous", "polyp_type": "adenomatous", "dysplasia_grade": "high"}),
    # the principal diagnosis is the worst lesion; the negative statement about the ureter is not a
    # finding next to the carcinomas
    "worst-lesion": (
        "A. Lymph nodes: one lymph node with metastatic urothelial carcinoma (1/1).\n"
        "B. Bladder: invasive urothelial carcinoma.\nC. Ureter: no tumor.",
        {"diagnosis": "invasive urothelial carcinoma; urothelial carcinoma",
         "histologic_type": "urothelial carcinoma", "primary_vs_metastatic": "primary"}),
}

# a phrase -> a field it must give (None: a field it must not give)
PHRASE_FIELD = [
    # "high-grade" of HSIL, "low grade" dysplasia, grade group and nuclear grade are other fields
    ("High-grade squamous intraepithelial lesion (HSIL; CIN 2)", "tumor_grade", None),
    ("Tubular adenoma with low grade dysplasia", "tumor_grade", None),
    ("Acinar adenocarcinoma, grade group 2", "tumor_grade", None),
    ("DCIS, nuclear grade: high", "tumor_grade", None),
    # a grade written on the next list item is not this one's
    ("Urinary bladder, TUR;\n 1. Non-invasive papillary urothelial carcinoma, high grade\n"
     " 2. Urothelial carcinoma in situ", "tumor_grade", "high"),
    # synonyms and abbreviations: three spellings of HSIL (the first in REPORT_FIELDS) give one diagnosis
    ("Cervix, biopsy; High-grade squamous intraepithelial lesion", "diagnosis", HSIL),
    ("Cervix, biopsy; CIN 2", "diagnosis", HSIL),
    ("Cervix, biopsy; CIN 1", "diagnosis", "low grade squamous intraepithelial lesion"),
    ("Breast; IDC, NST", "diagnosis", NST),
    ("Breast; invasive ductal carcinoma", "diagnosis", NST),
    ("Stomach; chronic gastritis with interstinal metaplasia", "intestinal_metaplasia", "present"),
    ("Lung; NSCLC, favor adenocarcinoma", "histologic_type", "adenocarcinoma"),
    ("Rectum; NET, G1", "diagnosis", "neuroendocrine tumor"),
    # lower-case "net" is an ordinary word, not an abbreviation
    ("net weight of the specimen 5 g", "diagnosis", None),
    # negation
    ("Prostate, biopsy; No tumor present", "diagnosis", NEGATIVE_FOR_MALIGNANCY),
    # "no special type" is not a negation of the grade that follows
    ("invasive carcinoma of no special type, grade 3", "tumor_grade", "3"),
    # "X: no evidence of Y" negates Y, not X
    ("Prostate biopsy: no evidence of carcinoma", "specimen_type", "biopsy"),
    # lymph nodes, margins and invasion
    ("Eight benign lymph nodes (0/8)", "lymph_node_involvement", "absent"),
    ("Colon; adenocarcinoma, pT2 pN0", "lymph_node_involvement", "absent"),
    ("Carcinoma extends to the inked margin; margin involved", "margin_status", "positive"),
    ("Bladder; invasive urothelial carcinoma invading the lamina propria", "invasion_depth", SUBEPITHELIAL),
    # measurements
    ("Kidney; clear cell renal cell carcinoma, tumor size: 45 x 30 x 20 mm", "tumor_size", "4.5 cm"),
    ("The tumor measures 2.5 x 2 x 1 cm", "tumor_size", "2.5 cm"),
    ("Prostate; tumor involving 30% of the tissue", "tumor_volume", "30%"),
    ("Tumor extent: 12 mm", "tumor_extent", "1.2 cm"),
    ("Mitoses: 12", "mitotic_score", "12"),
    ("Mitotic count: 12 per 10 hpf", "mitotic_score", "12 per 10 hpf"),
    ("Tumor with 12 mitoses per 10 high power fields", "mitotic_score", "12 per 10 hpf"),
    # gastrointestinal
    ("Helicobacter pylori organisms are not identified", "hpylori_status", "negative"),
    ("Colon; sessile serrated lesion", "serrated_lesion", "present"),
    ("Lung, biopsy; Metastatic adenocarcinoma, from colon primary", "primary_vs_metastatic", "metastatic"),
]


@pytest.mark.parametrize(("report", "expected"), REPORT_FIELDS.values(), ids=REPORT_FIELDS)
def test_fields_of_a_report(extract, report, expected):
    fields = extract(report)
    assert {name: fields.get(name) for name in expected} == expected


@pytest.mark.parametrize(("text", "field", "value"), PHRASE_FIELD)
def test_the_field_of_a_phrase(extract, text, field, value):
    assert extract(text).get(field) == value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Gleason score 3+4=7", "3+4=7"),
        ("gleason score: 4 + 3", "4+3=7"),
        ("Gleason's score 9 (5+4)", "5+4=9"),
        ("Gleason sum 6", "6"),
    ],
)
def test_gleason_notations(extract, text, expected):
    assert extract(f"Prostate, needle biopsy; adenocarcinoma, {text}")["gleason_score"] == expected


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ("Adenocarcinoma, grade III", "3"),
        ("Neuroendocrine tumor, grade 1", "1"),
        ("Neuroendocrine tumor G2", "2"),
        ("WHO grade IV glioblastoma", "4"),
        ("Non-invasive papillary urothelial carcinoma, high grade", "high"),
    ],
)
def test_tumor_grade_spellings(extract, text, grade):
    assert extract(text)["tumor_grade"] == grade


def test_uncertainty_is_not_asserted():
    extractor = ClinicalExtractor()
    result = extractor.extract("Lung, biopsy; Adenocarcinoma cannot be excluded.")
    assert "diagnosis" not in result.fields
    assert result.uncertain["diagnosis"] == "adenocarcinoma"
    result = extractor.extract("Lung, biopsy; suspicious for small cell carcinoma")
    assert result.uncertain["diagnosis"] == "small cell carcinoma"
    result = extractor.extract("Breast; invasive carcinoma; possible lymphovascular invasion")
    assert "lymphovascular_invasion" not in result.fields


def test_polarity_scopes():
    text = prepare_text("no necrosis, hemorrhage present. tumor necrosis is not identified")
    assert polarity(text, text.index("necrosis"), text.index("necrosis") + 8) == 1
    # the comma closes the negation scope
    assert polarity(text, text.index("hemorrhage"), text.index("hemorrhage") + 10) == 0
    start = text.rindex("necrosis")
    assert polarity(text, start, start + 8) == 1


def test_non_text_and_empty_input_have_no_fields():
    extractor = ClinicalExtractor()
    for value in (None, 3, b"bytes", "", "   \n\t"):
        assert extractor.extract(value).fields == {}


def test_candidate_phrases_drop_structured_modifiers():
    phrases = candidate_phrases("Breast, biopsy;\n 1. Invasive carcinoma of no special type, grade II "
                                "(Tubule formation: 3)\n 2. Ductal carcinoma in situ\n - Type: Solid\n"
                                " - Nuclear grade: High\nNote) The specimen includes muscle proper.")
    assert phrases == ["invasive carcinoma of no special type", "ductal carcinoma in situ"]


def test_vocabulary_learning_save_and_load(tmp_path):
    reports = ["Lung, biopsy; Sclerosing pneumocytoma"] * 2 + ["Lung, biopsy; Rare thing"]
    vocabulary = build_vocabulary(reports, min_count=2)
    assert "sclerosing pneumocytoma" in vocabulary.terms
    assert "rare thing" not in vocabulary.terms  # seen once, below min_count
    assert vocabulary.sha256 != BUILTIN_VOCABULARY.sha256
    extractor = ClinicalExtractor(vocabulary)
    assert extractor.extract("Lung, biopsy; Sclerosing pneumocytoma").fields["diagnosis"] == "sclerosing pneumocytoma"
    # without the learned term the diagnosis is the report's own phrase, listed as unread
    builtin = ClinicalExtractor().extract("Lung, biopsy; Sclerosing pneumocytoma")
    assert builtin.fields["diagnosis"] == "sclerosing pneumocytoma"
    assert builtin.unread == ("sclerosing pneumocytoma",)
    assert extractor.extract("Lung, biopsy; Sclerosing pneumocytoma").unread == ()

    path = vocabulary.save(tmp_path / "vocab.json")
    again = Vocabulary.load(path)
    assert again.sha256 == vocabulary.sha256 and again.terms == vocabulary.terms
    data = json.loads(path.read_text())
    assert data["sha256"] == vocabulary.sha256 and data["n_reports"] == 3 and data["min_count"] == 2

    data["terms"][0]["canonical"] = "tampered"
    path.write_text(json.dumps(data))
    with pytest.raises(PathkitError, match="does not match its sha256"):
        Vocabulary.load(path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(PathkitError, match="bad.json: not a readable CRQS vocabulary"):
        Vocabulary.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(PathkitError, match="not a CRQS vocabulary"):
        Vocabulary.load(tmp_path / "other.json")
    with pytest.raises(PathkitError, match="not found"):
        Vocabulary.load(tmp_path / "missing.json")


def test_vocabulary_learning_rejects_bad_input():
    with pytest.raises(PathkitError, match="not one string"):
        build_vocabulary("a report")
    with pytest.raises(PathkitError, match="report 1 is int"):
        build_vocabulary(["ok", 3])
    with pytest.raises(PathkitError, match="min_count"):
        build_vocabulary(["ok"], min_count=0)


def test_a_gate_with_keyword_sets_runs_its_pattern_only_when_each_set_is_met():
    gate = extract_module._Gate(re.compile(r"\binvad\w* (?:into )?(?:the )?perivesical fat\b"), "fat",
                         also=(("invad",), ("perivesic",)))
    text = "tumor invades into the perivesical fat"
    assert [m.group(0) for m in gate.finditer(text)] == ["invades into the perivesical fat"]
    assert gate.search(text) is not None
    # a set without its keyword: the pattern is not run (it could not match anyway)
    assert list(gate.finditer("tumor invades the muscle; perirectal fat")) == []
    assert gate.search("perivesical fat, no tumor") is None
    # the depth rules' gates answer exactly as their patterns do on texts that reach them
    for sample in ("carcinoma invading into perivesical adipose tissue", "extends into the pericolic fat",
                   "perivesical fat and lymph nodes; tumor invades muscularis propria",
                   "tumor extends to the serosa", "serosa: uninvolved", "lymphovascular invasion present",
                   "extranodal extension", "extracapsular spread absent", "myometrial invasion 5 mm"):
        for gate in [g for g, _ in extract_module._DEPTH_RULES] + [extract_module._LVI_RE, extract_module._ENE_RE,
                                                              extract_module._ORGAN_INVASION_RE]:
            assert [m.span() for m in gate.finditer(sample)] == [m.span() for m in gate.pattern.finditer(sample)]


@pytest.mark.parametrize(("name", "boundary_form"), [
    ("_MARGIN_RE", r"\bmargins?\b"),
    ("_MARGIN_BEFORE_RE", r"\b(negative|free|uninvolved|clear|positive|involved) "
                          r"(?:surgical |resection |inked |deep |lateral )?margins?\b"),
    ("_METASTASIS_RE", r"\bmetasta(?:tic|sis|ses|sized|sizing)\b"),
    ("_LN_RE", r"\blymph nodes?\b|\bnodal\b"),
    ("_NECROSIS_RE", r"\b(?:necros[ie]s|necrotic|necroti[sz]ing|comedo(?: type)?)\b"),
    ("_PNI_RE", r"\bperineur(?:al|ial) (?:invasion|involvement|infiltration|spread)\b"),
    ("_INVASION_RE", r"\b(?:micro ?invasive|microinvasion|invasive|invasion|invades|invading|invaded|"
                     r"infiltrating|infiltrative|infiltrates)\b"),
])
def test_patterns_opening_with_their_letter_match_as_with_a_leading_boundary(name, boundary_form):
    text = ("margins free; inked margin involved by carcinoma; premargin and submargins; uninvolved deep margin; "
            "clear margins, positive margin. metastatic carcinoma in 2 lymph nodes, nonmetastatic, extranodal "
            "nodal; necrosis, necrotic and necrotizing, comedo type, nonnecrotic; perineural invasion; "
            "microinvasive and micro invasive carcinoma, invading, noninvasive, infiltrates; xinvasion")
    gate = getattr(extract_module, name)
    pattern = getattr(gate, "pattern", gate)
    found = [(m.span(), m.groups()) for m in pattern.finditer(text)]
    assert found == [(m.span(), m.groups()) for m in re.finditer(boundary_form, text)]
    assert found  # each form occurs in the text
