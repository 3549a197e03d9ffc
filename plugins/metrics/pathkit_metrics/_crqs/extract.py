"""Rule-based extraction of clinical fields from a pathology report, with negation and uncertainty."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pathkit_metrics._crqs.lazy_pattern import lazy
from pathkit_metrics._crqs.normalise import (
    DIFFERENTIATION,
    DIFFERENTIATION_RANK,
    NUCLEAR_GRADE_WORDS,
    ORDINAL_SCALES,
    STRUCTURED_ITEM_RE,
    format_number,
    grade_system,
    normalise_names,
    plain_layout,
    prepare_text,
    roman_or_int,
    trie_pattern,
)
from pathkit_metrics._crqs.ocr import KNOWN_WORDS, SpellingRepair, clinical_words
from pathkit_metrics._crqs.sections import Section, read_spans, specimen_parts, strip_clutter
from pathkit_metrics._crqs.vocabulary import (
    BENIGN,
    BUILTIN_VOCABULARY,
    CATEGORY_RANK,
    MALIGNANT,
    NEGATIVE_FOR_MALIGNANCY,
    Term,
    Vocabulary,
    canonical_phrase,
    diagnosis_phrases,
)

AFFIRMED, NEGATED, UNCERTAIN = 0, 1, 2
PRESENT, ABSENT = "present", "absent"

# Every field the extractor can fill; a schema scores the subset it lists.
EXTRACTED_FIELDS: tuple[str, ...] = (
    "organ_site", "specimen_type", "benign_vs_malignant", "diagnosis", "primary_vs_metastatic",
    "lineage", "histologic_type", "in_situ_vs_invasive", "in_situ_component", "tumor_focality",
    "tumor_grade", "differentiation", "gleason_score", "grade_group", "nuclear_grade", "mitotic_score",
    "tubule_score", "invasion_status", "invasion_depth", "lymphovascular_invasion", "perineural_invasion",
    "extraprostatic_extension", "capsular_invasion", "organ_specific_invasion", "metastatic_involvement",
    "lymph_node_involvement", "multifocal_involvement", "multifocality", "bilateral_involvement",
    "dysplasia_grade", "epithelial_atypia", "carcinoma_in_situ", "intratubular_germ_cell_neoplasia",
    "necrosis", "inflammation_status", "inflammation_activity", "calcification", "psammoma_bodies",
    "hemorrhage", "papillary_features", "cystic_change", "tumor_extent", "tumor_volume", "tumor_size",
    "margin_status", "muscle_proper_status", "atrophy", "intestinal_metaplasia", "metaplasia_type",
    "hpylori_status", "gastritis_type", "olga_stage", "olgim_stage", "polyp_type", "serrated_lesion",
    "adenoma_type", "tumor_origin", "laterality", "pathologic_t", "pathologic_n", "pathologic_m", "stage_group",
    "lymph_node_ratios", "extranodal_extension", "specimen_parts", "statements_elsewhere",
)

# Findings of the `diagnosis` field are joined with this (sorted, so the value is order-free).
FINDING_SEPARATOR = "; "

# ----------------------------------------------------------------------------- negation / uncertainty

# NegEx-style triggers. The look-back stops at the clause start (. ; , or a clause break) and at
# 60 characters, so "no special type, grade ii" does not negate the grade.
_NEG_PRE_RE = lazy(
    r"\b(?:no(?! special type\b)|not|without|negative for|free of|absence of|absent|neither|nor|never|"
    r"lacks?|lacking|fails? to (?:show|reveal|demonstrate)|ruled out|excluded)\b"
)
_NON_PRE_RE = lazy(r"\bnon *$")
_UNCERTAIN_PRE_RE = lazy(
    r"\b(?:suspicious (?:for|of)|suspicion (?:for|of)|possible|possibly|probable|probably|questionable|"
    r"can ?not (?:be )?(?:exclude[ds]?|rule[ds]? out)|rule out|r/o|equivocal|indeterminate for|"
    r"concerning for|may represent|might represent|suggestive of|differential diagnosis)\b"
)
_NEG_POST_RE = lazy(
    # "necrosis: absent", "lvi: not identified", "lvi: none identified"; a bare "no"/"none" only as
    # the whole value, since "prostate biopsy: no evidence of carcinoma" negates what follows
    r"^ *(?:: *\(? *(?:not (?:identified|seen|present|detected|found|evident|observed|noted)|absent\b|"
    r"negative\b|none (?:identified|seen|present|detected|found|noted)\b|(?:no|none)(?= *(?:$|[,;(])))"
    r"|\(? *(?:is|are|was|were|has been|have been) +(?:not\b|absent|negative|none)"
    r"|(?:not (?:identified|seen|present|detected|found|evident|observed|noted)|absent\b|negative\b)"
    # a count of none: "metastatic carcinoma in 0/12 lymph nodes", "(0 of 8)"
    r"|(?:(?: +[a-z]+){0,3}? +in)? *\(? *0 *(?:/|of|out of) *\d{1,2}\b)"
)
_UNCERTAIN_POST_RE = lazy(
    r"^ *(?:: *)?(?:is |are )?(?:can ?not be (?:excluded|ruled out)|not (?:entirely |completely )?"
    r"(?:excluded|ruled out)|suspected|equivocal|indeterminate|\?)"
)
_LOOKBACK = 60
_LOOKAHEAD = 50
# A value that closes an earlier statement ("Lymph-vascular invasion / Not identified / Perineural
# invasion / Present", its lines joined): the look-back of a later mention starts after it, so
# the earlier label's "not identified" does not negate the next label's finding.
_CLOSING_VALUE_RE = lazy(r"\b(?:not|none) (?:identified|seen|detected|found|evident|observed|noted)\b")


# The polarities found in the last text asked about, (text, {(start, end): polarity}): the field
# rules and the part statements ask about the same mentions of the same read text. A new text
# replaces the whole entry, so an answer is only ever given for the very text it was found in.
_POLARITIES: list[tuple[str, dict[tuple[int, int], int]]] = [("", {})]


def polarity(text: str, start: int, end: int) -> int:
    """AFFIRMED, NEGATED or UNCERTAIN for the mention text[start:end] within its clause."""
    memo = _POLARITIES[0]
    if memo[0] is not text:
        memo = (text, {})
        _POLARITIES[0] = memo
    state = memo[1].get((start, end))
    if state is None:
        state = memo[1][(start, end)] = _polarity(text, start, end)
    return state


def _polarity(text: str, start: int, end: int) -> int:
    lo = max(0, start - _LOOKBACK)
    cut = max(text.rfind(".", lo, start), text.rfind(";", lo, start), text.rfind("\n", lo, start),
              text.rfind(",", lo, start))
    pre = text[cut + 1 if cut >= 0 else lo:start]
    if "not " in pre or "none " in pre:
        closings = list(_CLOSING_VALUE_RE.finditer(pre))
        if closings:
            pre = pre[closings[-1].end():]
    post = text[end:end + _LOOKAHEAD]
    stop = min((i for i in (post.find("."), post.find(";"), post.find("\n")) if i >= 0), default=-1)
    if stop >= 0:
        post = post[:stop]
    if _UNCERTAIN_PRE_RE.search(pre) or _UNCERTAIN_POST_RE.match(post):
        return UNCERTAIN
    if _NEG_PRE_RE.search(pre) or _NON_PRE_RE.search(pre) or _NEG_POST_RE.match(post):
        return NEGATED
    return AFFIRMED


# ----------------------------------------------------------------------------- extraction result


@dataclass(frozen=True)
class Extraction:
    """Fields asserted by a report (canonical values), findings stated only with doubt, and the
    diagnosis phrases no vocabulary term read (kept as written in `diagnosis`, listed in `unread`)."""

    fields: Mapping[str, str]
    uncertain: Mapping[str, str] = field(default_factory=dict)
    unread: tuple[str, ...] = ()
    # which text was read: "whole report" for a short one, else the sections of a long one with
    # their character spans in the report ("final pathologic diagnosis [212:1490]; ...")
    section: str = "whole report"

    def as_dict(self) -> dict[str, Any]:
        return {"fields": dict(self.fields), "uncertain": dict(self.uncertain), "unread": list(self.unread),
                "section": self.section}


EMPTY_EXTRACTION = Extraction({}, {}, section="")

# ----------------------------------------------------------------------------- patterns

_HEADER_RE = lazy(r"^([a-z][a-z ./'()&]{0,60}?) *, *([^;\n]{1,100}?) *;")
_DX_HEADER_RE = lazy(
    r"\b(?:final (?:pathologic(?:al)? |surgical pathology |anatomic(?:al)? )?diagnos[ie]s|"
    r"pathologic(?:al)? diagnos[ie]s|diagnos[ie]s *:|diagnostic (?:summary|impression)|impression *:)"
)
_DX_END_RE = lazy(
    r"\b(?:gross description|gross examination|clinical (?:history|information|data|notes?)|"
    r"microscopic (?:description|examination)|specimens? received|intraoperative consultation|"
    r"frozen section diagnosis|procedures? *:|addendum|electronically signed|"
    r"source of specimen|specimen\(s\) received)\b"
)
_DX_SECTION_MIN, _DX_SECTION_MAX = 20, 6000
# Below this many characters a report is read whole (REG-like); longer ones from their
# final-diagnosis section when there is one.
_SHORT_REPORT_CHARS = 400

_ORGANS: dict[str, str] = {
    "uterine cervix": "cervix", "cervix": "cervix", "cervical": "cervix", "endocervix": "cervix",
    "urinary bladder": "bladder", "bladder": "bladder", "breast": "breast", "lung": "lung",
    "stomach": "stomach", "gastric": "stomach", "colon": "colon", "rectum": "rectum", "rectal": "rectum",
    "sigmoid colon": "colon", "cecum": "colon", "prostate": "prostate", "prostatic": "prostate",
    "kidney": "kidney", "renal": "kidney", "liver": "liver", "hepatic": "liver", "pancreas": "pancreas",
    "thyroid": "thyroid", "thyroid gland": "thyroid", "ovary": "ovary", "ovarian": "ovary",
    "uterus": "uterus", "endometrium": "uterus", "brain": "brain", "testis": "testis",
    "esophagus": "esophagus", "duodenum": "duodenum", "small intestine": "small intestine",
    "skin": "skin", "lymph node": "lymph node", "adrenal gland": "adrenal gland", "adrenal": "adrenal gland",
    "oral cavity": "oral cavity", "tongue": "tongue", "larynx": "larynx", "pleura": "pleura",
    "ureter": "ureter", "urethra": "urethra", "renal pelvis": "renal pelvis", "tonsil": "tonsil",
    "pharynx": "pharynx", "oropharynx": "oropharynx", "hypopharynx": "hypopharynx", "nasopharynx": "nasopharynx",
    "floor of mouth": "floor of mouth", "lip": "lip", "bile duct": "bile duct", "ampulla": "ampulla",
    "temporal lobe": "temporal lobe", "frontal lobe": "frontal lobe", "parietal lobe": "parietal lobe",
    "occipital lobe": "occipital lobe", "cerebellum": "cerebellum", "mandible": "mandible",
    "gallbladder": "gallbladder", "bone marrow": "bone marrow", "soft tissue": "soft tissue",
    "omentum": "omentum", "fallopian tube": "fallopian tube", "vulva": "vulva", "vagina": "vagina",
}
def _word_list_re(words: list[str], extra: str = "") -> re.Pattern[str]:
    """`\\b(w1|w2|...)\\b`, the longest word that ends on a word boundary, as group 1, folded into a
    prefix tree (`trie_pattern`): at each word start the engine follows the one branch of its
    first letter instead of trying every word (a third of the time on a long report); `extra`, an
    alternative that is no plain word ("parametri\\w*"), is tried after the tree."""
    tree = trie_pattern(words)[2:-2]  # without its \b ... \b
    return lazy(r"\b(" + tree + ("|" + extra if extra else "") + r")\b")


_ORGAN_RE = _word_list_re(list(_ORGANS))
_SPECIMENS: dict[str, str] = {
    "core needle biopsy": "core needle biopsy", "core biopsy": "core needle biopsy",
    "sono guided core biopsy": "core needle biopsy", "sono guided core needle biopsy": "core needle biopsy",
    "ultrasound guided core biopsy": "core needle biopsy", "sono guided biopsy": "core needle biopsy",
    "vacuum assisted biopsy": "vacuum assisted biopsy", "vacuum assisted core biopsy": "vacuum assisted biopsy",
    "loop electrosurgical excision procedure": "loop electrosurgical excision procedure",
    "leep": "loop electrosurgical excision procedure", "cone biopsy": "conization", "conization": "conization",
    "transurethral resection": "transurethral resection", "turbt": "transurethral resection",
    "radical cystectomy": "cystectomy", "cystectomy": "cystectomy", "radical prostatectomy": "prostatectomy",
    "prostatectomy": "prostatectomy", "nephrectomy": "nephrectomy", "radical nephrectomy": "nephrectomy",
    "partial nephrectomy": "partial nephrectomy", "hysterectomy": "hysterectomy", "lobectomy": "lobectomy",
    "thyroidectomy": "thyroidectomy", "mastectomy": "mastectomy", "lumpectomy": "excision",
    "colectomy": "colectomy", "gastrectomy": "gastrectomy", "pancreaticoduodenectomy": "pancreaticoduodenectomy",
    "whipple": "pancreaticoduodenectomy", "hepatectomy": "hepatectomy", "oophorectomy": "oophorectomy",
    "salpingo oophorectomy": "salpingo oophorectomy", "orchiectomy": "orchiectomy",
    "endoscopic biopsy": "endoscopic biopsy", "colonoscopic biopsy": "colonoscopic biopsy",
    "colposcopic biopsy": "colposcopic biopsy", "punch biopsy": "punch biopsy", "excisional biopsy": "excision",
    "polypectomy": "polypectomy", "endoscopic submucosal dissection": "endoscopic submucosal dissection",
    "endoscopic mucosal resection": "endoscopic mucosal resection", "wedge resection": "wedge resection",
    "resection": "resection", "excision": "excision", "biopsy": "biopsy",
}
_SPECIMEN_RE = _word_list_re(list(_SPECIMENS))
# Ways of naming one procedure: the noun and the adjective of an endoscopy, the guidance by
# ultrasound, the vacuum-assisted devices (Mammotome, EnCor) and needle-core word order.
_SPECIMEN_WORDS: dict[str, str] = {
    "colonoscopy": "colonoscopic", "endoscopy": "endoscopic", "colposcopy": "colposcopic",
    "sigmoidoscopy": "sigmoidoscopic", "gastroscopy": "endoscopic", "gastroscopic": "endoscopic",
    "bronchoscopy": "bronchoscopic", "cystoscopy": "cystoscopic",
    "ultrasound guided": "sono guided", "ultrasonography guided": "sono guided",
    "ultrasonographic guided": "sono guided", "sonographically guided": "sono guided",
    "sonography guided": "sono guided", "us guided": "sono guided", "sonoguided": "sono guided",
    "needle core": "core needle", "encor": "vacuum assisted", "mammotome": "vacuum assisted",
    "vacuum assisted breast": "vacuum assisted",
}
_SPECIMEN_WORD_RE = lazy(r"\b(" + "|".join(sorted(_SPECIMEN_WORDS, key=len, reverse=True)) + r")\b")
# `\b(left|right|bilateral)\b`, the boundary tested after the first letter: a pattern whose every
# alternative opens with a literal lets the regex engine skip to the l, r and b of the text (half
# the time on a long report; a leading \b is the better filter where the first letters are many)
_LATERALITY_RE = lazy(r"(l(?<=\bl)eft|r(?<=\br)ight|b(?<=\bb)ilateral)\b")

# Where a tumour comes from ("metastatic carcinoma, from breast primary", "favor colorectal
# primary"): the organ word -> one site name, so "colon" and "colorectal" agree.
_ORIGIN_SITES: dict[str, str] = {
    "breast": "breast", "mammary": "breast",
    "colon": "colorectum", "colonic": "colorectum", "colorectal": "colorectum", "colorectum": "colorectum",
    "rectum": "colorectum", "rectal": "colorectum", "large bowel": "colorectum",
    "large intestine": "colorectum", "lung": "lung", "pulmonary": "lung", "stomach": "stomach",
    "gastric": "stomach", "esophagus": "esophagus", "esophageal": "esophagus",
    "upper gastrointestinal": "upper gastrointestinal tract", "upper gi": "upper gastrointestinal tract",
    "gastrointestinal": "gastrointestinal tract", "small intestine": "small intestine",
    "small bowel": "small intestine", "appendix": "appendix", "appendiceal": "appendix",
    "pancreas": "pancreas", "pancreatic": "pancreas", "pancreatobiliary": "pancreatobiliary tract",
    "biliary": "pancreatobiliary tract", "gallbladder": "gallbladder", "liver": "liver", "hepatic": "liver",
    "kidney": "kidney", "renal": "kidney", "bladder": "urinary tract", "urinary tract": "urinary tract",
    "prostate": "prostate", "prostatic": "prostate", "ovary": "ovary", "ovarian": "ovary",
    "mullerian": "mullerian", "endometrium": "endometrium", "endometrial": "endometrium",
    "uterine": "uterus", "uterus": "uterus", "cervix": "cervix", "cervical": "cervix",
    "thyroid": "thyroid", "skin": "skin", "cutaneous": "skin", "head and neck": "head and neck",
}
_ORIGIN_WORDS = "|".join(sorted(_ORIGIN_SITES, key=len, reverse=True))
_ORIGIN_AFTER_RE = lazy(
    r"^ *[,(]? *(?:(?:metastatic|metastasis|metastases) )?"
    r"(?:from (?:an? |the )?(?:primary (?:in |of )?(?:the )?)?(" + _ORIGIN_WORDS + r")\b"
    r"|(?:favor(?:s|ed|ing)?|consistent with|compatible with|suggestive of|suggesting|(?:most )?likely(?: of)?|"
    r"probably(?: of)?|of) (?:an? |the )?(" + _ORIGIN_WORDS + r") (?:primary|origin)\b"
    r"|(" + _ORIGIN_WORDS + r") (?:primary|origin)\b)"
)
_ORIGIN_BEFORE_RE = lazy(r"\bmetasta(?:tic|sis of|ses of) (" + _ORIGIN_WORDS + r") $")

_ROMAN_OR_DIGIT = r"(iv|iii|ii|i|[1-4])"
# the system a grade follows, named in brackets between the word and its value: "Histologic grade
# (Nottingham): 2", "Nuclear grade (Fuhrman): 3", "Grade (FNCLCC): 2"
_GRADE_SYSTEM = r"(?:\( *[a-z][a-z ./'&-]{0,30}\) *)?"
_GRADE_NUMBER_RE = lazy(
    r"\b(nuclear |fuhrman |isup |nucleolar |gleason |who )?grade *" + _GRADE_SYSTEM + r"(?:[:=] *)?"
    + _ROMAN_OR_DIGIT + r"(?![\w+])"
)
_GRADE_G_RE = lazy(r"(?<![\w/])g([1-4])\b")
_PREMALIGNANT_AFTER_TIER = (r" (?:glandular |squamous |cervical |prostatic |biliary )?"
                            r"(?:dysplasia|intraepithelial|squamous intraepithelial|pin\b|adenoma)")
# "high grade", and a tier after a grade label ("Tumor grade: high", "Histologic grade:
# intermediate"; "Nuclear grade: high" is a nuclear grade); a premalignant lesion's tier ("high
# grade dysplasia") is no tumour grade. The second alternative opens with its letter (the boundary
# and the labels it must not follow are look-behinds after it): three look-behinds tried at every
# position of a long report tripled the pattern's time.
_GRADE_TIER_RE = lazy(
    r"\b(high|low|intermediate) (?:histologic(?:al)? )?grade\b(?!" + _PREMALIGNANT_AFTER_TIER + r")|"
    r"g(?<=\bg)(?<!nuclear g)(?<!nucleolar g)(?<!fuhrman g)rade *" + _GRADE_SYSTEM
    + r"[:=] *(high|low|intermediate)\b(?!(?: grade)?" + _PREMALIGNANT_AFTER_TIER + r")"
)
_TIER_RANK = {"low": 1, "intermediate": 2, "high": 3}
_FUHRMAN_RE = lazy(r"\b(?:fuhrman|isup|who/isup)(?:'s)?(?: nuclear| nucleolar)? grade *(?:is )?:? *"
                   + _ROMAN_OR_DIGIT + r"\b|\bgrade *\( *(?:fuhrman|isup|who/isup)\b[^)]{0,20}\) *[:=]? *"
                   + _ROMAN_OR_DIGIT + r"\b")
# "moderately to poorly differentiated", and differentiation as a noun: "Differentiation: moderate to
# poor", "moderate to poor differentiation" (the worst of the words is read)
_DIFFERENTIATION_RE = lazy(
    r"\b(?:(well|moderately|moderate|poorly|poor)(?: to | and |/| )(?:(moderately|moderate|poorly|poor) )?)?"
    r"(well|moderately|poorly|un) ?differentiated(?:\b|(?=[a-z]{4}))|\bundifferentiated\b|"
    r"\bdifferentiation *: *(well|moderate|poor)(?:ly)?(?: (?:to|and) (well|moderate|poor)(?:ly)?)?\b|"
    r"\b(?:(well|moderate|poor)(?: to | and |/))?(well|moderate|poor) differentiation\b"
)
_GLEASON_TOTAL_PARTS_RE = lazy(
    r"gleason(?:'s)?(?: score| sum| grade)? *[:=]? *(\d{1,2}) *\( *([1-5]) *\+ *([1-5]) *\)"
)
_GLEASON_PARTS_RE = lazy(
    r"gleason(?:'s)?(?: score| sum| grade| pattern)? *[:=]? *\(? *([1-5]) *\+ *([1-5])(?: *= *(\d{1,2}))?"
)
# a synoptic form's "Primary Gleason grade: 3 / Secondary Gleason grade: 4" without a total
_GLEASON_PRIMARY_SECONDARY_RE = lazy(
    r"\bprimary (?:gleason )?(?:grade|pattern) *[:=]? *([1-5])\b[^;]{0,60}?"
    r"\bsecondary (?:gleason )?(?:grade|pattern) *[:=]? *([1-5])\b"
)
_GLEASON_TOTAL_RE = lazy(r"gleason(?:'s)?(?: score| sum) *[:=]? *(\d{1,2})\b(?! *\+)")
_GRADE_GROUP_RE = lazy(r"\b(?:isup |who )?grade group *[:=]? *(v|iv|iii|ii|i|[1-5])\b")
_NUCLEAR_GRADE_RE = lazy(
    r"\bnuclear grade *" + _GRADE_SYSTEM + r"(?:is )?[:=]? *(low|intermediate|moderate|high|iv|iii|ii|i|[1-4])\b|"
    r"\b(low|intermediate|high) nuclear grade\b"
)
_MITOSES_SCORE_RE = lazy(r"\b(?:mitoses|mitosis|mitotic score|mitotic count) *[:=] *(\d{1,3})\b(?! *(?:/|per))")
_MITOSES_COUNT_RE = lazy(
    r"\b(\d{1,3}) *(?:mitoses|mitotic figures?)? *(?:/|per) *(\d{1,3}) *(?:hpf|high power fields?)\b"
)
_TUBULE_RE = lazy(r"\btubul(?:e|ar) (?:formation|score) *[:=]? *([1-3])\b")

# What leads a depth of invasion: "invading (through) the", "infiltration of", "extending into",
# "depth of invasion: outer half of the", ...
_TO_DEPTH = (
    r"\b(?:involvement of |infiltrat\w* (?:of |into )?(?:the )?|invad\w* (?:into |through |thru )?(?:the )?|"
    r"invasion (?:of|into) (?:the )?|extend\w* (?:into|to|through) (?:the )?|extension (?:into|to|through) (?:the )?|"
    r"depth of invasion *:? *(?:through |into )?(?:the )?(?:inner |outer |superficial |deep )?(?:half of )?(?:the )?)"
)
_DEPTH_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy(_TO_DEPTH + r"(?:subepithelial connective tissue|lamina propria)\b|\blamina propria invasion\b"),
     "subepithelial connective tissue"),
    (lazy(_TO_DEPTH + r"(?:muscle proper|muscularis propria|detrusor muscle|muscular layer)\b|"
                r"\b(?:muscularis propria|detrusor muscle) invasion\b"),
     "muscle proper"),
    (lazy(_TO_DEPTH + r"submucosa\b"), "submucosa"),
    (lazy(_TO_DEPTH + r"subserosa\b"), "subserosa"),
    (lazy(_TO_DEPTH + r"(?:perivesical|perivesicular|extravesical|extravesicular|pericolorectal|pericolic|"
                r"perirectal|peripancreatic|perinephric|perirenal|periprostatic) "
                r"(?:soft |fatty |adipose )?(?:tissue|fat)\b"),
     "perivisceral tissue"),
    (lazy(r"\b(?:involvement of |infiltrat\w* (?:of |into )?(?:the )?|"
                r"invad\w* (?:into |through |thru )?(?:the )?|penetrat\w* (?:the )?)"
                r"(?:visceral peritoneum|serosa|serosal surface)\b"), "serosa"),
)
_NON_INVASIVE_RE = lazy(r"\bnon ?invasive\b|\bno (?:stromal |definite |evidence of )?invasion\b")
_INVASION_RE = lazy(
    r"(?:m(?<=\bm)icro ?invasive|m(?<=\bm)icroinvasion|i(?<=\bi)nvasive|i(?<=\bi)nvasion|i(?<=\bi)nvades|"
    r"i(?<=\bi)nvading|i(?<=\bi)nvaded|i(?<=\bi)nfiltrating|i(?<=\bi)nfiltrative|i(?<=\bi)nfiltrates)\b"
)
_SPECIFIC_INVASION_PRE_RE = lazy(
    r"(?:lymphovascular|lympho vascular|lymph vascular|vascular|lymphatic|angiolymphatic|venous|perineural|"
    r"capsular|myometrial|stromal|space|vessel|neural|nerve|perineurial) *$"
)
_IN_SITU_RE = lazy(
    r"\b(?:ductal|lobular|urothelial|squamous cell|flat)? ?carcinoma in situ\b|\badenocarcinoma in situ\b|"
    r"\bmelanoma in situ\b|\bin situ (?:carcinoma|component|lesion)\b|"
    r"\b(?:high|low) grade squamous intraepithelial lesion\b|\bintraepithelial neoplasia\b|"
    r"\bintratubular germ cell neoplasia\b|\bsquamous intraepithelial lesion\b"
)
_IN_SITU_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy(r"ductal carcinoma in situ"), "ductal carcinoma in situ"),
    (lazy(r"lobular carcinoma in situ"), "lobular carcinoma in situ"),
    (lazy(r"adenocarcinoma in situ"), "adenocarcinoma in situ"),
    (lazy(r"melanoma in situ"), "melanoma in situ"),
    (lazy(r"squamous intraepithelial lesion|squamous cell carcinoma in situ"), "squamous intraepithelial lesion"),
    (lazy(r"intratubular germ cell"), "intratubular germ cell neoplasia"),
    (lazy(r"intraepithelial neoplasia"), "intraepithelial neoplasia"),
    (lazy(r"urothelial carcinoma in situ|flat carcinoma in situ"), "urothelial carcinoma in situ"),
    (lazy(r"carcinoma in situ|in situ carcinoma|in situ"), "carcinoma in situ"),
)
_CIS_RE = lazy(
    r"\b(?:ductal |lobular |urothelial |squamous cell |flat )?carcinoma in situ\b|\badenocarcinoma in situ\b|"
    r"\bin situ carcinoma\b"
)
_ITGCN_RE = lazy(r"\bintratubular germ cell neoplasia\b|\bgerm cell neoplasia in situ\b")

_LVI_RE = lazy(
    r"\b(?:lympho ?vascular|lymph vascular|angiolymphatic|angio lymphatic|lymphatic|vascular|venous|"
    r"small vessel|large vessel)(?: space| channel)? (?:invasion|involvement|permeation|emboli|tumor emboli)\b"
)
_PNI_RE = lazy(r"p(?<=\bp)erineur(?:al|ial) (?:invasion|involvement|infiltration|spread)\b")
_EPE_RE = lazy(r"\bextra ?prostatic (?:extension|invasion|spread)\b")
_CAPSULAR_RE = lazy(
    r"\b(?:capsular|capsule) (?:invasion|penetration|involvement|breach)\b|"
    r"\binva\w* (?:through |into )?(?:the )?(?:tumor |renal |thyroid )?capsule\b"
)
_ORGAN_INVASION_RE = lazy(
    r"\b(?:myometrial|cervical stromal|extrathyroidal|rete testis|tunica vaginalis|tunica albuginea|"
    r"spermatic cord|renal sinus(?: fat)?|perinephric(?: fat)?|renal vein|seminal vesicle|bladder neck|"
    r"visceral pleural|pleural|parametrial|adventitial|serosal|liver|hepatic|bone|skull|dural)"
    r" (?:invasion|extension|involvement|infiltration)\b"
)
_METASTASIS_RE = lazy(r"m(?<=\bm)etasta(?:tic|sis|ses|sized|sizing)\b")
_LN_RE = lazy(r"l(?<=\bl)ymph nodes?\b|n(?<=\bn)odal\b")
_LN_RATIO_RE = lazy(
    r"\( *(\d{1,2}) *(?:/|of) *(\d{1,3}) *\)|\b(\d{1,2}) *(?:of|/) *(\d{1,3}) +(?:\w+ +){0,2}lymph nodes?\b"
)
_LN_NEGATIVE_RE = lazy(
    r"\b(?:negative|benign|uninvolved|free of (?:tumor|carcinoma|metasta\w*)|no (?:tumor|carcinoma|"
    r"metasta\w*|malignancy)|not involved)\b"
)
_LN_POSITIVE_RE = lazy(r"\b(?:positive|involved|metastatic|metastasis|metastases|carcinoma)\b")
_PN_STAGE_RE = lazy(r"\bp?t(?:[0-4][a-c]?|is|a|x) *,? *p?n([0-3x])[a-c]?\b")
# Pathologic TNM (AJCC): pT3a, ypT2, pNO (OCR "O" for zero), pMX, "T3 N0", "pT2aN1M0"; the
# stage group (stage IIIB, FIGO stage IC).
_T_VALUE, _N_VALUE, _M_VALUE = r"(is|x|[0-4](?:[a-d][12]?)?)", r"([0-3xl]|o)([a-c]?)", r"([01x]|o)([a-c]?)"
_PT_RE = lazy(r"(?<![a-z0-9])y?pt" + _T_VALUE + r"(?![a-z0-9])|(?<![a-z0-9])t" + _T_VALUE +
                    r"(?= *[,;]? *p?n(?:[0-3xl]|o)[a-c]?)"
                    # a bare T after a staging label: "AJCC stage: T3", "Primary tumor (pT): T2"
                    r"|(?:stage|tnm|classification|primary tumor|pathologic(?:al)? t)[^\n]{0,20}?(?<![a-z0-9])t"
                    + _T_VALUE + r"(?![a-z0-9])")
_AFTER_T = r"(?:(?<=t[0-4x])|(?<=t[0-4][a-d])|(?<=tis)|(?<=t[0-4][a-d][12]))"
_AFTER_N = r"(?:(?<=n[0-3xol])|(?<=n[0-3][a-c]))"
_PN_RE = lazy(r"(?<![a-z0-9])y?pn" + _N_VALUE + r"(?![a-z0-9])|" + _AFTER_T + r" *[,;]? *p?n" + _N_VALUE +
                    r"(?![a-z0-9])")
_PM_RE = lazy(r"(?<![a-z0-9])y?pm" + _M_VALUE + r"(?![a-z0-9])|" + _AFTER_N + r" *[,;]? *p?m" + _M_VALUE +
                    r"(?![a-z0-9])")
_STAGE_GROUP_RE = lazy(
    r"\b(?:ajcc |tnm |figo |pathologic(?:al)? |overall |anatomic )?stage(?: group(?:ing)?)? *:? *"
    r"(iv|iii|ii|i|[1-4])([abc][12]?)?(?![a-z0-9])"
)
_ENE_RE = lazy(r"\b(?:extra ?nodal|extra ?capsular) (?:extension|spread|invasion|tumor extension)\b")
# A pattern that opens with a word boundary is tried by the regex engine at every position of a
# long report; these few-word patterns open with their letters instead (the boundary a look-behind
# after the letter), which lets the engine skip to those letters (`m(?<=\bm)argins?\b` scans a
# 5,000-character report ten times faster than `\bmargins?\b`; same matches)
_MARGIN_RE = lazy(r"m(?<=\bm)argins?\b")
_MARGIN_NEG_RE = lazy(
    r"\b(?:negative|free|uninvolved|clear|not involved|no (?:tumor|carcinoma)|widely free)\b"
)
_MARGIN_POS_RE = lazy(r"\b(?:positive|involved|(?:tumor|carcinoma) (?:at|extends to)|transected|"
                            r"not (?:free|clear|negative|uninvolved))\b")
_MARGIN_BEFORE_RE = lazy(
    r"(n(?<=\bn)egative|f(?<=\bf)ree|u(?<=\bu)ninvolved|c(?<=\bc)lear|p(?<=\bp)ositive|i(?<=\bi)nvolved) "
    r"(?:surgical |resection |inked |deep |lateral )?margins?\b"
)
_R_STATUS_RE = lazy(r"\br([012])\b(?= resection| status| *$| *[,;.])")
_MUSCLE_PROPER_RE = lazy(
    r"\b(does not include|doesn't include|do not include|does not contain|no|includes|include|contains|"
    r"with|without)(?: the)? (?:muscle proper|muscularis propria|detrusor muscle)\b|"
    r"\b(?:muscle proper|muscularis propria|detrusor muscle)(?: is| are)? (present|not present|absent|"
    r"identified|not identified|included|not included)\b"
)
_FOCAL_MULTI_RE = lazy(r"\b(?:multifocal|multicentric|multiple (?:tumor )?foci|multiple tumors)\b")
_FOCAL_UNI_RE = lazy(r"\b(?:unifocal|solitary|single (?:tumor )?focus|unicentric)\b")
_BILATERAL_RE = lazy(r"\bbilateral(?:ly)?\b")
_UNILATERAL_RE = lazy(r"\bunilateral\b")
_DYSPLASIA_RE = lazy(
    r"\b(low|high|mild|moderate|severe) grade (?:glandular |squamous |columnar )?dysplasia\b|"
    r"\b(low|high) grade (?:(?:glandular|cervical|prostatic|biliary|squamous) )?intraepithelial neoplasia\b|"
    r"\b(low|high) grade squamous intraepithelial lesion\b|"
    r"\b(low|high) grade intraepithelial (?:squamous |glandular )?(?:neoplasia|lesion)\b|"
    r"\b(mild|moderate|severe|low grade|high grade) (?:squamous |glandular |epithelial )?dysplasia\b|"
    r"\bdysplasia *: *(low|high|mild|moderate|severe)\b|"
    r"\b(indefinite) for dysplasia\b|\b(negative) for dysplasia\b|\b(?:no|without) (?:evidence of )?(dysplasia)\b"
)
_ATYPIA_RE = lazy(r"\b(?:atypia|atypical(?! mitos\w*| mitotic))\b")
_NECROSIS_RE = lazy(r"(?:n(?<=\bn)ecros[ie]s|n(?<=\bn)ecrotic|n(?<=\bn)ecroti[sz]ing|c(?<=\bc)omedo(?: type)?)\b")
_INFLAMMATION_RE = lazy(r"\b(?:inflammation|inflammatory|inflamed|[a-z]{2,}itis)\b")
_ACTIVE_RE = lazy(
    r"\b(?:chronic )?active (?:chronic )?(?:inflammation|[a-z]{2,}itis)\b|\bacute (?:inflammation|[a-z]{2,}itis)\b|"
    r"\bactivity *: *(?:mild|moderate|marked|severe|present)\b|\bneutrophilic (?:activity|infiltrat\w*)\b"
)
_INACTIVE_RE = lazy(
    r"\b(?:inactive|quiescent)\b|"
    r"\bchronic (?:nonspecific |non specific |superficial )?(?:inflammation|[a-z]{2,}itis)\b|"
    r"\bno (?:significant )?activity\b"
)
_CALCIFICATION_RE = lazy(r"\b(?:micro ?)?calcif\w*\b")
_PSAMMOMA_RE = lazy(r"\bpsammoma(?:tous)?(?: bod(?:y|ies))?\b")
_HEMORRHAGE_RE = lazy(r"\bhemorrhag\w*|\bbleeding\b")
_PAPILLARY_RE = lazy(r"\bpapillary\b|\bpapillae\b")
_CYSTIC_RE = lazy(r"\b(?:cystic|cysts?|microcystic|multicystic)\b")
_NUMBER = r"(\d{1,4}(?:\.\d{1,3})?)"
_SIZE_UNIT_RE = r" *(cm|mm)\b"
_TUMOR_SIZE_RES = (
    lazy(r"\b(?:tumor size|size of (?:the )?tumor|greatest (?:tumor )?dimension|largest dimension|"
               r"maximum (?:tumor )?(?:dimension|diameter)|tumor diameter) *(?:[:=]|is|of|measures?)? *"
               r"(?:approximately |about |up to )?" + _NUMBER +
               r"(?: *(?:x|\*) *" + _NUMBER + r")?(?: *(?:x|\*) *" + _NUMBER + r")?" + _SIZE_UNIT_RE),
    lazy(r"\b(?:tumor|mass|carcinoma|neoplasm|lesion)\b[^.;\n]{0,30}?\b(?:measur\w*|measuring|"
               r"size of|spanning) *(?:up to |approximately |about )?" + _NUMBER +
               r"(?: *(?:x|\*) *" + _NUMBER + r")?(?: *(?:x|\*) *" + _NUMBER + r")?" + _SIZE_UNIT_RE),
)
_TUMOR_VOLUME_RES = (
    lazy(r"\btumor volume *[:=]? *(?:approximately |about |up to |less than |< *)?" + _NUMBER + r" *%"),
    lazy(r"\b(?:tumor|carcinoma|adenocarcinoma)\b (?:involv\w*|occup\w*|compris\w*|present in|in) +"
               r"(?:approximately |about |up to )?" + _NUMBER + r" *%"),
    lazy(r"\b" + _NUMBER + r" *% of (?:the )?(?:tissue|core|cores|specimen|biopsy|biopsies)\b"),
)
_TUMOR_EXTENT_RES = (
    lazy(r"\b(?:tumor extent|extent of (?:tumor|involvement)|linear extent) *[:=]? *"
               r"(?:approximately |about )?" + _NUMBER + r" *(%|mm|cm)"),
    lazy(r"\binvolving +(\d{1,2}) +(?:of|/) +(\d{1,2}) +(?:cores|biopsies|fragments)\b|"
               r"\b(\d{1,2}) +(?:of|/) +(\d{1,2}) +(?:cores|biopsies|fragments)\b(?= +(?:involved|positive))"),
)
_ATROPHY_RE = lazy(r"\batroph(?:y|ic)\b")
_IM_RE = lazy(r"\bintestinal metaplasia\b")
_METAPLASIA_TYPE_RE = lazy(
    r"\b(intestinal|pseudopyloric|pyloric|squamous|apocrine|tubal|osseous|oncocytic|mucinous|"
    r"pancreatic acinar|paneth cell|columnar|urothelial|nephrogenic|glandular|ciliated|clear cell) metaplasia\b"
)
_HPYLORI_RE = lazy(r"\bhelicobacter pylori(?: like)?(?: organisms?| infection| gastritis)?\b")
_HPYLORI_VALUE_RE = lazy(  # used as .match(text, pos)
    r" *(?:organisms?|infection)? *(?::|is|are)? *\(? *(positive|negative|present|absent|identified|"
    r"not identified|seen|not seen|\+|-)"
)
_GASTRITIS_RE = lazy(
    r"\b((?:chronic active|active chronic|chronic inactive|chronic|acute|atrophic|autoimmune|reactive|chemical|"
    r"lymphocytic|collagenous|granulomatous|eosinophilic|follicular|erosive|helicobacter pylori"
    r"(?: associated)?)(?: (?:nonspecific|non specific|superficial|atrophic))?) gastritis\b|"
    r"\b(reactive|chemical) gastropathy\b"
)
_OLGA_RE = lazy(r"\bolga(?: stage)? *[:=]? *(0|iv|iii|ii|i|[1-4])\b")
_OLGIM_RE = lazy(r"\bolgim(?: stage)? *[:=]? *(0|iv|iii|ii|i|[1-4])\b")
_POLYP_RE = lazy(
    r"\b(hyperplastic|inflammatory|fundic gland|hamartomatous|juvenile|peutz jeghers|adenomatous|"
    r"sessile serrated|serrated|endocervical|endometrial|fibroepithelial|lymphoid|xanthomatous) polyps?\b"
)
_ADENOMA_RE = lazy(
    r"\b(tubular|tubulovillous|tubulo villous|villous|sessile serrated|traditional serrated|serrated|"
    r"pyloric gland|oxyntic gland|intestinal type|foveolar type|foveolar) adenomas?\b"
)
_SERRATED_RE = lazy(
    r"\b(?:sessile serrated (?:lesion|adenoma|polyp)|traditional serrated adenoma|serrated "
    r"(?:lesion|adenoma|polyp)|hyperplastic polyp)s?\b"
)
# used as .match(text, pos): no "^", which would only match at the start of the text
_FAVOR_RE = lazy(r" *[,(]? *(?:favor(?:s|ed|ing)?|most likely|consistent with|compatible with) +")
_METASTATIC_BEFORE_RE = lazy(r"\bmetasta(?:tic|sis of|ses of) *$")
_METASTATIC_AFTER_RE = lazy(r"^ *,? *(?:metastatic|metastasis|metastases) (?:from|of|to)\b")

_LINEAGE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy(r"neuroendocrine|carcinoid|small cell carcinoma|pheochromocytoma|paraganglioma"), "neuroendocrine"),
    (lazy(r"seminoma|germ cell|yolk sac|embryonal carcinoma|choriocarcinoma|teratoma|germinoma"), "germ cell"),
    (lazy(r"glio|astrocytoma|oligodendro|ependymoma"), "glial"),
    (lazy(r"melanoma|nevus|melanocytic"), "melanocytic"),
    (lazy(r"lymphoma|leukemia|myeloma|lymphoid neoplasm"), "hematolymphoid"),
    (lazy(r"sarcoma|stromal tumor|fibromatosis|leiomyoma|lipoma|schwannoma|phyllodes|fibroma\b"),
     "mesenchymal"),
    (lazy(r"mesothelioma"), "mesothelial"),
    (lazy(r"carcinoma|adenoma|intraepithelial|dysplasia|papilloma|papillary neoplasm|serrated|atypia|"
                r"atypical ductal|atypical lobular|fibroadenoma"), "epithelial"),
)

class _Gate:
    """A pattern that is only run when one of its literal keywords occurs in the text: most
    fields are absent from most reports, and `in` is far cheaper than a regex scan. `also`: more
    keyword sets, each of which must have a keyword in the text too (a pattern that needs a verb
    and a place: "invading into the perivesical fat")."""

    __slots__ = ("pattern", "keywords", "also")

    def __init__(self, pattern: re.Pattern[str], *keywords: str, also: tuple[tuple[str, ...], ...] = ()) -> None:
        self.pattern = pattern
        self.keywords = keywords
        self.also = also

    def _open(self, text: str) -> bool:
        for keyword in self.keywords:  # a plain loop: any() over a generator costs more than the test
            if keyword in text:
                break
        else:
            return False
        for keywords in self.also:
            for keyword in keywords:
                if keyword in text:
                    break
            else:
                return False
        return True

    def finditer(self, text: str) -> Any:
        return self.pattern.finditer(text) if self._open(text) else iter(())

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.pattern.search(text, pos) if self._open(text) else None


class _LineGate(_Gate):
    """A pattern that is only run on the lines (clauses) of the text that hold a `hint` match:
    the pathologic TNM patterns open with look-behinds, which Python's regex engine tries at every
    position of a 5,000-character report, while their hint (a t, n or m before a stage value) is
    a fast character scan. Every match lies within one line, so the result is the same."""

    __slots__ = ("hint",)

    def __init__(self, pattern: re.Pattern[str], hint: re.Pattern[str]) -> None:
        super().__init__(pattern)
        self.hint = hint

    def finditer(self, text: str) -> Any:
        end = -1
        for hit in self.hint.finditer(text):
            if hit.start() < end:
                continue
            start = text.rfind("\n", 0, hit.start()) + 1
            end = text.find("\n", hit.end())
            end = len(text) if end < 0 else end
            yield from self.pattern.finditer(text, start, end)

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return next((m for m in self.finditer(text) if m.start() >= pos), None)


# Literal keywords without which a pattern cannot match (see _Gate).
_GRADE_NUMBER_RE = _Gate(_GRADE_NUMBER_RE, "grade")
_GRADE_G_RE = _Gate(_GRADE_G_RE, "g1", "g2", "g3", "g4")
_GRADE_TIER_RE = _Gate(_GRADE_TIER_RE, "grade")
_FUHRMAN_RE = _Gate(_FUHRMAN_RE, "grade")
_DIFFERENTIATION_RE = _Gate(_DIFFERENTIATION_RE, "differentiat")
_GLEASON_TOTAL_PARTS_RE = _Gate(_GLEASON_TOTAL_PARTS_RE, "gleason")
_GLEASON_PARTS_RE = _Gate(_GLEASON_PARTS_RE, "gleason")
_GLEASON_TOTAL_RE = _Gate(_GLEASON_TOTAL_RE, "gleason")
_GLEASON_PRIMARY_SECONDARY_RE = _Gate(_GLEASON_PRIMARY_SECONDARY_RE, "secondary")
_GRADE_GROUP_RE = _Gate(_GRADE_GROUP_RE, "grade group")
_NUCLEAR_GRADE_RE = _Gate(_NUCLEAR_GRADE_RE, "nuclear grade")
_MITOSES_SCORE_RE = _Gate(_MITOSES_SCORE_RE, "mito")
_MITOSES_COUNT_RE = _Gate(_MITOSES_COUNT_RE, "hpf", "high power")
_TUBULE_RE = _Gate(_TUBULE_RE, "tubul")
# the verbs of `_TO_DEPTH` (and "invasion" of "lamina propria invasion"), one of which every depth
# rule needs besides its place; the serosa rule has its own
_DEPTH_VERBS = ("involvement", "infiltrat", "invad", "invasion", "exten")
_DEPTH_RULES = tuple(
    (_Gate(pattern, *keys, also=also), value)
    for (pattern, value), (keys, also) in zip(_DEPTH_RULES, (
        (("connective tissue", "lamina propria"), (_DEPTH_VERBS,)),
        (("muscle proper", "muscularis", "detrusor", "muscular layer"), (_DEPTH_VERBS,)),
        (("submucosa",), (_DEPTH_VERBS,)), (("subserosa",), (_DEPTH_VERBS,)),
        (("tissue", "fat"), (_DEPTH_VERBS, ("perivesic", "extravesic", "pericol", "perirectal", "peripancreatic",
                                            "perinephric", "perirenal", "periprostatic"))),
        (("serosa", "peritoneum"), (("involvement", "infiltrat", "invad", "penetrat"),))), strict=True)
)
_NON_INVASIVE_RE = _Gate(_NON_INVASIVE_RE, "invasi")
_INVASION_RE = _Gate(_INVASION_RE, "invas", "invad", "infiltrat")
_IN_SITU_RE = _Gate(_IN_SITU_RE, "in situ", "intraepithelial", "intratubular")
_CIS_RE = _Gate(_CIS_RE, "in situ")
_ITGCN_RE = _Gate(_ITGCN_RE, "germ cell neoplasia")
_LVI_RE = _Gate(_LVI_RE, "invasion", "involvement", "permeation", "emboli",
                also=(("vascular", "lymphatic", "venous", "vessel"),))
_PNI_RE = _Gate(_PNI_RE, "perineur")
_EPE_RE = _Gate(_EPE_RE, "prostatic")
_CAPSULAR_RE = _Gate(_CAPSULAR_RE, "capsul")
_ORGAN_INVASION_RE = _Gate(_ORGAN_INVASION_RE, "invasion", "extension", "involvement", "infiltration", also=((
    "myometrial", "cervical stromal", "extrathyroidal", "rete testis", "tunica", "spermatic cord", "renal sinus",
    "perinephric", "renal vein", "seminal vesicle", "bladder neck", "pleural", "parametrial", "adventitial",
    "serosal", "liver", "hepatic", "bone", "skull", "dural"),))
_METASTASIS_RE = _Gate(_METASTASIS_RE, "metasta")
_LN_RE = _Gate(_LN_RE, "lymph node", "nodal")
_PN_STAGE_RE = _Gate(_PN_STAGE_RE, "n0", "n1", "n2", "n3")
# hints: a T value; a pN or a T value (an N follows one); a pM or an N value with an M after it
_PT_RE = _LineGate(_PT_RE, lazy(r"t(?:[0-4x]|is(?![a-z]))"))
_PN_RE = _LineGate(_PN_RE, lazy(r"pn[0-3xlo]|t(?:[0-4x]|is(?![a-z]))"))
_PM_RE = _LineGate(_PM_RE, lazy(r"pm[01xo]|n[0-3xlo][a-c]? *[,;]? *p?m[01xo]"))
_STAGE_GROUP_RE = _Gate(_STAGE_GROUP_RE, "stage")
_ENE_RE = _Gate(_ENE_RE, "extra", also=(("nodal", "capsular"),))
_MARGIN_RE = _Gate(_MARGIN_RE, "margin")
_MARGIN_BEFORE_RE = _Gate(_MARGIN_BEFORE_RE, "margin")
_R_STATUS_RE = _Gate(_R_STATUS_RE, "r0", "r1", "r2")
_MUSCLE_PROPER_RE = _Gate(_MUSCLE_PROPER_RE, "muscle proper", "muscularis propria", "detrusor")
_FOCAL_MULTI_RE = _Gate(_FOCAL_MULTI_RE, "multi")
_FOCAL_UNI_RE = _Gate(_FOCAL_UNI_RE, "unifocal", "solitary", "single", "unicentric")
_BILATERAL_RE = _Gate(_BILATERAL_RE, "bilateral")
_UNILATERAL_RE = _Gate(_UNILATERAL_RE, "unilateral")
_DYSPLASIA_RE = _Gate(_DYSPLASIA_RE, "dysplas", "intraepithelial")
_ATYPIA_RE = _Gate(_ATYPIA_RE, "atypi")
_NECROSIS_RE = _Gate(_NECROSIS_RE, "necro", "comedo")
_INFLAMMATION_RE = _Gate(_INFLAMMATION_RE, "inflam", "itis")
_ACTIVE_RE = _Gate(_ACTIVE_RE, "activ", "acute", "neutrophil")
_INACTIVE_RE = _Gate(_INACTIVE_RE, "inactive", "quiescent", "chronic", "activity")
_CALCIFICATION_RE = _Gate(_CALCIFICATION_RE, "calcif")
_PSAMMOMA_RE = _Gate(_PSAMMOMA_RE, "psammoma")
_HEMORRHAGE_RE = _Gate(_HEMORRHAGE_RE, "hemorrhag", "bleeding")
_PAPILLARY_RE = _Gate(_PAPILLARY_RE, "papill")
_CYSTIC_RE = _Gate(_CYSTIC_RE, "cyst")
_TUMOR_SIZE_RES = tuple(_Gate(pattern, "cm", "mm") for pattern in _TUMOR_SIZE_RES)
_TUMOR_VOLUME_RES = tuple(_Gate(pattern, "%") for pattern in _TUMOR_VOLUME_RES)
_TUMOR_EXTENT_RES = (_Gate(_TUMOR_EXTENT_RES[0], "extent"), _Gate(_TUMOR_EXTENT_RES[1], "cores", "biopsies",
                                                                   "fragments"))
_ATROPHY_RE = _Gate(_ATROPHY_RE, "atroph")
_IM_RE = _Gate(_IM_RE, "intestinal metaplasia")
_METAPLASIA_TYPE_RE = _Gate(_METAPLASIA_TYPE_RE, "metaplasia")
_HPYLORI_RE = _Gate(_HPYLORI_RE, "pylori")
_GASTRITIS_RE = _Gate(_GASTRITIS_RE, "gastri")
_OLGA_RE = _Gate(_OLGA_RE, "olga")
_OLGIM_RE = _Gate(_OLGIM_RE, "olgim")
_POLYP_RE = _Gate(_POLYP_RE, "polyp")
_ADENOMA_RE = _Gate(_ADENOMA_RE, "adenoma")
_SERRATED_RE = _Gate(_SERRATED_RE, "serrated", "hyperplastic polyp")



# The matches of a pattern over the last text it was run on: the field rules (`_read_fields`,
# `_staging`) and the part statements (`_mentions`) run many of the same patterns over the same
# read text, which is scanned once. The entry holds the text itself and is used only for that very
# object, so a stale entry can never answer for another text.
_SCANS: dict[int, tuple[str, list[re.Match[str]]]] = {}


def _scan(pattern: Any, text: str) -> list[re.Match[str]]:
    """Every match of `pattern` (a compiled pattern or a gate) in `text`, in text order."""
    hit = _SCANS.get(id(pattern))
    if hit is not None and hit[0] is text:
        return hit[1]
    found = list(pattern.finditer(text))
    _SCANS[id(pattern)] = (text, found)
    return found


def _presence(text: str, pattern: Any, skip: Callable[[re.Match[str]], bool] | None = None
              ) -> tuple[str | None, bool]:
    """('present' | 'absent' | None, stated-with-doubt) for the finding `pattern` names."""
    negated = uncertain = False
    for match in _scan(pattern, text):
        if skip is not None and skip(match):
            continue
        state = polarity(text, match.start(), match.end())
        if state == AFFIRMED:
            return PRESENT, False
        if state == NEGATED:
            negated = True
        else:
            uncertain = True
    if negated:
        return ABSENT, False
    return None, uncertain


# Statements that a field rule reads, so an unread one is not a finding (see `_unread_findings`).
_FIELD_STATEMENT_RE = lazy(
    r"\b(?:muscularis|muscle proper|detrusor|specimen|margins?|lymph nodes?|grade|differentiat\w*|gleason|"
    r"mitos[ie]s|tubule|volume|necros[ie]s|calcif\w*|invasion|invad\w*|extension|size|measur\w*|stage)\b"
)
_ORGAN_OR_PROCEDURE_RE = lazy(
    r"(?:(?:left|right) )?(?:" + "|".join(sorted(_ORGANS, key=len, reverse=True)) + r")(?: (?:"
    + "|".join(sorted(_SPECIMENS, key=len, reverse=True)) + r"))?"
)
_STATEMENT_END_RE = lazy(r"[\n;]|\.(?!\d)")


def _statements(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line, ";"-clause and sentence of `text` (a decimal point is no end)."""
    spans, start = [], 0
    for match in _scan(_STATEMENT_END_RE, text):
        if text[start:match.start()].strip():
            spans.append((start, match.start()))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def _in_structured_item(text: str, start: int, end: int) -> bool:
    """Whether a mention sits in a finding's sub-item line (`STRUCTURED_ITEM_RE`) or is used as a
    key ("necrosis: present"): a value of the field rules, not a finding of its own."""
    line_start = text.rfind("\n", 0, start) + 1
    if STRUCTURED_ITEM_RE.match(text, line_start) is not None:
        return True
    return text[end:end + 3].lstrip(" ").startswith(":")


