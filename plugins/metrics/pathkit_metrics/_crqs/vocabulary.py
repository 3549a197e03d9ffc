"""Diagnosis/histology vocabulary for CRQS: curated terms, learning from train reports, save/load with sha256."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_metrics._crqs.lazy_pattern import lazy
from pathkit_metrics._crqs.normalise import STRUCTURED_ITEM_RE, normalise_phrase, prepare_text, trie_pattern

VOCABULARY_FORMAT = "pathkit-crqs-vocabulary"
VOCABULARY_VERSION = 1

MALIGNANT = "malignant"
PREMALIGNANT = "premalignant"
BENIGN = "benign"
CATEGORY_RANK = {MALIGNANT: 3, PREMALIGNANT: 2, BENIGN: 1}

NEGATIVE_FOR_MALIGNANCY = "negative for malignancy"

# Curated terms: (canonical diagnosis, category, neoplastic, surface forms besides the canonical).
# Surface forms are written as the matcher sees text: lower case, abbreviations expanded
# (normalise.py), hyphens as spaces. "neoplastic" decides whether the term has a histologic type.
_M, _P, _B = MALIGNANT, PREMALIGNANT, BENIGN
_CURATED: tuple[tuple[str, str, bool, tuple[str, ...]], ...] = (
    # breast
    ("invasive carcinoma of no special type", _M, True, (
        "invasive ductal carcinoma", "infiltrating ductal carcinoma", "invasive carcinoma no special type",
        "invasive breast carcinoma of no special type", "invasive ductal carcinoma of no special type",
        "invasive carcinoma of no special type nos", "invasive ductal carcinoma nos",
        "invasive mammary carcinoma of no special type", "infiltrating duct carcinoma",
        "invasive carcinoma of the breast of no special type", "invasive ductal carcinoma no special type")),
    ("invasive lobular carcinoma", _M, True, ("infiltrating lobular carcinoma",)),
    ("mucinous carcinoma", _M, True, ("colloid carcinoma", "mucinous adenocarcinoma", "mucinous cystadenocarcinoma")),
    ("ductal carcinoma in situ", _M, True, ("intraductal carcinoma", "ductal carcinoma in situ nos")),
    ("lobular carcinoma in situ", _P, True, ()),
    ("atypical ductal hyperplasia", _P, True, ()),
    ("atypical lobular hyperplasia", _P, True, ()),
    ("flat epithelial atypia", _P, True, ()),
    ("usual ductal hyperplasia", _B, False, ()),
    ("fibroadenoma", _B, True, ()),
    ("phyllodes tumor", _B, True, ()),
    ("intraductal papilloma", _B, True, ()),
    ("papillary neoplasm", _P, True, ()),
    ("fibrocystic change", _B, False, ("fibrocystic changes", "fibrocystic disease")),
    ("sclerosing adenosis", _B, False, ()),
    ("columnar cell lesion", _B, False, ("columnar cell change",)),
    ("microcalcification", _B, False, ()),
    # benign breast changes reported as findings of their own (WHO breast tumours, 5th ed.,
    # "benign epithelial proliferations" and "fibroepithelial/stromal" chapters)
    ("pseudoangiomatous stromal hyperplasia", _B, False, ("pash",)),
    ("apocrine metaplasia", _B, False, ("apocrine change", "apocrine metaplastic change")),
    ("apocrine adenosis", _B, False, ()),
    ("duct ectasia", _B, False, ("ductal ectasia", "mammary duct ectasia")),
    ("fibroadenomatoid change", _B, False, ("fibroadenomatoid changes", "fibroadenomatous change",
                                            "fibroadenomatoid hyperplasia", "fibroadenomatoid nodule")),
    ("columnar cell hyperplasia", _B, False, ()),
    ("adenosis", _B, False, ("blunt duct adenosis",)),
    ("radial scar", _B, False, ("complex sclerosing lesion",)),
    ("fat necrosis", _B, False, ()),
    ("stromal fibrosis", _B, False, ("fibrosis of stroma",)),
    ("mucocele like lesion", _B, False, ()),
    ("fibroepithelial lesion", _B, True, ("fibroepithelial tumor", "fibroepithelial neoplasm")),
    ("foreign body reaction", _B, False, ("foreign body type reaction", "foreign body giant cell reaction",
                                          "foreign body granuloma", "foreign body type granulomatous reaction")),
    ("granulomatous mastitis", _B, False, ()),
    ("gynecomastia", _B, False, ()),
    # cervix
    ("high grade squamous intraepithelial lesion", _P, True, (
        "cin 2", "cin 3", "high grade cervical intraepithelial neoplasia", "severe squamous dysplasia",
        "squamous intraepithelial lesion high grade", "high grade squamous intra epithelial lesion")),
    ("low grade squamous intraepithelial lesion", _P, True, (
        "cin 1", "low grade cervical intraepithelial neoplasia",
        "squamous intraepithelial lesion low grade", "mild squamous dysplasia",
        "low grade squamous intra epithelial lesion")),
    ("adenocarcinoma in situ", _M, True, ("endocervical adenocarcinoma in situ",)),
    ("negative for intraepithelial lesion or malignancy", _B, False, ()),
    ("chronic cervicitis", _B, False, ("chronic nonspecific cervicitis",)),
    ("endocervical polyp", _B, False, ()),
    # lung
    ("adenocarcinoma", _M, True, ("adenocarcinoma nos",)),
    ("squamous cell carcinoma", _M, True, ("squamous cell carcinoma nos", "epidermoid carcinoma", "squamous carcinoma",
                                           "squamous cell cancer")),
    ("small cell carcinoma", _M, True, ("small cell lung carcinoma", "small cell neuroendocrine carcinoma",
                                         "oat cell carcinoma")),
    ("non small cell carcinoma", _M, True, ("non small cell lung carcinoma", "non small cell lung cancer")),
    ("large cell neuroendocrine carcinoma", _M, True, ()),
    ("neuroendocrine tumor", _M, True, (
        "carcinoid tumor", "carcinoid", "carcinoid neuroendocrine tumor", "carcinoid neuroendocrine tumor nos",
        "well differentiated neuroendocrine tumor", "neuroendocrine tumor nos")),
    ("neuroendocrine carcinoma", _M, True, ("poorly differentiated neuroendocrine carcinoma",)),
    ("chronic granulomatous inflammation", _B, False, ("granulomatous inflammation",)),
    # GI
    ("tubular adenoma", _P, True, ()),
    ("tubulovillous adenoma", _P, True, ("tubulo villous adenoma",)),
    ("villous adenoma", _P, True, ()),
    ("sessile serrated lesion", _P, True, ("sessile serrated adenoma", "sessile serrated polyp",
                                           "sessile serrated adenoma polyp", "serrated serrated lesion")),
    ("traditional serrated adenoma", _P, True, ()),
    ("hyperplastic polyp", _B, False, ()),
    ("inflammatory polyp", _B, False, ()),
    ("fundic gland polyp", _B, False, ()),
    ("chronic gastritis", _B, False, ("chronic nonspecific gastritis", "chronic superficial gastritis",
                                      "chronic inactive gastritis")),
    ("chronic active gastritis", _B, False, ("active chronic gastritis",
                                             "chronic active helicobacter pylori gastritis")),
    ("chronic atrophic gastritis", _B, False, ("atrophic gastritis",)),
    ("chronic active colitis", _B, False, ("active chronic colitis",)),
    ("chronic colitis", _B, False, ()),
    ("chronic nonspecific inflammation", _B, False, ("chronic non specific inflammation",
                                                     "chronic inflammation", "nonspecific chronic inflammation")),
    ("intestinal metaplasia", _B, False, ()),
    ("erosion", _B, False, ("mucosal erosion", "erosions")),
    ("ulcer", _B, False, ("ulceration",)),
    ("lymphoid aggregates", _B, False, ("lymphoid aggregate", "lymphoid follicles")),
    ("foveolar epithelial hyperplasia", _B, False, ("foveolar hyperplasia",)),
    ("extranodal marginal zone b cell lymphoma of mucosa associated lymphoid tissue", _M, True, (
        "extranodal marginal zone b cell lymphoma of malt type", "malt lymphoma",
        "extranodal marginal zone lymphoma of mucosa associated lymphoid tissue",
        "marginal zone b cell lymphoma of malt type", "extranodal marginal zone lymphoma of malt type",
        "extranodal marginal zone b cell lymphoma of mucosa associated lymphoid tissue malt lymphoma")),
    ("diffuse large b cell lymphoma", _M, True, ("dlbcl",)),
    ("malignant lymphoma", _M, True, ("lymphoma", "lymphoma nos")),
    ("poorly cohesive carcinoma", _M, True, ("signet ring cell carcinoma", "diffuse type adenocarcinoma")),
    ("gastrointestinal stromal tumor", _M, True, ()),
    ("hepatocellular carcinoma", _M, True, ()),
    ("cholangiocarcinoma", _M, True, ("intrahepatic cholangiocarcinoma",)),
    ("pancreatic ductal adenocarcinoma", _M, True, ("ductal adenocarcinoma of pancreas",)),
    # urinary tract
    ("urothelial carcinoma", _M, True, ("transitional cell carcinoma", "urothelial cell carcinoma")),
    ("invasive urothelial carcinoma", _M, True, ("invasive transitional cell carcinoma",
                                                 "infiltrating urothelial carcinoma")),
    ("non invasive papillary urothelial carcinoma", _M, True, ("noninvasive papillary urothelial carcinoma",
                                                               "papillary urothelial carcinoma non invasive",
                                                               "non invasive papillary transitional cell carcinoma",
                                                               "noninvasive papillary transitional cell carcinoma")),
    ("urothelial carcinoma in situ", _M, True, ("carcinoma in situ of urothelium",
                                                "transitional cell carcinoma in situ")),
    ("carcinoma in situ", _M, True, ()),
    ("clear cell renal cell carcinoma", _M, True, ("renal cell carcinoma clear cell type",
                                                   "conventional renal cell carcinoma",
                                                   "renal cell carcinoma of clear cell type")),
    ("papillary renal cell carcinoma", _M, True, ("renal cell carcinoma papillary type",)),
    ("chromophobe renal cell carcinoma", _M, True, ("renal cell carcinoma chromophobe type",)),
    ("renal cell carcinoma", _M, True, ()),
    # prostate
    ("acinar adenocarcinoma", _M, True, ("prostatic acinar adenocarcinoma", "acinar adenocarcinoma of prostate",
                                         "adenocarcinoma acinar type")),
    ("high grade prostatic intraepithelial neoplasia", _P, True, ("high grade pin",)),
    # gynaecology, other organs (TCGA, HistAI)
    ("high grade serous carcinoma", _M, True, ("serous carcinoma high grade", "high grade serous adenocarcinoma",
                                               "papillary serous carcinoma", "serous papillary carcinoma",
                                               "high grade papillary serous carcinoma",
                                               "papillary serous adenocarcinoma", "serous papillary adenocarcinoma",
                                               "high grade papillary serous adenocarcinoma")),
    ("low grade serous carcinoma", _M, True, ("low grade serous adenocarcinoma",)),
    ("serous carcinoma", _M, True, ("serous adenocarcinoma",)),
    ("endometrioid carcinoma", _M, True, ("endometrioid adenocarcinoma",)),
    ("clear cell carcinoma", _M, True, ("clear cell adenocarcinoma",)),
    ("carcinosarcoma", _M, True, ("malignant mixed mullerian tumor", "malignant mixed mesodermal tumor")),
    ("gliosarcoma", _M, True, ()),
    ("sarcomatoid renal cell carcinoma", _M, True, ()),
    ("collecting duct carcinoma", _M, True, ("collecting duct renal cell carcinoma",)),
    ("fibrolamellar carcinoma", _M, True, ("fibrolamellar hepatocellular carcinoma",)),
    ("ampullary adenocarcinoma", _M, True, ()),
    ("intraductal papillary mucinous neoplasm", _P, True, ("ipmn",)),
    ("papillary thyroid carcinoma", _M, True, ("papillary carcinoma of thyroid", "papillary thyroid cancer")),
    ("follicular carcinoma", _M, True, ()),
    ("glioblastoma", _M, True, ("glioblastoma multiforme", "glioblastoma who grade iv")),
    ("astrocytoma", _M, True, ("diffuse astrocytoma", "anaplastic astrocytoma")),
    ("oligodendroglioma", _M, True, ("anaplastic oligodendroglioma",)),
    ("oligoastrocytoma", _M, True, ()),
    ("glioma", _M, True, ("malignant glioma", "diffuse glioma")),
    ("seminoma", _M, True, ("classic seminoma", "classical seminoma")),
    ("mixed germ cell tumor", _M, True, ()),
    ("melanoma", _M, True, ("malignant melanoma",)),
    ("sarcoma", _M, True, ()),
    ("mesothelioma", _M, True, ("malignant mesothelioma",)),
    ("carcinoma", _M, True, ("carcinoma nos",)),
    ("metastatic carcinoma", _M, True, ()),
    ("metastatic adenocarcinoma", _M, True, ()),
    ("invasive micropapillary carcinoma", _M, True, ()),
    ("invasive cribriform carcinoma", _M, True, ("cribriform carcinoma",)),
    ("tubular carcinoma", _M, True, ()),
    ("metaplastic carcinoma", _M, True, ()),
    ("microinvasive carcinoma", _M, True, ("micro invasive carcinoma",)),
    ("carcinoma with apocrine differentiation", _M, True, ("apocrine carcinoma",)),
    ("mucoepidermoid carcinoma", _M, True, ()),
    ("adenoid cystic carcinoma", _M, True, ()),
    ("adenosquamous carcinoma", _M, True, ()),
    ("pleomorphic carcinoma", _M, True, ()),
    ("malignant neoplasm", _M, True, ("malignant tumor", "malignancy present", "malignancy is present",
                                      "malignancy identified", "malignancy is identified")),
    # a tumour stated as present, without its kind ("tumor present", "tumor identified")
    ("tumor present", _M, True, ("tumor is present", "tumor identified", "tumor is identified", "tumor seen",
                                 "tumor is seen")),
    ("desmoid fibromatosis", _B, True, ("desmoid type fibromatosis",)),
    # skin, soft tissue, other common surgical pathology (HistAI covers many organ systems)
    ("basal cell carcinoma", _M, True, ("basal cell carcinoma nodular type", "nodular basal cell carcinoma",
                                        "superficial basal cell carcinoma", "basalioma")),
    ("squamous cell carcinoma in situ", _M, True, ("bowen disease", "bowen's disease", "squamous carcinoma in situ")),
    ("seborrheic keratosis", _B, True, ()),
    ("actinic keratosis", _P, True, ("solar keratosis",)),
    ("melanocytic nevus", _B, True, ("intradermal nevus", "compound nevus", "junctional nevus", "nevus")),
    ("dermatofibroma", _B, True, ()),
    ("lipoma", _B, True, ()),
    ("leiomyoma", _B, True, ("uterine leiomyoma", "fibroid")),
    ("hemangioma", _B, True, ()),
    ("schwannoma", _B, True, ()),
    ("meningioma", _B, True, ()),
    ("follicular adenoma", _B, True, ()),
    ("nodular hyperplasia", _B, False, ("nodular goiter", "multinodular goiter", "adenomatous goiter")),
    ("lymphocytic thyroiditis", _B, False, ("hashimoto thyroiditis", "hashimoto's thyroiditis",
                                            "chronic lymphocytic thyroiditis")),
    ("benign prostatic hyperplasia", _B, False, ("nodular prostatic hyperplasia", "prostatic hyperplasia")),
    ("endometrial hyperplasia", _P, True, ("atypical endometrial hyperplasia", "endometrial hyperplasia with atypia")),
    ("proliferative endometrium", _B, False, ()),
    ("secretory endometrium", _B, False, ()),
    ("atrophic endometrium", _B, False, ()),
    ("adenomyosis", _B, False, ()),
    ("chronic cholecystitis", _B, False, ()),
    ("acute appendicitis", _B, False, ("acute suppurative appendicitis", "acute phlegmonous appendicitis")),
    ("barrett esophagus", _P, False, ("barrett's esophagus", "barrett mucosa", "columnar lined esophagus")),
    ("reflux esophagitis", _B, False, ()),
    ("chronic active inflammation", _B, False, ("active chronic inflammation",)),
    ("acute inflammation", _B, False, ()),
    ("granulation tissue", _B, False, ()),
    # lymph node, benign and negative diagnoses
    ("reactive lymphoid hyperplasia", _B, False, (
        "reactive lymph node", "reactive lymph node hyperplasia", "reactive lymphadenopathy",
        "reactive follicular hyperplasia", "reactive lymphoid follicular hyperplasia",
        "reactive hyperplasia of lymph node", "reactive changes of lymph node")),
)

# Negative diagnoses: every spelling below means "no tumour / no malignancy found". They are
# matched as terms (so the negation inside them is not a negation of a finding).
_NEG_LEADS = ("no", "no evidence of", "no histologic evidence of", "no residual", "no definite",
              "negative for", "free of", "no evidence of residual")
_NEG_HEADS = ("tumor", "malignancy", "carcinoma", "neoplasm", "malignant cells", "malignant neoplasm",
              "metastatic carcinoma", "metastatic tumor", "metastasis", "residual carcinoma", "invasive carcinoma",
              "malignant tumor", "dysplasia or malignancy")
_NEG_TAILS = ("", " present", " identified", " is identified", " seen", " is seen", " found")


def _negative_forms() -> tuple[str, ...]:
    forms = {"benign", "no significant pathologic abnormality", "no diagnostic abnormality",
             "no pathologic diagnosis", "within normal limits", "no malignancy identified",
             "negative for tumor", "negative for malignancy"}
    for lead in _NEG_LEADS:
        for head in _NEG_HEADS:
            for tail in _NEG_TAILS:
                forms.add(f"{lead} {head}{tail}")
    return tuple(sorted(forms))


NEGATIVE_FORMS = _negative_forms()
_NEGATIVE_SET = frozenset(NEGATIVE_FORMS)

# Category of a learned phrase, from its words (first rule that matches wins).
_NEGATIVE_LEAD_RE = lazy(
    r"^(?:no|negative for|free of)\b.*\b(?:malignancy|malignant|tumor|carcinoma|neoplasm|neoplasia)\b"
)
_MALIGNANT_RE = lazy(
    r"\b(?:carcinoma|adenocarcinoma|sarcoma|lymphoma|leukemia|melanoma|mesothelioma|myeloma|seminoma|"
    r"germinoma|\w*blastoma|glioma|astrocytoma|oligodendroglioma|ependymoma|malignant|malignancy|cancer|"
    r"metastatic|metastasis|neuroendocrine tumor|carcinoid|stromal tumor|pheochromocytoma|paraganglioma|"
    r"yolk sac tumor|choriocarcinoma|germ cell tumor|teratoma)\b"
)
_PREMALIGNANT_RE = lazy(
    r"\b(?:dysplasia|dysplastic|intraepithelial (?:lesion|neoplasia)|(?<!fibro)adenoma|atypical|atypia|"
    r"serrated|barrett|papillary neoplasm|in situ)\b"
)
_NEOPLASM_RE = lazy(
    r"(?<!granul)(?<!hemat)(?<!xanth)oma\b|\btumor\b|\bneoplasm\b|\bneoplasia\b|\blesion\b|\bcarcinoma\b|"
    r"\bfibromatosis\b"
)
_BEHAVIOUR_PREFIX_RE = lazy(
    r"^(?:(?:invasive|infiltrating|non invasive|noninvasive|micro ?invasive|minimally invasive|"
    r"metastatic|recurrent|residual|primary)\s+)+"
)


def categorise(phrase: str) -> str:
    """malignant / premalignant / benign, from the words of a (normalised) diagnosis phrase."""
    if phrase in _NEGATIVE_SET or phrase.startswith(("no ", "negative for ")):
        return BENIGN
    if _MALIGNANT_RE.search(phrase):
        return MALIGNANT
    if _PREMALIGNANT_RE.search(phrase):
        return PREMALIGNANT
    return BENIGN


def histologic_type_of(canonical: str, neoplastic: bool) -> str | None:
    """The tumour type behind a diagnosis: the diagnosis without behaviour/extent prefixes
    ("invasive urothelial carcinoma" -> "urothelial carcinoma"). Non-neoplastic diagnoses
    (gastritis, negative findings) have no histologic type."""
    if not neoplastic:
        return None
    stripped = _BEHAVIOUR_PREFIX_RE.sub("", canonical).strip()
    return stripped or canonical


@dataclass(frozen=True)
class Term:
    """One vocabulary entry: a surface form and what it means."""

    surface: str
    canonical: str
    category: str
    histologic_type: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"surface": self.surface, "canonical": self.canonical, "category": self.category,
                "histologic_type": self.histologic_type}


def _builtin_rows() -> tuple[list[tuple[str, str, str, str | None]], str]:
    """The built-in terms as (surface, canonical, category, histologic type) rows, and the
    prefix-tree pattern of their surfaces: a pure function of this package's code."""
    terms: dict[str, tuple[str, str, str, str | None]] = {}
    for canonical, category, neoplastic, synonyms in _CURATED:
        histologic = histologic_type_of(canonical, neoplastic)
        for surface in (canonical, *synonyms):
            key = normalise_phrase(surface)
            if key and key not in terms:
                terms[key] = (key, canonical, category, histologic)
    for surface in NEGATIVE_FORMS:
        key = normalise_phrase(surface)
        if key and key not in terms:
            terms[key] = (key, NEGATIVE_FOR_MALIGNANCY, BENIGN, None)
    return list(terms.values()), trie_pattern(sorted(terms))


