"""Report text normalisation for CRQS: spelling, abbreviations, clause breaks, and canonical field values."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from pathkit_metrics._crqs.lazy_pattern import lazy

# Reports longer than this are cut before extraction: every pattern is linear in the text,
# but a multi-megabyte string is not a pathology report and should not stall a scoring run.
MAX_REPORT_CHARS = 1_000_000

ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5}

# Abbreviations that are unambiguous in pathology reports, expanded case-insensitively so that
# "HSIL" and "high-grade squamous intraepithelial lesion" reach the same vocabulary term.
_ABBREVIATIONS_ANY_CASE: dict[str, str] = {
    "hsil": "high grade squamous intraepithelial lesion",
    "lsil": "low grade squamous intraepithelial lesion",
    "dcis": "ductal carcinoma in situ",
    "lcis": "lobular carcinoma in situ",
    "idc": "invasive ductal carcinoma",
    "ilc": "invasive lobular carcinoma",
    "nst": "no special type",
    "nsclc": "non small cell carcinoma",
    "sclc": "small cell carcinoma",
    "hcc": "hepatocellular carcinoma",
    "ccrcc": "clear cell renal cell carcinoma",
    "rcc": "renal cell carcinoma",
    "gbm": "glioblastoma",
    "gist": "gastrointestinal stromal tumor",
    "itgcn": "intratubular germ cell neoplasia",
    "igcnu": "intratubular germ cell neoplasia",
    "gcnis": "intratubular germ cell neoplasia",
    "hgpin": "high grade prostatic intraepithelial neoplasia",
    "lvi": "lymphovascular invasion",
    "pni": "perineural invasion",
    "adh": "atypical ductal hyperplasia",
    "alh": "atypical lobular hyperplasia",
    "fea": "flat epithelial atypia",
    "udh": "usual ductal hyperplasia",
    "hgsc": "high grade serous carcinoma",
    "lgsc": "low grade serous carcinoma",
    "ptc": "papillary thyroid carcinoma",
    "tcc": "transitional cell carcinoma",
    "scc": "squamous cell carcinoma",
    "ssl": "sessile serrated lesion",
    "tsa": "traditional serrated adenoma",
    "nilm": "negative for intraepithelial lesion or malignancy",
}

# Abbreviations that are also ordinary words or other things in lower case: expanded only
# when written in capitals ("NET", not "net weight"; "CIS", not "cis-platin").
_ABBREVIATIONS_UPPER: dict[str, str] = {
    "NET": "neuroendocrine tumor",
    "CIS": "carcinoma in situ",
    "AIS": "adenocarcinoma in situ",
    "SSA": "sessile serrated lesion",
    "SSP": "sessile serrated lesion",
    "EPE": "extraprostatic extension",
    "IM": "intestinal metaplasia",
    "HP": "helicobacter pylori",
    "NOS": "nos",
    "PIN": "prostatic intraepithelial neoplasia",
    "DOI": "depth of invasion",
}

# Spelling variants and frequent typos (the REG reports spell "interstinal metaplasia").
_SPELLING: dict[str, str] = {
    "tumour": "tumor",
    "tumours": "tumors",
    "haemorrhage": "hemorrhage",
    "haemorrhagic": "hemorrhagic",
    "oesophagus": "esophagus",
    "oesophageal": "esophageal",
    "favour": "favor",
    "favoured": "favored",
    "favours": "favors",
    "interstinal": "intestinal",
    "nterstinal": "intestinal",
    "colmnar": "columnar",
    "olonoscopic": "colonoscopic",
    "oherewise": "otherwise",
    "intestinalmetaplasia": "intestinal metaplasia",
    "colour": "color",
    "haematolymphoid": "hematolymphoid",
    "oedema": "edema",
    "anaemia": "anemia",
    "leukaemia": "leukemia",
    "carcinomas": "carcinoma",
    "adenocarcinomas": "adenocarcinoma",
    "gleasons": "gleason's",
    "calcifications": "calcification",
    "microcalcifications": "microcalcification",
}

_UPPER_RE = lazy(r"\b(" + "|".join(sorted(_ABBREVIATIONS_UPPER, key=len, reverse=True)) + r")\b")
_H_PYLORI_RE = lazy(r"\bh\.?\s*pylori\b|\bhelicobacter\s+pylori\b|\bhelicobacter\b(?!\s+pylori)")
_CIN_RE = lazy(r"\bcin\s*[-:]?\s*(iii|ii|i|[123])\b(?:\s*(?:/|-|to)\s*(?:iii|ii|[23]))?")
_SPACES_RE = lazy(r"  +")
# A blank line, or a line break before a list marker (1. / 2) / A. / - / *), ends a clause;
# any other line break is a wrap inside a sentence.
_PARAGRAPH_RE = lazy(r"\n\s*\n\s*|\n\s*(?=(?:\d{1,2}\s*[.)]|[a-z][.)]\s|[-*\u2022]))")
# "Note)" / "Note:" opens a remark of its own (REG: "Note) The specimen includes muscle proper.")
_NOTE_RE = lazy(r"\s*\bnote *[):] *")
_BREAK = "\x1e"  # clause-break sentinel while wraps are joined
_CONTROL_RE = lazy(r"[\x00-\x09\x0b-\x1f\x7f]")
_QUOTES_RE = lazy(r"[\u2018\u2019\u201b\u0060\u00b4]")
_DASHES_RE = lazy(r"[\u2010\u2011\u2012\u2013\u2014\u2015\u2212_-]+")


# A line that is a sub-item of a finding ("- Type: Cribriform, Micropapillary", "- Necrosis:
# Present" in REG; synoptic "Histologic grade: 2"): a known key, then ":". Its words are values
# of the field rules, not findings. Matched on prepared text (the bullet dash is a space there).
STRUCTURED_ITEM_RE = lazy(
    r"(?m)^ *(?:(?:architectural |histologic )?(?:type|subtype|pattern)|architecture|(?:nuclear |histologic )?grade|"
    r"necrosis|mitos[ie]s|mitotic (?:count|score|rate)|tubule formation|tumor volume|tumor size|size|"
    r"margins?|calcifications?|microcalcifications?) *:.*$"
)


# Layout that carries no meaning (long reports): a bullet mark opening a line, and a synoptic item
# written as a heading line with its value alone on the next line ("PERINEURAL INVASION" / "Present"),
# read as "heading: value", the way the item is written inline.
STATUS_VALUES = (
    "yes", "no", "ves", "present", "absent", "identified", "not identified", "none identified", "not present",
    "none", "negative", "positive", "not applicable", "indeterminate", "cannot be assessed", "involved",
    "uninvolved", "not involved", "free", "seen", "not seen",
)
_BULLET_RE = lazy(r"(?m)^[ \t]*[*\u2022\u25aa\u00b7][ \t]+")
_HEADING_VALUE_RE = lazy(
    r"(?im)^([ \t]*[a-z][a-z /(),'-]{2,50}?)[ \t]*\n(?=[ \t]*(?:"
    + "|".join(sorted(STATUS_VALUES, key=len, reverse=True))
    + r"|\d{1,3}(?:\.\d+)? ?(?:cm|mm|%)?|\d{1,2} ?/ ?\d{1,2})[ \t.]*$)")


def plain_layout(text: str) -> str:
    """`text` with bullet marks dropped and heading-over-value items put on one line (above)."""
    if "*" in text or not text.isascii():
        text = _BULLET_RE.sub("", text)
    return _HEADING_VALUE_RE.sub(r"\1: ", text)


def trie_pattern(words: Iterable[str]) -> str:
    """A regex alternation of `words` folded into a prefix tree: one pass over the text finds,
    at each position, the longest word that ends on a word boundary. Built from the sorted
    words, where the words below one tree node are a contiguous run (no tree of dicts)."""
    ordered = sorted(set(words))

    def build(lo: int, hi: int, depth: int) -> str:
        # ordered[lo:hi] share their first `depth` characters; a word ending here sorts first
        final = len(ordered[lo]) == depth
        i = lo + 1 if final else lo
        branches = []
        while i < hi:
            ch = ordered[i][depth]
            j = i + 1
            while j < hi and ordered[j][depth] == ch:
                j += 1
            branches.append((_ESCAPED.get(ch) or re.escape(ch)) + build(i, j, depth + 1))
            i = j
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # greedy optional: the longer word is tried first, the shorter one on backtracking
        return "(?:" + body + ")?" if final else body

    return r"\b" + (build(0, len(ordered), 0) if ordered else "") + r"\b"


_ESCAPED = {chr(code): re.escape(chr(code)) for code in range(128)}


# Lower-case words rewritten in one pass: unambiguous abbreviations, spellings, "nos".
_WORD_REWRITES: dict[str, str] = {**_ABBREVIATIONS_ANY_CASE, **_SPELLING, "not otherwise specified": "nos"}
_WORD_REWRITE_RE = lazy(trie_pattern(_WORD_REWRITES))


def _expand_upper(match: re.Match[str]) -> str:
    return _ABBREVIATIONS_UPPER[match.group(1)]


def _rewrite_word(match: re.Match[str]) -> str:
    return _WORD_REWRITES[match.group(0)]


def _cin(match: re.Match[str]) -> str:
    # CIN 1 is LSIL; CIN 2 and CIN 3 are HSIL (LAST two-tier terminology, WHO 2014/2020).
    grade = match.group(1)
    grade_n = ROMAN.get(grade, 0) or int(grade)
    lesion = "low" if grade_n == 1 else "high"
    return f"cin {grade_n} {lesion} grade squamous intraepithelial lesion"


# A list marker ("1." / "2)") inside a line: a number followed by "." or ")" and a word.
# (The digit opens the pattern and the look-behind follows it, so that the regex engine skips to the
# digits of a long report instead of trying the look-behinds at every position; same matches as
# `(?:(?<=^)|(?<=[\s;:,]))(\d{1,2})[.)]`.)
_INLINE_MARKER_RE = lazy(r"(\d(?<![^\s;:,]\d)\d?)[.)](?= +[a-z(])")
# Where a list can start: the start of the text or of a line, or after ";" / ":" (REG headers).
_LIST_START_RE = lazy(r"(?:^|[\n;:]|\bwith) *$")
# "Invasive carcinoma, NST", "invasive ductal carcinoma (no special type)", "... NST type": the
# WHO name written the short ways (NST is already expanded to "no special type" here).
_NST_RE = lazy(
    r"\b(?:invasive|infiltrating) (?:ductal |breast |mammary )?carcinoma *[,(]? *(?:of )?(?:the )?"
    r"(?:breast |mammary )?(?:of )?no special type(?: type)? *\)?"
)
_COMMA_NOS_RE = lazy(r" *, *(?=nos\b)")
_COMMA_NOS_HINT_RE = lazy(r", *nos\b")  # opens with a literal: a fast test before the sub


def _list_markers(text: str) -> list[int]:
    """Positions of the inline markers of numbered lists ("1. ... 2. ... 3."), so that a list
    written on one line reads like one written line by line. A list starts with a "1" where a list
    can start and continues with 2, 3, ... in order; a number that no list continues ("grade 2."
    in a report without "1.") is content. When "k." is directly followed by another "k." (the end
    of "grade 2." before item "2."), the second is the marker."""
    candidates = [(m.start(), int(m.group(1)), m.end()) for m in _INLINE_MARKER_RE.finditer(text)]
    chosen: list[int] = []
    chain: list[int] = []
    expected = 0
    for index, (start, number, end) in enumerate(candidates):
        following = candidates[index + 1] if index + 1 < len(candidates) else None
        if following is not None and following[1] == number and not text[end:following[0]].strip():
            continue
        if number == 1 and _LIST_START_RE.search(text, 0, start) is not None:
            if len(chain) >= 2:
                chosen.extend(chain)
            chain, expected = [start], 2
        elif chain and number == expected:
            chain.append(start)
            expected += 1
    if len(chain) >= 2:
        chosen.extend(chain)
    return chosen


def _break_inline_lists(text: str) -> str:
    positions = [p for p in _list_markers(text) if p > 0 and text[p - 1] != "\n"]
    if not positions:
        return text
    parts, last = [], 0
    for position in positions:
        parts.append(text[last:position].rstrip(" "))
        parts.append("\n")
        last = position
    parts.append(text[last:])
    return "".join(parts)


def prepare_text(text: str, upper_abbreviations: bool = True) -> str:
    """Lower-case, abbreviation-expanded, whitespace-normalised report text.

    A newline in the result always marks a clause break (paragraph or list item, also the items
    of a numbered list written on one line); dashes and underscores become spaces so
    "high-grade" and "high grade" read the same; the short forms of "invasive carcinoma of no
    special type" ("invasive carcinoma, NST") read as the WHO name. `upper_abbreviations=False`
    leaves the capitals-only abbreviations (NET, CIS, PIN, IM, ...) as words: in a report written
    in capitals, as many OCR'd TCGA reports are, they are ambiguous.
    """
    if len(text) > MAX_REPORT_CHARS:
        text = text[:MAX_REPORT_CHARS]
    if not text.isascii():
        text = _QUOTES_RE.sub("'", unicodedata.normalize("NFKC", text))
    # tabs, form feeds and other control characters (\x1e, the break sentinel, included) become spaces
    text = _CONTROL_RE.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    if upper_abbreviations:
        text = _UPPER_RE.sub(_expand_upper, text)
    text = text.lower()
    text = _PARAGRAPH_RE.sub(_BREAK, text)
    if "note" in text:
        text = _NOTE_RE.sub(lambda m: _BREAK + m.group(0).strip() + " " if m.start() else m.group(0), text)
    text = _join_wraps(text).replace(_BREAK, "\n")
    text = _DASHES_RE.sub(" ", text)
    text = _WORD_REWRITE_RE.sub(_rewrite_word, text)
    if "pylori" in text or "helicobacter" in text:
        text = _H_PYLORI_RE.sub("helicobacter pylori", text)
    if "cin" in text:
        text = _CIN_RE.sub(_cin, text)
    text = _SPACES_RE.sub(" ", text)
    if "no special type" in text:
        text = _NST_RE.sub("invasive carcinoma of no special type", text)
    if "nos" in text and _COMMA_NOS_HINT_RE.search(text):
        text = _COMMA_NOS_RE.sub(" ", text)
    if ". " in text or ") " in text:
        text = _break_inline_lists(text)
    if " " in text and "\n" in text:  # " ?\n ?" -> "\n", spaces already single (`_SPACES_RE`)
        text = text.replace(" \n", "\n").replace("\n ", "\n")
    return text.strip()


def _join_wraps(text: str) -> str:
    """Every line break with the blanks around it made one space (`[ ]*\\n[ ]*` -> " ") for a
    text whose tabs and control characters are already spaces, by splitting at the line breaks:
    a pattern that opens with `[ ]*` is tried at every position of a long report."""
    if "\n" not in text:
        return text
    lines = text.split("\n")
    last = len(lines) - 1
    return " ".join(line.strip(" ") if 0 < i < last else (line.rstrip(" ") if i == 0 else line.lstrip(" "))
                    for i, line in enumerate(lines))


# A subtype written after its family ("renal cell carcinoma, chromophobe type", "adenocarcinoma
# (serous type)", "renal cell carcinoma, conventional (clear cell) type"): the WHO name puts it
# first, and the vocabulary knows that spelling.
_SUBTYPE_AFTER_RE = lazy(
    r"\b(renal cell carcinoma|adenocarcinoma|carcinoma) *[,:(]? *(?:(conventional) *[,(]? *)?"
    r"(clear cell|papillary|chromophobe|serous|endometrioid|mucinous|sarcomatoid|collecting duct)? *\)? *"
    r"(?:types?|subtype|variant)\b *\)?"
)


def _subtype_first(match: re.Match[str]) -> str:
    subtype = match.group(3) or ("clear cell" if match.group(2) else None)
    if subtype is None:
        return match.group(0)
    return f"{subtype} {match.group(1)} "


def normalise_names(text: str) -> str:
    """Prepared text with a tumour subtype written after its family moved before it (long reports)."""
    if "type" in text or "variant" in text:
        text = _SUBTYPE_AFTER_RE.sub(_subtype_first, text)
    return text


_PHRASE_PUNCT_RE = lazy(r"[^a-z0-9' ]+")


def normalise_phrase(phrase: str) -> str:
    """A vocabulary phrase as the matcher sees it: prepared, punctuation dropped, single spaces."""
    text = prepare_text(phrase).replace("\n", " ")
    text = _PHRASE_PUNCT_RE.sub(" ", text)
    return " ".join(text.split())


def roman_or_int(token: str) -> int | None:
    """'ii' -> 2, '3' -> 3, anything else -> None."""
    token = token.strip().lower()
    if token in ROMAN:
        return ROMAN[token]
    if token.isdigit():
        return int(token)
    return None


GRADE_WORDS = {"low": "low", "intermediate": "intermediate", "high": "high"}
# Nuclear grade is scored 1-3 whether written as a number (Nottingham pleomorphism score)
# or as a word (DCIS nuclear grade), so both spellings map to the number.
NUCLEAR_GRADE_WORDS = {"low": "1", "intermediate": "2", "moderate": "2", "high": "3"}
DIFFERENTIATION = {"well": "well", "moderately": "moderate", "moderate": "moderate",
                   "poorly": "poor", "poor": "poor", "un": "undifferentiated",
                   "undifferentiated": "undifferentiated"}
DIFFERENTIATION_RANK = {"well": 1, "moderate": 2, "poor": 3, "undifferentiated": 4}

# Ordinal scales: values on one scale compare by rank; values from different scales
# (a three-tier "2" against a two-tier "high") never match.
ORDINAL_SCALES: dict[str, tuple[dict[str, int], ...]] = {
    "tumor_grade": ({"1": 1, "2": 2, "3": 3, "4": 4}, {"low": 1, "high": 2},
                    {"low": 1, "intermediate": 2, "high": 3}),
    "differentiation": (DIFFERENTIATION_RANK,),
    "grade_group": ({str(i): i for i in range(1, 6)},),
    "nuclear_grade": ({str(i): i for i in range(1, 5)},),
    "mitotic_score": ({str(i): i for i in range(1, 4)},),
    "tubule_score": ({str(i): i for i in range(1, 4)},),
    "dysplasia_grade": ({"negative": 0, "low": 1, "high": 2},),
    "olga_stage": ({str(i): i for i in range(0, 5)},),
    "olgim_stage": ({str(i): i for i in range(0, 5)},),
    "invasion_depth": ({"non invasive": 0, "subepithelial connective tissue": 1, "submucosa": 2,
                        "muscle proper": 3, "subserosa": 4, "perivisceral tissue": 5, "serosa": 6,
                        "adjacent organs": 7},),
}


# The system a tumour grade is given in, by its names (long reports): grades of two named systems
# never match (Nottingham grade 2 is no FNCLCC grade 2), a grade whose system is not named matches
# either. Gleason patterns and nuclear (Fuhrman/ISUP) grades are fields of their own.
GRADE_SYSTEMS = {
    "nottingham": "nottingham", "elston": "nottingham", "bloom richardson": "nottingham", "sbr": "nottingham",
    "fnclcc": "fnclcc", "french federation": "fnclcc", "who": "who", "figo": "figo",
}
_GRADE_SYSTEM_RE = lazy(r"\b(" + "|".join(GRADE_SYSTEMS) + r")\b(?=[^\n.;]{0,40}?\bgrade\b)|\bgrade *\( *("
                        + "|".join(GRADE_SYSTEMS) + r")\b")


def grade_system(text: str) -> str | None:
    """The one grading system `text` names beside a grade, or None (none, or more than one)."""
    named = {GRADE_SYSTEMS[m.group(1) or m.group(2)] for m in _GRADE_SYSTEM_RE.finditer(text)}
    return named.pop() if len(named) == 1 else None


def split_grade_system(value: str) -> tuple[str | None, str]:
    """("nottingham", "2") for "nottingham 2"; (None, value) for a grade without its system."""
    head, _, tail = value.partition(" ")
    return (head, tail) if tail and head in GRADE_SYSTEMS.values() else (None, value)


def format_number(value: float) -> str:
    """Shortest stable text for a measured number: 2.0 -> '2', 2.50 -> '2.5'."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


__all__ = [
    "MAX_REPORT_CHARS",
    "prepare_text",
    "normalise_names",
    "trie_pattern",
    "STRUCTURED_ITEM_RE",
    "normalise_phrase",
    "roman_or_int",
    "format_number",
    "ORDINAL_SCALES",
    "GRADE_SYSTEMS",
    "grade_system",
    "split_grade_system",
    "plain_layout",
    "DIFFERENTIATION",
    "NUCLEAR_GRADE_WORDS",
]