def _specimen_words(text: str) -> str:
    """Procedure words in one spelling (`_SPECIMEN_WORDS`): "colonoscopy biopsy" reads as
    "colonoscopic biopsy", "ultrasound-guided" as "sono-guided"."""
    return _SPECIMEN_WORD_RE.sub(lambda m: _SPECIMEN_WORDS[m.group(1)], text)


def _first_affirmed(text: str, pattern: Any) -> re.Match[str] | None:
    hit = _SCANS.get(id(pattern))  # the scan already made of this text, else a lazy one
    for match in hit[1] if hit is not None and hit[0] is text else pattern.finditer(text):
        if polarity(text, match.start(), match.end()) == AFFIRMED:
            return match
    return None


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    term: Term
    metastatic: bool
    origin: str | None = None
    unread: bool = False  # not a vocabulary term: the report's own phrase (see `_unread_findings`)

    @property
    def finding(self) -> str:
        """The finding as the `diagnosis` field compares it: the term and, for a malignancy,
        where it comes from."""
        return f"{self.term.canonical}, origin {self.origin}" if self.origin else self.term.canonical

    def specific_key(self) -> tuple[Any, ...]:
        """`principal_key` with the more specific name (more words) first among equals."""
        key = self.principal_key()
        return (*key[:-1], -len(self.term.canonical.split()), key[-1])

    def principal_key(self) -> tuple[Any, ...]:
        """Smaller is more principal, whatever the order the findings were written in: the worst
        category, a primary before a metastasis, invasive before in situ, a neoplasm before a
        change, a recognised term before an unread phrase, a finding before a negative statement;
        then the name."""
        term = self.term
        return (-CATEGORY_RANK[term.category], self.metastatic, bool(_IN_SITU_RE.search(term.canonical)),
                term.histologic_type is None, self.unread, term.canonical == NEGATIVE_FOR_MALIGNANCY,
                term.canonical)