_rows, _BUILTIN_PATTERN = _builtin_rows()
_BUILTIN_TERMS = {row[0]: Term(*row) for row in _rows}
del _rows


def canonical_phrase(phrase: str) -> Term:
    """A learned phrase mapped onto the curated vocabulary where it is a known spelling."""
    key = normalise_phrase(phrase)
    known = _BUILTIN_TERMS.get(key)
    if known is not None:
        return known
    if _NEGATIVE_LEAD_RE.match(key):
        # "no evidence of malignancy or granuloma" is still a negative diagnosis
        return Term(key, NEGATIVE_FOR_MALIGNANCY, BENIGN, None)
    category = categorise(key)
    neoplastic = category != BENIGN or bool(_NEOPLASM_RE.search(key))
    return Term(key, key, category, histologic_type_of(key, neoplastic))


# ----------------------------------------------------------------------------- vocabulary


@dataclass(frozen=True)
class Vocabulary:
    """Surface forms -> diagnosis terms; `sha256` identifies the content (recorded per case)."""

    terms: Mapping[str, Term]
    source: str = "builtin"
    n_reports: int = 0
    min_count: int = 0

    @cached_property
    def sha256(self) -> str:
        payload = json.dumps([self.terms[k].as_dict() for k in sorted(self.terms)],
                             sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        if self.terms is _BUILTIN_TERMS:  # the built-in terms' pattern is kept with them
            return re.compile(_BUILTIN_PATTERN)
        return re.compile(trie_pattern(sorted(self.terms)))

    def lookup(self, surface: str) -> Term | None:
        return self.terms.get(surface)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": VOCABULARY_FORMAT,
            "version": VOCABULARY_VERSION,
            "source": self.source,
            "n_reports": self.n_reports,
            "min_count": self.min_count,
            "sha256": self.sha256,
            "terms": [self.terms[k].as_dict() for k in sorted(self.terms)],
        }

    def save(self, path: str | Path) -> Path:
        """Write the vocabulary as JSON (atomically); its sha256 goes in the file."""
        from pathkit_core.workspace import atomic_write_json

        return atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """Read a saved vocabulary; a file whose content does not match its sha256 is refused."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PathkitError(f"{path}: CRQS vocabulary file not found") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PathkitError(f"{path}: not a readable CRQS vocabulary JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != VOCABULARY_FORMAT:
            raise PathkitError(f"{path}: not a CRQS vocabulary (expected format {VOCABULARY_FORMAT!r})")
        if data.get("version") != VOCABULARY_VERSION:
            raise PathkitError(f"{path}: vocabulary version {data.get('version')!r} is not supported "
                               f"(this pathkit reads version {VOCABULARY_VERSION})")
        terms: dict[str, Term] = {}
        try:
            for entry in data["terms"]:
                term = Term(str(entry["surface"]), str(entry["canonical"]), str(entry["category"]),
                            None if entry.get("histologic_type") is None else str(entry["histologic_type"]))
                if term.category not in CATEGORY_RANK or not term.surface:
                    raise ValueError(f"bad term {entry!r}")
                terms[term.surface] = term
        except (KeyError, TypeError, ValueError) as exc:
            raise PathkitError(f"{path}: malformed vocabulary terms ({exc})") from None
        vocabulary = cls(terms, source=str(data.get("source", "learned")),
                         n_reports=int(data.get("n_reports", 0)), min_count=int(data.get("min_count", 0)))
        if data.get("sha256") != vocabulary.sha256:
            raise PathkitError(
                f"{path}: vocabulary content does not match its sha256 "
                f"(file says {data.get('sha256')!r}, content is {vocabulary.sha256}); it was edited or corrupted"
            )
        return vocabulary


BUILTIN_VOCABULARY = Vocabulary(_BUILTIN_TERMS, source="builtin")

# ----------------------------------------------------------------------------- learning

_PARENTHETICAL_RE = lazy(r"\([^()]{0,300}\)")
# "type: solid", "nuclear grade: high", "tumor volume: 40%": structured lines, read by rule
_KEY_VALUE_RE = lazy(r"\b[a-z' ]{2,40}:[^\n;,]*")
_CHUNK_SPLIT_RE = lazy(
    r"(?:^|\n|\s) *\d{1,2} *[.)] +|\n|;|,|:|\bwith(?! features of)\b|\bwithout\b|\bfavor(?:s|ed|ing)?\b|"
    r"\bconsistent with\b|\bcompatible with\b|\band/or\b"
)
_STRUCTURED_CHUNK_RE = lazy(
    r"^(?:(?:focal|extensive|with|and|or|of|the|a|an|see|note|type|present|absent|included|positive|negative|"
    r"from)\b.*"
    r"|.*\b(?:grade|differentiated|differentiation|involvement|includes?|included|specimen|gleason|volume|"
    r"pattern|score|nos|hpv|associated|independent|focus|foci|margin|margins|cores?|fragments?|"
    r"spp|morphologically|note|component)\b.*"
    # "gastric type", "malt type": a subtype qualifier on its own, unlike "... of no special type"
    r"|(?!.*\bno special type$).*\btype"
    # a morphology word that a field rule reads ("... with necrosis"), not a diagnosis of its own
    r"|(?:focal |extensive |comedo |geographic )?(?:necrosis|hemorrhage|calcification|microcalcification))$"
)
_WORD_RE = lazy(r"[a-z]{2,}")


def candidate_phrases(report: str) -> list[str]:
    """Diagnosis phrases of one report: the diagnosis part (after a REG "organ, specimen;"
    header), split at list items, clauses and "with", less the structured modifiers (grades,
    scores, notes) that extraction reads by rule."""
    text = prepare_text(report)
    header = re.match(r"^[^;\n]{1,120};", text)
    if header and "," in header.group(0):
        text = text[header.end():]
    return diagnosis_phrases(text)


def diagnosis_phrases(text: str) -> list[str]:
    """The diagnosis phrases of already prepared diagnosis text (`candidate_phrases` without
    the preparation and the header)."""
    text = _PARENTHETICAL_RE.sub(" ", text)
    text = STRUCTURED_ITEM_RE.sub("", text)
    text = _KEY_VALUE_RE.sub(" ", text)
    phrases = []
    for chunk in _CHUNK_SPLIT_RE.split(text):
        phrase = normalise_phrase(chunk) if chunk else ""
        if not phrase or any(ch.isdigit() for ch in phrase):
            continue
        words = phrase.split()
        if len(words) > 12 or sum(len(w) for w in _WORD_RE.findall(phrase)) < 6:
            continue
        if _STRUCTURED_CHUNK_RE.match(phrase):
            continue
        phrases.append(phrase)
    return phrases


def read_report_texts(path: str | Path, split: str = "train") -> list[str]:
    """Report texts from a splits file (`{"train": [{"id", "report"}], ...}`, PathBench/REG
    format: the texts of `split`) or from any records file `pathkit score` reads."""
    from pathkit_interop.records import read_records

    path = Path(path)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PathkitError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        data = None  # JSONL or not JSON: let the records reader explain
    if isinstance(data, dict) and isinstance(data.get(split), list):
        texts = [row.get("report") if isinstance(row, dict) else row for row in data[split]]
    elif isinstance(data, dict) and any(isinstance(v, list) for v in data.values()) and split not in data:
        raise PathkitError(f"{path}: no split {split!r} (splits: {', '.join(sorted(data))})")
    else:
        texts = list(read_records(path).values.values())
    bad = [i for i, text in enumerate(texts) if not isinstance(text, str)]
    if bad:
        raise PathkitError(f"{path}: record {bad[0]} has no report text")
    if not texts:
        raise PathkitError(f"{path}: no reports")
    return texts


def build_vocabulary(reports: Sequence[str], *, min_count: int = 2) -> Vocabulary:
    """Learn diagnosis phrases from (train) reports and add them to the built-in terms.

    A phrase seen in at least `min_count` reports becomes a term; a phrase that is a known
    spelling of a curated term maps onto it, so learning never changes what a curated term means.
    """
    if isinstance(reports, str):
        raise PathkitError("build_vocabulary expects a list of report texts, not one string")
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise PathkitError(f"build_vocabulary: min_count must be a positive integer, got {min_count!r}")
    counts: Counter[str] = Counter()
    n_reports = 0
    for index, report in enumerate(reports):
        if not isinstance(report, str):
            raise PathkitError(f"build_vocabulary: report {index} is {type(report).__name__}, not text")
        n_reports += 1
        counts.update(set(candidate_phrases(report)))
    terms = dict(_BUILTIN_TERMS)
    for phrase, count in counts.items():
        if count >= min_count and phrase not in terms:
            terms[phrase] = canonical_phrase(phrase)
    return Vocabulary(terms, source="learned", n_reports=n_reports, min_count=min_count)


__all__ = [
    "Term",
    "Vocabulary",
    "BUILTIN_VOCABULARY",
    "NEGATIVE_FOR_MALIGNANCY",
    "CATEGORY_RANK",
    "build_vocabulary",
    "read_report_texts",
    "candidate_phrases",
    "diagnosis_phrases",
    "canonical_phrase",
    "categorise",
    "histologic_type_of",
]