# OCR glues words at a change of letter case ("carcinomaHistologic Grade", "DIFFERENTIATEDReported"):
# split there (long reports).
# (the capital opens the pattern, so that the engine skips the other characters; a space is put
# before it: the same as splitting after `[a-z]{3}(?=[A-Z][a-z])|[A-Z]{3}(?=[A-Z][a-z]{2})`)
_GLUED_CASE_RE = lazy(r"[A-Z](?=[a-z])(?:(?<=[a-z]{3}[A-Z])|(?<=[A-Z]{4})(?=[a-z]{2}))")
# A line that starts a synoptic item ("Perineural Invasion: Absent", "Vascular Invasion:") is a
# clause of its own, so that one item's value never negates or affirms the next item (long reports).
_LABEL_LINE_RE = lazy(r"\n(?=[ \t]*[A-Za-z][A-Za-z /()'\-]{1,40}[ \t]*:)")


def _label_lines(raw: str) -> str:
    """A blank line before each line that starts with an item label (`_LABEL_LINE_RE`), the blanks
    ending the line before it dropped (the pattern opens with the line break, a fast scan)."""
    pieces, last = [], 0
    for match in _LABEL_LINE_RE.finditer(raw):
        pieces.append(raw[last:match.start()].rstrip(" \t"))
        pieces.append("\n\n")
        last = match.end()
    if not pieces:
        return raw
    pieces.append(raw[last:])
    return "".join(pieces)
# a short report that may state pathologic staging or node counts (`_staging`)
_STAGING_HINT_RE = lazy(r"\bp?[tnm][0-4xo]|\bstage\b|/ *\d|\bof \d|extra ?(?:nodal|capsular)")
_MIN_READ_LETTERS = 15  # a read section with fewer letters (a form, a barcode) is no diagnosis
# matches where a text holds `_MIN_READ_LETTERS` letters (stops there instead of counting them all)
_ENOUGH_LETTERS_RE = lazy(r"(?:[^A-Za-z]*[A-Za-z]){" + str(_MIN_READ_LETTERS) + "}")
_MAX_ELSEWHERE_CHARS = 4_000  # of the text outside the diagnosis sections (`statements_elsewhere`)

_POLARITY_MARK = {AFFIRMED: "+", NEGATED: "-", UNCERTAIN: "?"}
_ROMAN_DIGITS = {"i": "1", "ii": "2", "iii": "3", "iv": "4", "o": "0", "l": "1"}
# anatomical words of a tumour's extent, whatever verb leads them ("extending into the perivesical fat")
_EXTENT_WORD_RE = _word_list_re((
    "lamina propria|muscularis propria|muscularis mucosae|submucosa|subserosa|serosa|perivesical|perirenal|"
    "perinephric|renal sinus|renal vein|renal capsule|gerota's fascia|adrenal gland|seminal vesicle|"
    "seminal vesicles|extraprostatic|periprostatic|pericolonic|pericolorectal|perirectal|mesorectal|"
    "visceral peritoneum|extrathyroidal|myometrium|myometrial|peripancreatic|duodenal wall|bone|cartilage|"
    "perineural|intrarenal|intraprostatic").split("|"), extra=r"parametri\w*")
# statements read as present / absent / doubtful (see `_mentions`)
_STATE_MENTIONS = (
    (_LVI_RE, "lvi"), (_PNI_RE, "pni"), (_ENE_RE, "ene"), (_EPE_RE, "epe"), (_CAPSULAR_RE, "capsule"),
    (_ORGAN_INVASION_RE, "organ-invasion"), (_INVASION_RE, "invasion"), (_NECROSIS_RE, "necrosis"),
)
# statements read as a value
_VALUE_MENTIONS = (
    (_GRADE_NUMBER_RE, "grade"), (_GRADE_TIER_RE, "tier"), (_GRADE_G_RE, "g"), (_DIFFERENTIATION_RE, "diff"),
    (_GLEASON_PARTS_RE, "gleason"), (_NUCLEAR_GRADE_RE, "nuclear"), (_PT_RE, "t"), (_PN_RE, "n"), (_PM_RE, "m"),
    (_STAGE_GROUP_RE, "stage"), (_DYSPLASIA_RE, "dysplasia"),
)
# tumour subtype words ("mucinous, moderately differentiated adenocarcinoma")
_SUBTYPE_WORD_RE = _word_list_re((
    "serous|mucinous|endometrioid|clear cell|chromophobe|papillary|squamous|sarcomatoid|signet ring|"
    "micropapillary|cribriform|acinar|ductal|lobular|follicular|medullary|anaplastic|keratinizing|basaloid|"
    "verrucous|spindle cell|small cell|large cell|neuroendocrine|fibrolamellar|"
    "glandular|solid|lepidic|mucoepidermoid|gemistocytic").split("|"))
# a count written "(k/n)" or "(k of n)": in a diagnosis, nodes involved of nodes examined
_ANY_RATIO_RE = lazy(r"\( *(\d{1,2}) *(?:/|of) *(\d{1,3}) *\)")
# a T or N category written without its "p" (OCR lost it, "P„uti, T3-S", or the report omits it:
# "Lymph nodes: N1=Positive"), which `_PT_RE` / `_PN_RE` read only next to each other or after a
# staging label; a block, cassette or slide name ("for block T1") is not a stage. The letter opens
# the pattern (the boundary is a look-behind after it), so the engine skips to the t's and n's.
_BARE_T_RE = lazy(r"t(?<![a-z0-9]t)(?<!block t)(?<!blocks t)(?<!cassette t)(?<!slide t)([0-4][a-d]?)"
                        r"(?![a-z0-9])")
_BARE_N_RE = lazy(r"n(?<![a-z0-9]n)([0-3][a-c]?)(?![a-z0-9])")
# statements named by a word: "side=left", "kind=serous", "extent=perivesical", "t=3", "n=1"
_WORD_MENTIONS = (
    (_LATERALITY_RE, "side="), (_SUBTYPE_WORD_RE, "kind="), (_EXTENT_WORD_RE, "extent="), (_BARE_T_RE, "t="),
    (_BARE_N_RE, "n="),
)
# between two readings of one statement ("hepatocellular carcinoma (hcc)" read twice): no word
_NO_WORD_RE = lazy(r"[^a-z0-9]*")


def _statement_tokens(scope: str, mentions: Callable[[str], list[tuple[int, str, int]]],
                      positions: bool = False) -> list[Any]:
    """The statements of `scope` (`mentions`) in text order, a statement repeated straight after
    itself with no word between the two ("hepatocellular carcinoma (HCC)", a T read by two rules)
    counted once: "duodenum and duodenum" or "no tumor present. nodes, no tumor present" are two
    statements. (position, token) pairs with `positions`, else the tokens."""
    out: list[Any] = []
    last_token, last_end = None, -1
    for start, token, end in sorted(mentions(scope)):
        if token == last_token and (start <= last_end or _NO_WORD_RE.fullmatch(scope, last_end, start)):
            last_end = max(last_end, end)
            continue
        out.append((start, token) if positions else token)
        last_token, last_end = token, end
    return out


def _principal_line(scope: str, principal: int | None) -> tuple[int, int] | None:
    """(start, end) of the principal diagnosis' line up to the end of its name (at most 250
    characters back): where its part names the organ, side and procedure."""
    if principal is None:
        return None
    end = scope.find("\n", principal)
    end = len(scope) if end < 0 else end
    return max(scope.rfind("\n", 0, principal) + 1, principal - 250), min(end, principal + 80)


def _margin_after(scope: str, end: int) -> str | None:
    """'+' or '-' for the margin word ending at `end`: the status word nearest after it in its
    clause ("margin is negative for tumor (tumor free margin ...)" is negative, "margins not free"
    positive, "margin: positive, distal margin: negative" positive), or None."""
    after = scope[end:end + 60]
    stop = min((i for i in (after.find("."), after.find(";"), after.find("\n")) if i >= 0), default=-1)
    if stop >= 0:
        after = after[:stop]
    negative = _MARGIN_NEG_RE.search(after)
    positive = _MARGIN_POS_RE.search(after)
    if negative is not None and (positive is None or negative.start() <= positive.start()):
        return "-"
    return "+" if positive is not None else None


def _margin_counts(scope: str) -> tuple[int, int]:
    """(positive, negative) margin statements of `scope`."""
    positive = negative = 0
    for match in _scan(_MARGIN_BEFORE_RE, scope):
        if match.group(1) in ("positive", "involved"):
            positive += 1
        else:
            negative += 1
    for match in _scan(_MARGIN_RE, scope):
        state = _margin_after(scope, match.end())
        if state == "-":
            negative += 1
        elif state == "+":
            positive += 1
    status = _R_STATUS_RE.search(scope)
    if status is not None:
        if status.group(1) == "0":
            negative += 1
        else:
            positive += 1
    return positive, negative


def _fixed_mentions(scope: str) -> list[tuple[int, str, int]]:
    """(start, token, end) of the statements CRQS finds by fixed patterns (not the vocabulary's
    terms): states, values, margins, node ratios, depths, words and organs."""
    found: list[tuple[int, str, int]] = []
    for pattern, name in _STATE_MENTIONS:
        for match in _scan(pattern, scope):
            state = polarity(scope, match.start(), match.end())
            found.append((match.start(), name + _POLARITY_MARK[state], match.end()))
    for pattern, name in _VALUE_MENTIONS:
        for match in _scan(pattern, scope):
            value = " ".join(_ROMAN_DIGITS.get(g.strip(), g.strip()) for g in match.groups() if g)
            found.append((match.start(), name + "=" + value, match.end()))
    for match in _scan(_MARGIN_RE, scope):
        state = _margin_after(scope, match.end())
        if state is not None:
            found.append((match.start(), "margin" + state, match.end()))
    for match in _scan(_MARGIN_BEFORE_RE, scope):
        found.append((match.start(), "margin+" if match.group(1) in ("positive", "involved") else "margin-",
                      match.end()))
    for match in _scan(_ANY_RATIO_RE, scope):
        found.append((match.start(), f"ratio={int(match.group(1))}/{int(match.group(2))}", match.end()))
    for pattern, value in _DEPTH_RULES:
        for match in _scan(pattern, scope):
            found.append((match.start(), "depth=" + value, match.end()))
    for pattern, name in _WORD_MENTIONS:
        for match in _scan(pattern, scope):
            found.append((match.start(), name + match.group(1), match.end()))
    for match in _scan(_ORGAN_RE, scope):
        found.append((match.start(), "organ=" + _ORGANS[match.group(1)], match.end()))
    return found


class ClinicalExtractor:
    """Extracts canonical clinical fields from report text. Pure and deterministic for a given
    vocabulary; results are cached by text, since report datasets repeat many strings."""

    # The cache holds report strings as keys: bound it by count and by characters held.
    MAX_CACHED_CHARS = 50_000_000

    def __init__(self, vocabulary: Vocabulary | None = None, *, cache_size: int = 200_000) -> None:
        self.vocabulary = vocabulary if vocabulary is not None else BUILTIN_VOCABULARY
        self._pattern = self.vocabulary.pattern
        self._spelling = SpellingRepair(clinical_words(self.vocabulary.terms), KNOWN_WORDS)
        self._cache: dict[str, Extraction] = {}
        self._cache_size = cache_size
        self._cached_chars = 0

    def extract(self, report: Any) -> Extraction:
        """The fields of one report; anything that is not a non-empty string has no fields."""
        if not isinstance(report, str) or not report.strip():
            return EMPTY_EXTRACTION
        cached = self._cache.get(report)
        if cached is not None:
            return cached
        result = self._extract(report)
        if len(self._cache) >= self._cache_size or self._cached_chars + len(report) > self.MAX_CACHED_CHARS:
            self._cache.clear()
            self._cached_chars = 0
        if len(report) <= self.MAX_CACHED_CHARS:
            self._cache[report] = result
            self._cached_chars += len(report)
        return result

    # ------------------------------------------------------------------ the pipeline

    def _extract(self, report: str) -> Extraction:
        if len(report) >= _SHORT_REPORT_CHARS:
            return self._extract_long(report)
        text = self._spelling.repair(prepare_text(report))
        facts: dict[str, str] = {}
        doubts: dict[str, str] = {}
        body = text
        header = _HEADER_RE.match(text)
        if header and len(header.group(1).split()) <= 5:
            organ = header.group(1).strip()
            facts["organ_site"] = self._organ(organ) or organ
            specimen = header.group(2).strip()
            facts["specimen_type"] = self._specimen(specimen) or specimen
            body = text[header.end():]
        scope = self._diagnosis_section(body)
        if "organ_site" not in facts:
            organ = self._first_word(_ORGAN_RE, scope) or self._first_word(_ORGAN_RE, body)
            if organ:
                facts["organ_site"] = _ORGANS[organ]
            specimen = (self._first_word(_SPECIMEN_RE, _specimen_words(scope))
                        or self._first_word(_SPECIMEN_RE, _specimen_words(body)))
            if specimen:
                facts["specimen_type"] = _SPECIMENS[specimen]
        side = _LATERALITY_RE.search(header.group(1)) if header else None
        side = side or _first_affirmed(scope, _LATERALITY_RE)
        if side is not None:
            facts["laterality"] = side.group(1)

        unread: list[str] = []
        self._diagnosis(scope, body, facts, doubts, unread)
        self._read_fields(scope, facts, doubts)
        facts.pop("_principal_start", None)
        if _STAGING_HINT_RE.search(scope):
            self._staging(scope, facts)
            # a short report that stages a tumour (a TCGA report under 400 characters; REG reports
            # do not) is one part: its statements, as a long report's parts hold them (no REG
            # field): a 390-character report's "liver metastases" -> "gallbladder metastases"
            signature = self._part_signatures(text, [len(text)]) if facts else []
            if signature:
                facts["specimen_parts"] = signature[0]
        return Extraction(facts, doubts, tuple(unread))

    def _read_fields(self, scope: str, facts: dict[str, str], doubts: dict[str, str]) -> None:
        """Every field but the diagnosis hierarchy, read from `scope`."""
        self._behaviour(scope, facts)
        self._grades(scope, facts)
        self._invasion(scope, facts)
        self._spread(scope, facts)
        self._premalignant(scope, facts, doubts)
        self._morphology(scope, facts, doubts)
        self._measurements(scope, facts)
        self._gastrointestinal(scope, facts, doubts)

    # ------------------------------------------------------------------ long reports (TCGA)

    def _prepare_long(self, raw: str) -> str:
        raw = _GLUED_CASE_RE.sub(r" \g<0>", raw)
        raw = _label_lines(raw)
        return normalise_names(self._spelling.repair(prepare_text(raw, upper_abbreviations=False)))

    def _extract_long(self, report: str) -> Extraction:
        """A long report: read from its diagnosis and synoptic sections (`sections.read_spans`),
        clutter removed, names and OCR misspellings normalised; the findings of each specimen part
        kept apart (`specimen_parts`); the site from the tumour's own part of the diagnosis."""
        report = plain_layout(report)
        sections = read_spans(report)
        raws = [strip_clutter(report[s.start:s.end]) for s in sections]
        if not _ENOUGH_LETTERS_RE.match("".join(raws)):
            sections = (Section(0, len(report), "whole report", "fallback"),)
            raws = [strip_clutter(report)]
        # each section's specimen parts (a section without parts, a synoptic block, or the text
        # before a section's first part is one part of its own)
        part_texts: list[str] = []
        for raw in raws:
            parts = specimen_parts(raw)
            pieces = [(0, parts[0][1]), *((start, end) for _, start, end in parts)] if parts else [(0, len(raw))]
            for start, end in pieces:
                prepared = self._prepare_long(raw[start:end])
                if prepared:
                    part_texts.append(prepared)
        scope = "\n".join(part_texts)
        facts: dict[str, str] = {}
        doubts: dict[str, str] = {}
        unread: list[str] = []
        self._diagnosis(scope, scope, facts, doubts, unread, is_report=True, specific_first=True)
        principal = facts.pop("_principal_start", None)
        self._read_fields(scope, facts, doubts)
        system = grade_system(scope) if "tumor_grade" in facts else None
        if system is not None:
            facts["tumor_grade"] = f"{system} {facts['tumor_grade']}"
        self._long_fields(scope, facts)
        line = _principal_line(scope, int(principal) if principal else None)
        organ = self._primary_site(scope, line)
        if organ is not None:
            facts["organ_site"] = organ
        specimen = self._first_word(_SPECIMEN_RE, _specimen_words(scope[line[0]:line[1]] if line else scope))
        specimen = specimen or self._first_word(_SPECIMEN_RE, _specimen_words(scope))
        if specimen:
            facts["specimen_type"] = _SPECIMENS[specimen]
        # the side on the tumour's line, else every side the report names (in no order)
        side = _first_affirmed(scope[line[0]:line[1]], _LATERALITY_RE) if line else None
        sides = [side.group(1)] if side is not None else sorted({m.group(1) for m in _scan(_LATERALITY_RE, scope)})
        if sides:
            facts["laterality"] = " and ".join(sides)
        bounds, offset = [], 0
        for text in part_texts:
            bounds.append(offset + len(text))
            offset += len(text) + 1
        signatures = self._part_signatures(scope, bounds)
        if signatures:
            facts["specimen_parts"] = FINDING_SEPARATOR.join(sorted(signatures))
        # what the rest of the report states supplements a diagnosis that was read; it never makes a
        # report without one scorable
        elsewhere = self._statements_elsewhere(report, sections) if facts else None
        if elsewhere:
            facts["statements_elsewhere"] = elsewhere
        return Extraction(facts, doubts, tuple(unread), "; ".join(s.describe() for s in sections))

    def _statements_elsewhere(self, report: str, sections: tuple[Section, ...]) -> str | None:
        """The clinical statements (`_mentions`) the report makes outside the sections read as its
        diagnosis (a comment, an addendum, a microscopic description, a page the sections missed),
        as a multiset: each statement with its count where it recurs (a statement repeated straight
        after itself counted once), in sorted order, so that neither the order of the text nor a
        repeat in place changes it, but a statement changed, added or dropped anywhere does. At
        most `_MAX_ELSEWHERE_CHARS` are read (the CRQS throughput budget on long reports), the
        text nearest the diagnosis first: the text after the first diagnosis section (where
        comments, immunohistochemistry conclusions and addenda follow it), then the end of the text
        above it, from a line start (a comment or a summary template written just above the
        diagnosis; clinical history and a gross description written first come last)."""
        pieces, last = [], 0
        for section in sorted(sections, key=lambda sec: sec.start):
            pieces.append(report[last:section.start])
            last = max(last, section.end)
        pieces.append(report[last:])
        rest = "\n\n".join(piece for piece in pieces[1:] if piece.strip())
        room = _MAX_ELSEWHERE_CHARS - len(rest) - 2
        above = pieces[0]
        if room > 0 and above.strip():
            if len(above) > room:
                above = above[-room:]
                above = above[above.find("\n") + 1:]  # from a line start
            rest = rest + "\n\n" + above if rest else above
        if len(rest) > _MAX_ELSEWHERE_CHARS:
            rest = rest[:_MAX_ELSEWHERE_CHARS]
        if not _ENOUGH_LETTERS_RE.match(rest):
            return None
        counts = Counter(_statement_tokens(self._prepare_long(strip_clutter(rest)), self._mentions))
        return " ".join(f"{token}*{n}" if n > 1 else token for token, n in sorted(counts.items())) or None

    def _long_fields(self, scope: str, facts: dict[str, str]) -> None:
        """Fields of a long report: pathologic TNM and stage group, node counts (`_staging`); the
        differentiation read as the grade where no grade is written."""
        self._staging(scope, facts)
        if "tumor_grade" not in facts and "differentiation" in facts:
            facts["tumor_grade"] = str(DIFFERENTIATION_RANK[facts["differentiation"]])

    def _staging(self, scope: str, facts: dict[str, str]) -> None:
        """Pathologic TNM, stage group, extranodal extension and node counts, which a short
        report may state too (a TCGA report under 400 characters); no REG field."""
        for name, pattern in (("pathologic_t", _PT_RE), ("pathologic_n", _PN_RE), ("pathologic_m", _PM_RE)):
            values = set()
            for match in _scan(pattern, scope):
                groups = [g for g in match.groups() if g is not None]
                values.add("".join(groups).replace("o", "0").replace("l", "1"))
            if values:
                facts[name] = ",".join(sorted(values))
        groups = set()
        for match in _scan(_STAGE_GROUP_RE, scope):
            value = roman_or_int(match.group(1))
            if value is not None:
                groups.add(f"{value}{match.group(2) or ''}")
        if groups:
            facts["stage_group"] = ",".join(sorted(groups))
        state, _ = _presence(scope, _ENE_RE)
        if state is not None:
            facts["extranodal_extension"] = state
        ratios = self._node_ratios(scope)
        if ratios:
            facts["lymph_node_ratios"] = ",".join(ratios)

    @staticmethod
    def _node_ratios(scope: str) -> list[str]:
        """Every "involved/examined" count stated for lymph nodes, sorted ("0/8", "3/16")."""
        ratios = []
        for match in _scan(_LN_RE, scope):  # counts on the line (the part) of a node mention
            lo = scope.rfind("\n", 0, match.start())
            hi = scope.find("\n", match.end())
            hi = len(scope) if hi < 0 else hi
            for ratio in _LN_RATIO_RE.finditer(scope, lo + 1, hi):
                involved = ratio.group(1) or ratio.group(3)
                total = ratio.group(2) or ratio.group(4)
                ratios.append((ratio.start(), f"{int(involved)}/{int(total)}"))
        return sorted(value for _, value in set(ratios))

    def _part_signatures(self, scope: str, bounds: list[int]) -> list[str]:
        """One string per specimen part (`bounds`: where each part of `scope` ends): the clinical
        statements it makes, in the order it makes them (`_mentions`), a statement repeated
        straight after itself counted once. Parts compare as a set, so their order does not
        matter; a change to any statement of any part changes that part's string."""
        tokens: list[list[str]] = [[] for _ in bounds]
        for position, token in _statement_tokens(scope, self._mentions, positions=True):
            part = bisect.bisect_left(bounds, position)
            if part < len(tokens):
                tokens[part].append(token)
        return [" ".join(t) for t in tokens if t]

    def _mentions(self, scope: str) -> list[tuple[int, str, int]]:
        """(start, token, end) of every clinical statement of `scope`: diagnosis terms (with their
        polarity), grades, differentiation, Gleason patterns, margins, node counts, invasion
        and extension states, depths, TNM values (also a T category without its "p"), sides and
        organs."""
        found: list[tuple[int, str, int]] = []
        for match in _scan(self._pattern, scope):
            term = self.vocabulary.lookup(match.group(0))
            if term is not None:
                state = polarity(scope, match.start(), match.end())
                found.append((match.start(), _POLARITY_MARK[state] + term.canonical, match.end()))
        return found + _fixed_mentions(scope)

    @staticmethod
    def _primary_site(scope: str, line: tuple[int, int] | None) -> str | None:
        """The organ of the tumour: the organs named on the line of the principal diagnosis up
        to it (its part's heading: "uterus, cervix, biopsy: ..." -> "cervix and uterus"), else
        the organ named nearest before it (its part's heading on a line of its own, wherever the
        part stands in the report), else the first organ of the text; a lymph node only when
        nothing else is named."""
        if line is not None:
            named = {_ORGANS[m.group(1)] for m in _ORGAN_RE.finditer(scope, line[0], line[1])}
            named.discard("lymph node")
            if named:
                return " and ".join(sorted(named))
            before = [m for m in _ORGAN_RE.finditer(scope, max(0, line[0] - 300), line[0])
                      if _ORGANS[m.group(1)] != "lymph node"]
            if before:  # every organ of the nearest line before that names one
                heading = scope.rfind("\n", 0, before[-1].start()) + 1
                return " and ".join(sorted({_ORGANS[m.group(1)] for m in before if m.start() >= heading}))
        named_all = [_ORGANS[m.group(1)] for m in _scan(_ORGAN_RE, scope)]
        return next((o for o in named_all if o != "lymph node"), named_all[0] if named_all else None)

    @staticmethod
    def _first_word(pattern: Any, text: str) -> str | None:
        match = _first_affirmed(text, pattern)
        return match.group(1) if match else None

    @staticmethod
    def _organ(phrase: str) -> str | None:
        match = _ORGAN_RE.search(phrase)
        return _ORGANS[match.group(1)] if match else None

    @staticmethod
    def _specimen(phrase: str) -> str | None:
        flat = _specimen_words(" ".join(re.sub(r"[^a-z0-9 ]+", " ", phrase).split()))
        if flat in _SPECIMENS:
            return _SPECIMENS[flat]
        return flat or None

    @staticmethod
    def _diagnosis_section(body: str) -> str:
        """For long free-text reports (TCGA), the final-diagnosis section; otherwise all of it."""
        if len(body) < _SHORT_REPORT_CHARS:
            return body
        start = _DX_HEADER_RE.search(body)
        if start is None:
            return body
        end = _DX_END_RE.search(body, start.end())
        stop = end.start() if end is not None else len(body)
        section = body[start.end():min(stop, start.end() + _DX_SECTION_MAX)]
        return section if len(section.strip()) >= _DX_SECTION_MIN else body

    # ------------------------------------------------------------------ diagnosis hierarchy

    def _candidates(self, scope: str, doubts: dict[str, str], mentions: list[tuple[int, int]] | None = None
                    ) -> list[_Candidate]:
        """The affirmed vocabulary findings of `scope`; `mentions` collects the span of every
        term, affirmed or not."""
        found: list[_Candidate] = []
        for match in _scan(self._pattern, scope):
            term = self.vocabulary.lookup(match.group(0))
            if term is None:
                continue
            if _in_structured_item(scope, match.start(), match.end()):
                continue
            if mentions is not None:
                mentions.append(match.span())
            if term.canonical != NEGATIVE_FOR_MALIGNANCY:
                state = polarity(scope, match.start(), match.end())
                if state == UNCERTAIN:
                    doubts.setdefault("diagnosis", term.canonical)
                if state != AFFIRMED:
                    continue
            found.append(self._candidate(scope, match.start(), match.end(), term))
        return found

    @staticmethod
    def _candidate(scope: str, start: int, end: int, term: Term, unread: bool = False) -> _Candidate:
        before = scope[max(0, start - 40):start]
        after = scope[end:end + 80]
        metastatic = term.canonical.startswith("metastatic") or bool(
            _METASTATIC_BEFORE_RE.search(before) or _METASTATIC_AFTER_RE.match(after[:40])
        )
        origin = None
        if term.category == MALIGNANT:
            match = _ORIGIN_AFTER_RE.match(after)
            if match is not None:
                origin = _ORIGIN_SITES[next(g for g in match.groups() if g)]
            else:
                match = _ORIGIN_BEFORE_RE.search(before)
                if match is not None:
                    origin = _ORIGIN_SITES[match.group(1)]
        return _Candidate(start, end, term, metastatic, origin, unread)

    def _unread_findings(self, scope: str, candidates: list[_Candidate], mentions: list[tuple[int, int]]
                         ) -> list[_Candidate]:
        """Diagnosis statements that no vocabulary term reads, kept as the report's own phrase: a
        finding the extractor cannot name must still be found in the prediction. A statement is
        a line, or a sentence or ";"-clause of one; statements a field rule reads (grades,
        notes on the specimen, margins, ...) are not findings. In a short (REG-like) report every
        unread statement counts; in a long one only the first, and only when no term was read at
        all (a long report's unread sentences are mostly not diagnoses)."""
        short = len(scope) < _SHORT_REPORT_CHARS
        if candidates and not short:
            return []
        found: list[_Candidate] = []
        # A negative statement ("No evidence of malignancy.") is a statement of its own, even
        # when a line wrap has joined it to the finding before it: it is cut out of the text.
        negative = [(a, b) for a, b in mentions
                    if self.vocabulary.lookup(scope[a:b]).canonical == NEGATIVE_FOR_MALIGNANCY]
        unread_text = scope
        for start, end in negative:
            unread_text = unread_text[:start] + "\n" * (end - start) + unread_text[end:]
        read = [m for m, _ in mentions if unread_text[m] != "\n"]
        for start, end in _statements(unread_text):
            if any(start <= m < end for m in read):
                continue  # read by the vocabulary (affirmed, negated or in doubt)
            statement = unread_text[start:end]
            if STRUCTURED_ITEM_RE.match(statement) or _FIELD_STATEMENT_RE.search(statement):
                continue  # read by a field rule
            phrase = next((p for p in diagnosis_phrases(statement) if not _NEG_PRE_RE.match(p)), None)
            if phrase is None or _UNCERTAIN_PRE_RE.search(phrase) or _UNCERTAIN_POST_RE.search(phrase) \
                    or _ORGAN_OR_PROCEDURE_RE.fullmatch(phrase):
                continue
            where = scope.find(phrase, start)
            where = start if where < 0 else where
            if polarity(scope, where, where + len(phrase)) != AFFIRMED:
                continue
            found.append(self._candidate(scope, where, where + len(phrase), canonical_phrase(phrase), unread=True))
            if not short:
                break
        return found

    def _diagnosis(self, scope: str, body: str, facts: dict[str, str], doubts: dict[str, str],
                   unread: list[str], is_report: bool = False, specific_first: bool = False) -> None:
        mentions: list[tuple[int, int]] = []
        candidates = self._candidates(scope, doubts, mentions)
        if not candidates and scope is not body:
            scope, mentions = body, []
            candidates = self._candidates(body, doubts, mentions)
        if is_report or "organ_site" in facts or "specimen_type" in facts:  # a report, not any text
            extra = self._unread_findings(scope, candidates, mentions)
            unread.extend(c.term.canonical for c in extra)
            candidates += extra
        if not candidates:
            return
        doubts.pop("diagnosis", None)
        # A negative statement ("no evidence of malignancy") next to a finding says nothing more
        # than the finding: a benign diagnosis implies it, a malignancy elsewhere is not denied by it.
        if any(c.term.canonical != NEGATIVE_FOR_MALIGNANCY for c in candidates):
            candidates = [c for c in candidates if c.term.canonical != NEGATIVE_FOR_MALIGNANCY]
        # in a long report a specific name ("squamous cell carcinoma") leads a bare "carcinoma"
        if specific_first:  # equal findings in two parts: the choice must not depend on the parts' order
            principal = min(candidates, key=lambda c: (c.specific_key(),
                                                       scope[scope.rfind("\n", 0, c.start) + 1:c.start]))
        else:
            principal = min(candidates, key=_Candidate.principal_key)
        term = principal.term
        facts["_principal_start"] = str(principal.start)
        facts["diagnosis"] = FINDING_SEPARATOR.join(sorted({c.finding for c in candidates}))
        facts["benign_vs_malignant"] = term.category
        if principal.origin:
            facts["tumor_origin"] = principal.origin
        histologic = term.histologic_type
        favor = _FAVOR_RE.match(scope, principal.end)
        if favor is not None:
            favored = next((c for c in candidates if c.start == favor.end()), None)
            if favored is not None and favored.term.histologic_type:
                histologic = favored.term.histologic_type
        if histologic:
            facts["histologic_type"] = histologic
        if term.category == MALIGNANT:
            facts["primary_vs_metastatic"] = "metastatic" if principal.metastatic else "primary"
        if term.category != BENIGN or histologic:
            for pattern, lineage in _LINEAGE_RULES:
                if pattern.search(histologic or term.canonical):
                    facts["lineage"] = lineage
                    break
        facts["_principal_in_situ"] = "1" if _IN_SITU_RE.search(term.canonical) else ""
        facts["_principal_epithelial_malignant"] = (
            "1" if term.category == MALIGNANT and facts.get("lineage") in ("epithelial", "neuroendocrine") else ""
        )

    # ------------------------------------------------------------------ behaviour

    def _behaviour(self, scope: str, facts: dict[str, str]) -> None:
        principal_in_situ = bool(facts.pop("_principal_in_situ", ""))
        epithelial_malignant = bool(facts.pop("_principal_epithelial_malignant", ""))

        def not_specific(match: re.Match[str]) -> bool:
            return bool(_SPECIFIC_INVASION_PRE_RE.search(scope[max(0, match.start() - 30):match.start()]))

        invasion, _ = _presence(scope, _INVASION_RE, skip=not_specific)
        non_invasive = _first_affirmed(scope, _NON_INVASIVE_RE) is not None
        in_situ = self._in_situ_kind(scope)
        if in_situ is not None:
            facts["in_situ_component"] = in_situ
        cis, _ = _presence(scope, _CIS_RE)
        if cis is not None:
            facts["carcinoma_in_situ"] = cis
        itgcn, _ = _presence(scope, _ITGCN_RE)
        if itgcn is not None:
            facts["intratubular_germ_cell_neoplasia"] = itgcn

        invasive = invasion == PRESENT or (epithelial_malignant and not principal_in_situ and not non_invasive)
        if invasive:
            facts["in_situ_vs_invasive"] = "invasive"
            facts["invasion_status"] = PRESENT
        elif non_invasive or principal_in_situ or invasion == ABSENT:
            if non_invasive or principal_in_situ:
                facts["in_situ_vs_invasive"] = "non invasive"
            facts["invasion_status"] = ABSENT

        depth = self._depth(scope)
        if depth is None and non_invasive and not invasive:
            depth = "non invasive"
        if depth is not None:
            facts["invasion_depth"] = depth

    @staticmethod
    def _in_situ_kind(scope: str) -> str | None:
        """Which in-situ lesion the report asserts (DCIS, LCIS, CIS, AIS, SIL, ...), 'absent' when
        one is negated; HSIL and LSIL are both squamous intraepithelial lesions here, their grade
        is the dysplasia grade."""
        negated = False
        kinds: list[tuple[int, str]] = []
        for match in _scan(_IN_SITU_RE, scope):
            state = polarity(scope, match.start(), match.end())
            if state == NEGATED:
                negated = True
            if state != AFFIRMED:
                continue
            mention = match.group(0).strip()
            rank, kind = next(((i, k) for i, (pattern, k) in enumerate(_IN_SITU_KINDS) if pattern.search(mention)),
                              (len(_IN_SITU_KINDS), mention))
            kinds.append((rank, kind))
        if kinds:  # the first of `_IN_SITU_KINDS` the report asserts, whatever the order of its findings
            return min(kinds)[1]
        return ABSENT if negated else None

    @staticmethod
    def _depth(scope: str) -> str | None:
        deepest: tuple[int, str] | None = None
        ranks = ORDINAL_SCALES["invasion_depth"][0]
        for pattern, value in _DEPTH_RULES:
            if _first_affirmed(scope, pattern) is not None and (deepest is None or ranks[value] > deepest[0]):
                deepest = (ranks[value], value)
        return deepest[1] if deepest else None

    # ------------------------------------------------------------------ grade / aggressiveness

    def _grades(self, scope: str, facts: dict[str, str]) -> None:
        grade = self._tumor_grade(scope)
        if grade is not None:
            facts["tumor_grade"] = grade
        differentiation = self._differentiation(scope)
        if differentiation is not None:
            facts["differentiation"] = differentiation
        gleason = self._gleason(scope)
        if gleason is not None:
            facts["gleason_score"] = gleason
        match = _first_affirmed(scope, _GRADE_GROUP_RE)
        if match is not None:
            value = roman_or_int(match.group(1))
            if value is not None and 1 <= value <= 5:
                facts["grade_group"] = str(value)
        nuclear = self._nuclear_grade(scope)
        if nuclear is not None:
            facts["nuclear_grade"] = nuclear
        match = _first_affirmed(scope, _MITOSES_SCORE_RE)
        if match is not None:
            facts["mitotic_score"] = str(int(match.group(1)))
        else:
            match = _first_affirmed(scope, _MITOSES_COUNT_RE)
            if match is not None:
                facts["mitotic_score"] = f"{int(match.group(1))} per {int(match.group(2))} hpf"
        match = _first_affirmed(scope, _TUBULE_RE)
        if match is not None:
            facts["tubule_score"] = match.group(1)

    @staticmethod
    def _tumor_grade(scope: str) -> str | None:
        """The worst affirmed tumour grade, so that the order of a report's findings does not
        matter: a number (grade II, WHO grade 2) before a tier (high grade) before G1-4."""
        numbers = []
        for match in _scan(_GRADE_NUMBER_RE, scope):
            qualifier = (match.group(1) or "").strip()
            if qualifier in ("nuclear", "nucleolar", "gleason"):
                continue
            if polarity(scope, match.start(), match.end()) != AFFIRMED:
                continue
            value = roman_or_int(match.group(2))
            if value is not None:
                numbers.append(value)
        if numbers:
            return str(max(numbers))
        tiers = [m.group(1) or m.group(2) for m in _scan(_GRADE_TIER_RE, scope)
                 if polarity(scope, m.start(), m.end()) == AFFIRMED]
        if tiers:
            return max(tiers, key=_TIER_RANK.__getitem__)
        levels = [int(m.group(1)) for m in _scan(_GRADE_G_RE, scope)
                  if polarity(scope, m.start(), m.end()) == AFFIRMED]
        return str(max(levels)) if levels else None

    @staticmethod
    def _differentiation(scope: str) -> str | None:
        worst: str | None = None
        for match in _scan(_DIFFERENTIATION_RE, scope):
            if polarity(scope, match.start(), match.end()) != AFFIRMED:
                continue
            words = [w for w in match.groups() if w]
            if not words:  # the bare word "undifferentiated"
                words = ["undifferentiated"]
            for word in words:
                value = DIFFERENTIATION.get(word)
                if value and (worst is None or DIFFERENTIATION_RANK[value] > DIFFERENTIATION_RANK[worst]):
                    worst = value
        return worst

    @staticmethod
    def _gleason(scope: str) -> str | None:
        match = _first_affirmed(scope, _GLEASON_TOTAL_PARTS_RE)
        if match is not None:
            primary, secondary = int(match.group(2)), int(match.group(3))
            return f"{primary}+{secondary}={primary + secondary}"
        match = _first_affirmed(scope, _GLEASON_PARTS_RE)
        if match is not None:
            primary, secondary = int(match.group(1)), int(match.group(2))
            return f"{primary}+{secondary}={primary + secondary}"
        match = _first_affirmed(scope, _GLEASON_TOTAL_RE)
        if match is not None and 2 <= int(match.group(1)) <= 10:
            return str(int(match.group(1)))
        match = _first_affirmed(scope, _GLEASON_PRIMARY_SECONDARY_RE)
        if match is not None:
            primary, secondary = int(match.group(1)), int(match.group(2))
            return f"{primary}+{secondary}={primary + secondary}"
        return None

    @staticmethod
    def _nuclear_grade(scope: str) -> str | None:
        values = []
        for match in _scan(_NUCLEAR_GRADE_RE, scope):  # the worst, whatever the order of findings
            if polarity(scope, match.start(), match.end()) != AFFIRMED:
                continue
            token = match.group(1) or match.group(2)
            value = int(NUCLEAR_GRADE_WORDS[token]) if token in NUCLEAR_GRADE_WORDS else roman_or_int(token)
            if value is not None:
                values.append(value)
        if values:
            return str(max(values))
        match = _first_affirmed(scope, _FUHRMAN_RE)
        if match is not None:
            value = roman_or_int(match.group(1) or match.group(2))
            return str(value) if value is not None else None
        return None

    # ------------------------------------------------------------------ invasion, spread

    def _invasion(self, scope: str, facts: dict[str, str]) -> None:
        for name, pattern in (("lymphovascular_invasion", _LVI_RE), ("perineural_invasion", _PNI_RE),
                              ("extraprostatic_extension", _EPE_RE), ("capsular_invasion", _CAPSULAR_RE),
                              ("organ_specific_invasion", _ORGAN_INVASION_RE)):
            state, _ = _presence(scope, pattern)
            if state is not None:
                facts[name] = state
        status = self._muscle_proper(scope)
        if status is not None:
            facts["muscle_proper_status"] = status

    @staticmethod
    def _muscle_proper(scope: str) -> str | None:
        for match in _scan(_MUSCLE_PROPER_RE, scope):
            lead, state = match.group(1), match.group(2)
            if lead is not None:
                if lead in ("includes", "include", "contains", "with"):
                    if polarity(scope, match.start(), match.end()) == NEGATED:
                        return "not included"
                    return "included"
                return "not included"
            if state in ("present", "identified", "included"):
                return "included"
            return "not included"
        return None

    def _spread(self, scope: str, facts: dict[str, str]) -> None:
        state, _ = _presence(scope, _METASTASIS_RE)
        if state is not None:
            facts["metastatic_involvement"] = state
        nodes = self._lymph_nodes(scope)
        if nodes is not None:
            facts["lymph_node_involvement"] = nodes
        margin = self._margins(scope)
        if margin is not None:
            facts["margin_status"] = margin
        if _first_affirmed(scope, _FOCAL_MULTI_RE) is not None:
            facts["tumor_focality"] = facts["multifocality"] = "multifocal"
            facts["multifocal_involvement"] = PRESENT
        elif _first_affirmed(scope, _FOCAL_UNI_RE) is not None:
            facts["tumor_focality"] = facts["multifocality"] = "unifocal"
            facts["multifocal_involvement"] = ABSENT
        if _first_affirmed(scope, _BILATERAL_RE) is not None:
            facts["bilateral_involvement"] = PRESENT
        elif _first_affirmed(scope, _UNILATERAL_RE) is not None:
            facts["bilateral_involvement"] = ABSENT

    @staticmethod
    def _lymph_nodes(scope: str) -> str | None:
        positive = negative = False
        for match in _scan(_LN_RE, scope):
            # the clause around the mention: "lymph nodes: negative (0/12)", "2 of 10 lymph nodes involved"
            lo = max(scope.rfind(".", 0, match.start()), scope.rfind(";", 0, match.start()),
                     scope.rfind("\n", 0, match.start()), match.start() - 80)
            hi_candidates = [i for i in (scope.find(".", match.end()), scope.find(";", match.end()),
                                         scope.find("\n", match.end())) if i >= 0]
            hi = min([*hi_candidates, match.end() + 120])
            clause = scope[lo + 1:hi]
            ratio = _LN_RATIO_RE.search(clause)
            if ratio is not None:
                involved = int(ratio.group(1) or ratio.group(3))
                if involved > 0:
                    positive = True
                else:
                    negative = True
                continue
            after = scope[match.end():hi]
            if _LN_NEGATIVE_RE.search(after) or polarity(scope, match.start(), match.end()) == NEGATED:
                negative = True
            elif _LN_POSITIVE_RE.search(after):
                positive = True
        stage = _PN_STAGE_RE.search(scope)
        if stage is not None and stage.group(1) != "x":
            if stage.group(1) == "0":
                negative = True
            else:
                positive = True
        if positive:
            return PRESENT
        if negative:
            return ABSENT
        return None

    @staticmethod
    def _margins(scope: str) -> str | None:
        positive, negative = _margin_counts(scope)
        if positive:
            return "positive"
        if negative:
            return "negative"
        return None

    # ------------------------------------------------------------------ premalignant change

    def _premalignant(self, scope: str, facts: dict[str, str], doubts: dict[str, str]) -> None:
        worst: str | None = None
        order = {"negative": 0, "indefinite": 1, "low": 2, "high": 3}
        for match in _scan(_DYSPLASIA_RE, scope):
            word = next((g for g in match.groups() if g), "")
            if word == "dysplasia":  # "no dysplasia"
                value = "negative"
            else:
                value = {"mild": "low", "moderate": "low", "severe": "high", "low grade": "low",
                         "high grade": "high"}.get(word, word)
            if value not in ("negative", "indefinite"):
                state = polarity(scope, match.start(), match.end())
                if state == NEGATED:
                    value = "negative"
                elif state == UNCERTAIN:
                    doubts["dysplasia_grade"] = value
                    continue
            if worst is None or order[value] > order[worst]:
                worst = value
        if worst == "indefinite":
            doubts["dysplasia_grade"] = "indefinite"
        elif worst is not None:
            facts["dysplasia_grade"] = worst
        state, doubt = _presence(scope, _ATYPIA_RE)
        if state is not None:
            facts["epithelial_atypia"] = state
        elif doubt:
            doubts["epithelial_atypia"] = PRESENT

    # ------------------------------------------------------------------ associated morphology

    def _morphology(self, scope: str, facts: dict[str, str], doubts: dict[str, str]) -> None:
        for name, pattern in (("necrosis", _NECROSIS_RE), ("inflammation_status", _INFLAMMATION_RE),
                              ("calcification", _CALCIFICATION_RE), ("psammoma_bodies", _PSAMMOMA_RE),
                              ("hemorrhage", _HEMORRHAGE_RE), ("papillary_features", _PAPILLARY_RE),
                              ("cystic_change", _CYSTIC_RE), ("atrophy", _ATROPHY_RE),
                              ("intestinal_metaplasia", _IM_RE)):
            state, doubt = _presence(scope, pattern)
            if state is not None:
                facts[name] = state
            elif doubt:
                doubts[name] = PRESENT
        if facts.get("inflammation_status") == PRESENT:
            if _first_affirmed(scope, _ACTIVE_RE) is not None:
                facts["inflammation_activity"] = "active"
            elif _first_affirmed(scope, _INACTIVE_RE) is not None:
                facts["inflammation_activity"] = "inactive"

    # ------------------------------------------------------------------ measurements

    def _measurements(self, scope: str, facts: dict[str, str]) -> None:
        for pattern in _TUMOR_SIZE_RES:
            match = _first_affirmed(scope, pattern)
            if match is None:
                continue
            numbers = [float(g) for g in match.groups()[:-1] if g]
            if numbers:
                largest = max(numbers) / (10.0 if match.group(match.lastindex or 0) == "mm" else 1.0)
                facts["tumor_size"] = f"{format_number(largest)} cm"
                break
        for pattern in _TUMOR_VOLUME_RES:
            match = _first_affirmed(scope, pattern)
            if match is not None and float(match.group(1)) <= 100:
                facts["tumor_volume"] = f"{format_number(float(match.group(1)))}%"
                break
        match = _first_affirmed(scope, _TUMOR_EXTENT_RES[0])
        if match is not None:
            value, unit = float(match.group(1)), match.group(2)
            if unit == "%":
                facts["tumor_extent"] = f"{format_number(value)}%"
            else:
                facts["tumor_extent"] = f"{format_number(value / 10.0 if unit == 'mm' else value)} cm"
        else:
            match = _first_affirmed(scope, _TUMOR_EXTENT_RES[1])
            if match is not None:
                involved, total = (match.group(1), match.group(2)) if match.group(1) else (match.group(3),
                                                                                             match.group(4))
                facts["tumor_extent"] = f"{int(involved)}/{int(total)} cores"

    # ------------------------------------------------------------------ GI mucosa, polyps

    def _gastrointestinal(self, scope: str, facts: dict[str, str], doubts: dict[str, str]) -> None:
        match = _first_affirmed(scope, _METAPLASIA_TYPE_RE)
        if match is not None:
            facts["metaplasia_type"] = match.group(1)
        hp = self._hpylori(scope)
        if hp is not None:
            facts["hpylori_status"] = hp
        match = _first_affirmed(scope, _GASTRITIS_RE)
        if match is not None:
            kind = (match.group(1) or match.group(2) or "").replace("active chronic", "chronic active")
            kind = kind.replace("non specific", "nonspecific")
            facts["gastritis_type"] = "reactive" if kind in ("chemical", "reactive") else kind
        for name, pattern in (("olga_stage", _OLGA_RE), ("olgim_stage", _OLGIM_RE)):
            match = _first_affirmed(scope, pattern)
            if match is not None:
                token = match.group(1)
                value = 0 if token == "0" else roman_or_int(token)
                if value is not None:
                    facts[name] = str(value)
        match = _first_affirmed(scope, _ADENOMA_RE)
        if match is not None:
            facts["adenoma_type"] = match.group(1).replace("tubulo villous", "tubulovillous")
        match = _first_affirmed(scope, _POLYP_RE)
        if match is not None:
            facts["polyp_type"] = match.group(1)
        elif "adenoma_type" in facts:
            facts["polyp_type"] = "sessile serrated" if "serrated" in facts["adenoma_type"] else "adenomatous"
        state, doubt = _presence(scope, _SERRATED_RE)
        if state is not None:
            facts["serrated_lesion"] = state
        elif doubt:
            doubts["serrated_lesion"] = PRESENT

    @staticmethod
    def _hpylori(scope: str) -> str | None:
        negative = False
        for match in _scan(_HPYLORI_RE, scope):
            value = _HPYLORI_VALUE_RE.match(scope, match.end())
            if value is not None:
                word = value.group(1)
                if word in ("positive", "present", "identified", "seen", "+"):
                    return "positive"
                negative = True
                continue
            state = polarity(scope, match.start(), match.end())
            if state == AFFIRMED:
                return "positive"
            if state == NEGATED:
                negative = True
        return "negative" if negative else None


__all__ = ["ClinicalExtractor", "Extraction", "EXTRACTED_FIELDS", "polarity", "AFFIRMED", "NEGATED", "UNCERTAIN"]
