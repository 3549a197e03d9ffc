"""Clinically graded report pairs built from real TCGA surgical pathology reports (OCR text).

Used by `benchmarks/metric_validity.py --tcga`. Every pair is (prediction, reference): the
reference is a real report as OCR gave it, the prediction the same report rewritten by one rule.

- concordant rewrites (a pathologist would sign out the same report): equivalent names of the
  same tumour and finding, another notation of the same grade, stage or node count, specimen parts
  in another order, a boilerplate sentence, a page marker and a barcode added, one OCR-style
  misspelling of a clinical word, the text in another letter case; OCR noise (two character
  confusions such as "rn" for "m" or "1" for "l", one clinical word broken by a space, two lines
  merged); another layout (synoptic items as a heading line over their value, bullets, long lines
  broken);
- clinically wrong changes, made inside the report's diagnosis (below): histologic type, grade,
  stage, margin, node status, a negation flipped, the site (side or organ), the depth or kind of
  invasion, the principal diagnosis dropped; and the kinds of issue 43 on their own: node counts
  (with or without brackets, "2 of 15 lymph nodes"), the organ alone, the side alone, LVI/PNI alone
  (a synoptic value flipped, a stated absence made a presence). `ERROR_FIELDS` names the field of
  the paper's Table 11 schema each kind changes ("in-schema" pairs; None for pathkit's additions).

The concordant OCR-noise and layout rewrites draw their places from the pair's generator, or for
seed 0 from one seeded by the report text, so they too are reproducible.

Where a wrong change is made. A change is clinically wrong only where the pathologist signs it
out, so every error rule edits the diagnosis region that these rules find on their own (not with
CRQS's section finder): from a line that is a diagnosis header (FINAL DIAGNOSIS, PATHOLOGIC
DIAGNOSIS, DIAGNOSIS: ...) to the next gross / clinical / comment / signature line (at most
3,000 characters); in a report without such a header, the 25 lines from the first line that
names a malignancy before any such line. A report in which an error rule finds nothing to change gives no pair of that
kind. Concordant rewrites may touch the whole report: they change no clinical fact anywhere.

The split into development and held-out halves is by report: sha256 of the TCGA patient id,
first byte even = development.

Pair seeds. With seed 0 every rule changes the first place it applies to (the pairs of the first
rounds). With another seed a rule picks among every place it applies to, one drawn at random
(a random line for the boilerplate, a random clinical word and letter for the OCR typo, a random
pair of neighbouring parts for the part order, a random applicable rule of a kind's list first),
from a generator seeded by (seed, patient id, kind): each seed is a fresh draw of pairs from the
same reports, reproducible from run to run.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable

# (text, diagnosis region, generator or None) -> the rewritten text, or None where the rule does not
# apply; without a generator (seed 0) the first place it applies to, with one a place drawn from it
Rule = Callable[[str, tuple[int, int], random.Random | None], str | None]

# ----------------------------------------------------------------------------- the diagnosis region
_HEADER_RE = re.compile(
    r"(?im)^[ \t]*(?:final |pathologic(?:al)? |surgical pathology |histopatholog(?:ic|ical) |"
    r"histologic(?:al)? )*diagnos[ie]s\b(?![^\n]*discrepan)[^\n]{0,40}$"
)
_STOP_RE = re.compile(
    r"(?im)^[ \t]*(?:gross|clinical|comment|microscopic|electronically|specimens? (?:received|submitted)|"
    r"(?:clinical |brief )?history|i attest|i,? the undersigned|frozen|intraoperative|criteria|"
    r"diagnosis discrepan|signed|pathologist|page \d|operative|pre-?operative|post-?operative)"
)
_MALIGNANT_LINE_RE = re.compile(
    r"(?im)^.*\b(?:carcinoma|adenocarcinoma|glioblastoma|astrocytoma|oligodendroglioma|glioma|sarcoma|"
    r"melanoma|lymphoma|mesothelioma)\b.*$"
)
_REGION_MAX = 3000


def diagnosis_region(text: str) -> tuple[int, int] | None:
    """(start, end) of the text a wrong change is made in, or None."""
    header = _HEADER_RE.search(text)
    if header is not None:
        start = header.end()
    else:
        # the first line naming a malignancy that no gross / clinical / comment header precedes
        first_stop = _STOP_RE.search(text)
        line = _MALIGNANT_LINE_RE.search(text, 0, first_stop.start() if first_stop is not None else len(text))
        if line is None:
            return None
        start = line.start()
    stop = _STOP_RE.search(text, start + 1)
    end = min(stop.start() if stop is not None else len(text), start + _REGION_MAX)
    if header is None:
        lines = text[start:end].split("\n")
        end = start + len("\n".join(lines[:25]))
    return (start, end) if end - start >= 20 else None


_NEGATED_BEFORE_RE = re.compile(r"(?i)\b(?:no|not|without|negative for|free of|absence of)\b[^\n.;]*$")
_CONTEXT_BEFORE_RE = re.compile(r"(?i)\b(?:invad\w*|invasion|extends?|extension|infiltrat\w*|involv\w*|into|through)"
                                r"\b[^\n.;]*$")


def _in_region(pattern: str, replacement: str | Callable[[re.Match[str]], str], flags: int = re.IGNORECASE,
               affirmed: bool = True, after_invasion: bool = False) -> Rule:
    """Replace the first match of `pattern` inside the diagnosis region; with `affirmed`, only a
    match that no negation before it on its line denies ("no high grade dysplasia" is no grade);
    with `after_invasion`, only one that an invasion word leads on its line (a depth, not a margin)."""
    compiled = re.compile(pattern, flags)

    def eligible(text: str, match: re.Match[str]) -> bool:
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = text[max(line_start, match.start() - 60):match.start()]
        if affirmed and _NEGATED_BEFORE_RE.search(before):
            return False
        return not (after_invasion and not _CONTEXT_BEFORE_RE.search(before))

    def apply(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
        matches = (m for m in compiled.finditer(text, region[0], region[1]) if eligible(text, m))
        if rng is None:
            match = next(matches, None)
        else:
            found = list(matches)
            match = rng.choice(found) if found else None
        if match is None:
            return None
        new = match.expand(replacement) if isinstance(replacement, str) else replacement(match)
        return text[:match.start()] + new + text[match.end():]

    return apply


def _anywhere(pattern: str, replacement: str | Callable[[re.Match[str]], str], flags: int = re.IGNORECASE
              ) -> Rule:
    compiled = re.compile(pattern, flags)

    def apply(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
        new = compiled.sub(replacement, text)
        return new if new != text else None

    return apply


def _case_like(template: str, word: str) -> str:
    """`word` in the letter case of `template` (upper, capitalised or lower)."""
    if template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _swap(table: dict[str, str]) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return _case_like(match.group(0), table[match.group(0).lower()])

    return replace


def _words(table: dict[str, str]) -> str:
    return r"\b(?:" + "|".join(re.escape(k) for k in sorted(table, key=len, reverse=True)) + r")\b"


# ----------------------------------------------------------------------------- concordant rewrites
_SYNONYMS = {
    "squamous cell carcinoma": "squamous carcinoma",
    "serous adenocarcinoma": "serous carcinoma",
    "serous carcinoma": "serous adenocarcinoma",
    "endometrioid adenocarcinoma": "endometrioid carcinoma",
    "glioblastoma multiforme": "glioblastoma",
    "hepatocellular carcinoma": "hepatocellular carcinoma (HCC)",
    "lymphovascular invasion": "lymph-vascular invasion",
    "angiolymphatic invasion": "lymphovascular invasion",
    "not identified": "not seen",
    "free of tumor": "negative for tumor",
}
_TYPE_ORDER_RE = (r"\b(clear cell|papillary|chromophobe) renal cell carcinoma\b")


def _type_order(match: re.Match[str]) -> str:
    family = _case_like(match.group(0), "renal cell carcinoma")
    return f"{family}, {match.group(1)} type"


def _urothelial(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    # "transitional cell" names urothelial carcinoma in the urinary tract only
    if not re.search(r"(?i)\b(?:bladder|ureter|renal pelvis|urethra)\b", text):
        return None
    new = re.sub(r"(?i)\burothelial carcinoma\b", lambda m: _case_like(m.group(0), "transitional cell carcinoma"),
                 text)
    return new if new != text else None


NAMES: list[tuple[str, Rule]] = [
    ("synonyms", _anywhere(_words(_SYNONYMS), _swap(_SYNONYMS))),
    ("type order", _anywhere(_TYPE_ORDER_RE, _type_order)),
    ("transitional", _urothelial),
]

_ARABIC = {"i": "1", "ii": "2", "iii": "3", "iv": "4"}
_ROMAN = {v: k.upper() for k, v in _ARABIC.items()}
NOTATIONS: list[tuple[str, Rule]] = [
    ("grade roman->arabic", _anywhere(r"(?<!gleason )\b(grade:?[ \t]*)(IV|III|II|I)\b(?![/\w]| *\+)",
                                      lambda m: m.group(1) + _ARABIC[m.group(2).lower()])),
    ("grade arabic->roman", _anywhere(r"(?<!gleason )\b(grade:?[ \t]*)([1-4])\b(?![/.]\d| *\+)",
                                      lambda m: m.group(1) + _ROMAN[m.group(2)])),
    ("node ratio", _anywhere(r"\((\d{1,2})\s*/\s*(\d{1,2})\)", r"(\1 of \2)")),
    ("tnm comma", _anywhere(r"\b(p?T[0-4][abc]?)\s*,?\s*(N[0-3][abc]?)\b", r"\1, p\2")),
]


def _all_of(rules: list[tuple[str, Rule]]) -> Rule:
    """Every rule of `rules` that applies, one after the other."""

    def apply(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
        out, changed = text, False
        for _, rule in rules:
            new = rule(out, region, rng)
            if new is not None:
                out, changed = new, True
        return out if changed else None

    return apply


notation = _all_of(NOTATIONS)
names = _all_of(NAMES)


_PART_RE = re.compile(r"(?m)^[ \t]*([A-H])[.):][ \t]*\S")


def part_order(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    """The first two lettered specimen parts of the diagnosis in swapped order (letters kept); with
    a generator, two neighbouring parts drawn from it (A-B, B-C, ...) where a part follows both."""
    start, end = region
    marks = [m for m in _PART_RE.finditer(text, start, end)]
    if len(marks) < 3 or marks[0].group(1) != "A" or marks[1].group(1) != "B" or marks[2].group(1) != "C":
        return None
    # neighbours in letter order, each followed by a third part (so that both end at a line break)
    pairs = [i for i in range(len(marks) - 2)
             if [ord(marks[i + j].group(1)) for j in range(3)] == [ord(marks[i].group(1)) + j for j in range(3)]]
    i = 0 if rng is None else rng.choice(pairs)
    a, b, c = marks[i].start(), marks[i + 1].start(), marks[i + 2].start()
    first, second = text[a:b], text[b:c]
    if not first.endswith("\n") or not second.endswith("\n"):
        return None
    return text[:a] + second + first + text[c:]


def boilerplate(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    """A boilerplate sentence, a page marker and a barcode inserted at the last line break of the
    diagnosis (with a generator, at a line break drawn from it)."""
    start, end = region
    cut = text.rfind("\n", start, end)
    if cut < 0:
        return None
    if rng is not None:
        cut = rng.choice([i for i in range(start, end) if text[i] == "\n"])
    return (text[:cut] + "\nClinical correlation is recommended.\nPage 1 of 2\nTCGA-XX-0000-01A-PR\n"
            + text[cut + 1:])


_TYPO_WORDS = re.compile(
    r"\b(?:adenocarcinoma|carcinoma|glioblastoma|astrocytoma|oligodendroglioma|urothelial|hepatocellular|"
    r"differentiated|lymphovascular|perineural|endometrioid|squamous|papillary|chromophobe|metastatic|"
    r"invasive|margins)\b", re.IGNORECASE)


def ocr_typo(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    """One letter dropped from the first clinical word of the diagnosis (an OCR miss); with a
    generator, a letter (not the first) of a clinical word of the diagnosis drawn from it."""
    if rng is None:
        match = _TYPO_WORDS.search(text, region[0], region[1])
    else:
        found = list(_TYPO_WORDS.finditer(text, region[0], region[1]))
        match = rng.choice(found) if found else None
    if match is None:
        return None
    word = match.group(0)
    cut = len(word) // 2 if rng is None else rng.randrange(1, len(word))
    return text[:match.start()] + word[:cut] + word[cut + 1:] + text[match.end():]


def letter_case(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    start, end = region
    part = text[start:end]
    other = part.lower() if sum(c.isupper() for c in part) > sum(c.islower() for c in part) else part.upper()
    return text[:start] + other + text[end:] if other != part else None


# OCR's character confusions (what a scanner misreads one glyph or glyph pair as)
_CONFUSIONS = (("m", "rn"), ("rn", "m"), ("l", "1"), ("i", "l"), ("o", "0"), ("e", "c"), ("d", "cl"), ("h", "b"),
               ("n", "ii"), ("u", "ii"), ("s", "5"), ("g", "q"))


def _rng_for(text: str, rng: random.Random | None) -> random.Random:
    """The pair's generator, or for seed 0 one seeded by the text itself (reproducible)."""
    return rng if rng is not None else random.Random(hashlib.sha256(text.encode("utf-8")).hexdigest())


def _confuse(word: str, rng: random.Random) -> str:
    places = [(i, a, b) for a, b in _CONFUSIONS for i in range(1, len(word) - len(a) + 1)
              if word[i:i + len(a)].lower() == a]
    if not places:
        return word[:-1]
    i, a, b = rng.choice(places)
    return word[:i] + (b.upper() if word[i:i + len(a)].isupper() else b) + word[i + len(a):]


def ocr_noise(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    """OCR damage of the diagnosis that changes no fact: two clinical words with a character
    confusion ("carcinoma" -> "carcinorna", "lymph" -> "1ymph"), one clinical word broken by a
    space ("adeno carcinoma"), and two lines merged into one."""
    rng = _rng_for(text, rng)
    start, end = region
    words = list(_TYPO_WORDS.finditer(text, start, end))
    if not words:
        return None
    chosen = sorted(rng.sample(words, min(3, len(words))), key=lambda m: m.start(), reverse=True)
    out = text
    for n, match in enumerate(chosen):
        word = match.group(0)
        if n == 0 and len(chosen) == 3:
            cut = rng.randrange(3, len(word) - 2)
            new = word[:cut] + " " + word[cut:]
        else:
            new = _confuse(word, rng)
        out = out[:match.start()] + new + out[match.end():]
    end += len(out) - len(text)
    breaks = [i for i in range(start, end) if out[i] == "\n" and 0 < i and out[i - 1] not in ":\n"]
    if breaks:
        cut = rng.choice(breaks)
        out = out[:cut] + " " + out[cut + 1:]
    return out


_LABEL_RE = re.compile(r"(?m)^([ \t]*)([A-Z][A-Za-z /-]{2,40}):[ \t]*(\S[^\n]*)$")


def layout(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    """The diagnosis laid out otherwise, its words and their order unchanged: "Label: value" lines as
    a heading line and the value under it, the other lines as bullets, long lines broken in two."""
    rng = _rng_for(text, rng)
    start, end = region
    lines = text[start:end].split("\n")
    out = []
    for line in lines:
        label = _LABEL_RE.match(line)
        if label is not None and rng.random() < 0.7:
            out.extend([f"{label.group(2).upper()}", f"{label.group(3)}"])
        elif line.strip() and not line.lstrip().startswith(("-", "*")) and rng.random() < 0.6:
            out.append("* " + line.strip())
        elif len(line) > 50 and rng.random() < 0.5:
            cut = line.find(" ", len(line) // 2)
            out.extend([line[:cut], line[cut + 1:]] if cut > 0 else [line])
        else:
            out.append(line)
    new = "\n".join(out)
    return text[:start] + new + text[end:] if new != text[start:end] else None


CONCORDANT: dict[str, Rule] = {
    "equivalent names": names,
    "notation": notation,
    "part order": part_order,
    "boilerplate": boilerplate,
    "ocr typo": ocr_typo,
    "letter case": letter_case,
    "ocr noise": ocr_noise,
    "layout": layout,
}

# ----------------------------------------------------------------------------- clinically wrong changes
_TYPES = {
    "adenocarcinoma": "squamous cell carcinoma", "squamous cell carcinoma": "adenocarcinoma",
    "clear cell": "papillary", "chromophobe": "clear cell", "serous": "endometrioid", "endometrioid": "serous",
    "hepatocellular carcinoma": "cholangiocarcinoma", "cholangiocarcinoma": "hepatocellular carcinoma",
    "glioblastoma": "oligodendroglioma", "astrocytoma": "oligodendroglioma", "oligodendroglioma": "astrocytoma",
    "urothelial carcinoma": "squamous cell carcinoma", "transitional cell carcinoma": "squamous cell carcinoma",
    "mucinous": "serous", "small cell carcinoma": "adenocarcinoma",
}
_PAPILLARY_RCC = r"\bpapillary(?= renal cell carcinoma)"


_TYPE_RULES: list[Rule] = [_in_region(_PAPILLARY_RCC, lambda m: _case_like(m.group(0), "clear cell")),
                            _in_region(_words(_TYPES), _swap(_TYPES))]


_DIFF = {"well": "poorly", "moderately": "poorly", "poorly": "well"}
_TIER = {"high": "low", "low": "high"}
_NEXT = {"1": "3", "2": "3", "3": "1", "4": "2", "i": "iii", "ii": "iii", "iii": "i", "iv": "ii"}


def _grade_number(match: re.Match[str]) -> str:
    value = match.group(2)
    new = _NEXT[value.lower()]
    return match.group(1) + (new.upper() if value.isupper() else new)


GRADES: list[Rule] = [
    _in_region(r"\b(well|moderately|poorly)(?=[ -]+differentiated)", _swap(_DIFF)),
    _in_region(r"(?<!gleason )\b((?:fuhrman|nuclear|who|histologic|tumor)?[ \t]*grade:?[ \t]*)(IV|III|II|I|[1-4])\b"
               r"(?![/.]\d| *\+)", _grade_number),
    _in_region(r"\b(high|low)(?=[ -]grade\b)", _swap(_TIER)),
    _in_region(r"\bgleason(?:'s)? (?:score|grade|sum)?:?\s*(\d)\s*\+\s*(\d)",
               lambda m: m.group(0)[:m.start(1) - m.start(0)] + ("4 + 4" if m.group(1) != "4" or m.group(2) != "4"
                                                                 else "3 + 3")),
]


def _first_rule(rules: list[Rule]) -> Rule:
    """The first rule of `rules` that applies; with a generator, the rules in an order drawn from it."""

    def apply(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
        for rule in rules if rng is None else rng.sample(rules, len(rules)):
            new = rule(text, region, rng)
            if new is not None:
                return new
        return None

    return apply


def _stage_t(match: re.Match[str]) -> str:
    number = int(match.group(2))
    return match.group(1) + str(number + 1 if number < 4 else 2)


STAGES: list[Rule] = [
    # a block, cassette or slide name ("for block T1") is not a stage
    _in_region(r"(?<![Bb]lock )(?<!BLOCK )(?<![Cc]assette )(?<!CASSETTE )(?<![Ss]lide )(?<!SLIDE )\b(p?T)([0-4])"
               r"(?=[abc]?\b)", _stage_t, 0),
    # an item label of a form ("N2. Involvement by renal neoplasm") is not a stage
    _in_region(r"\b(p?N)([0-2])(?=[abc]?\b)(?![.)] *[A-Z][a-z])",
               lambda m: m.group(1) + ("1" if m.group(2) == "0" else "0"), 0),
    _in_region(r"\b(stage:?\s*)(IV|III|II|I)(?=[ABC]?\b)",
               lambda m: m.group(1) + {"I": "III", "II": "IV", "III": "I", "IV": "II"}[m.group(2).upper()]),
]
MARGINS: list[Rule] = [
    _in_region(r"(\bmargins?\b[^.\n]{0,40}?\b)(negative|free|uninvolved|clear)\b",
               lambda m: m.group(1) + _case_like(m.group(2), "positive" if m.group(2).lower() == "negative"
                                                 else "involved")),
    _in_region(r"(\bmargins?\b[^.\n]{0,40}?\b)(positive|involved)\b",
               lambda m: m.group(1) + _case_like(m.group(2), "negative" if m.group(2).lower() == "positive"
                                                 else "free")),
    _in_region(r"\b(negative|free|uninvolved|clear)(?= (?:surgical |resection |inked )?margins?\b)",
               lambda m: _case_like(m.group(0), "positive" if m.group(1).lower() == "negative" else "involved")),
]
NODES: list[Rule] = [
    _in_region(r"\(0\s*/\s*(\d{1,2})\)", lambda m: f"({min(2, int(m.group(1)))}/{m.group(1)})", 0, affirmed=False),
    _in_region(r"\(([1-9]\d?)\s*/\s*(\d{1,2})\)", lambda m: f"(0/{m.group(2)})", 0, affirmed=False),
    _in_region(r"(lymph nodes?[^.\n]{0,40}?)\b(negative|benign)\b",
               lambda m: m.group(1) + _case_like(m.group(2), "positive for metastatic carcinoma"), affirmed=False),
]
# node counts written without brackets or in words: "0/12", "2 of 15 lymph nodes", "positive nodes: 0"
NODE_COUNTS: list[Rule] = [
    *NODES[:2],
    _in_region(r"(?<![\d/(])0\s*/\s*([1-9]\d?)(?![\d/])(?=[^.\n]{0,60}\bnodes?\b|\)?\s*(?:lymph )?nodes?\b)",
               lambda m: f"{min(2, int(m.group(1)))}/{m.group(1)}", 0, affirmed=False),
    _in_region(r"(?<![\d/(])([1-9]\d?)\s*/\s*(\d{1,2})(?![\d/])(?=\)?[^.\n]{0,30}\bnodes?\b)",
               lambda m: f"{int(m.group(1)) + 1 if int(m.group(1)) < int(m.group(2)) else 0}/{m.group(2)}", 0,
               affirmed=False),
    _in_region(r"\b([1-9]\d?|0)( (?:of|out of) \d{1,2} (?:\w+ ){0,2}(?:lymph )?nodes?)",
               lambda m: ("2" if m.group(1) == "0" else "0") + m.group(2), affirmed=False),
]
NEGATIONS: list[Rule] = [
    _in_region(r"\bno (?:evidence of )?(lymphovascular|lympho-vascular|angiolymphatic|vascular|perineural|"
               r"extranodal|extracapsular|capsular)( invasion| extension)",
               lambda m: _case_like(m.group(0), f"{m.group(1)}{m.group(2)} present"), affirmed=False),
    _in_region(r"\b(lymphovascular|lympho-vascular|angiolymphatic|vascular|perineural)( invasion)\s*:?\s*"
               r"(not identified|absent|negative|none)", lambda m: f"{m.group(1)}{m.group(2)}: present",
               affirmed=False),
    _in_region(r"\b(lymphovascular|lympho-vascular|angiolymphatic|vascular|perineural)( invasion)\s*:?\s*"
               r"(present|identified|positive)", lambda m: f"{m.group(1)}{m.group(2)}: not identified"),
    _in_region(r"\bno (?:evidence of )?(?:residual )?(tumor|carcinoma|malignancy)\b",
               lambda m: _case_like(m.group(0), f"{m.group(1)} present"), affirmed=False),
]
_LVI = r"(?:lympho-?\s?vascular|lymph-\s?vascular|angiolymphatic|vascular(?:/lymphatic)?|lymphatic|perineural)"
_FLIP = {"yes": "no", "no": "yes", "present": "absent", "absent": "present", "not identified": "present",
         "identified": "not identified", "negative": "positive", "positive": "negative", "not present": "present",
         "none identified": "present", "none": "present"}
# LVI and PNI alone: a synoptic value flipped ("Perineural invasion: Present" -> "Absent"), a stated
# absence made a presence ("No angiolymphatic invasion" -> "Angiolymphatic invasion present")
LVI_PNI: list[Rule] = [
    _in_region(rf"(\b{_LVI}(?: space)? invasion\s*:\s*)({'|'.join(sorted(_FLIP, key=len, reverse=True))})"
               r"\b", lambda m: m.group(1) + _case_like(m.group(2), _FLIP[m.group(2).lower()]), affirmed=False),
    _in_region(rf"\bno (?:evidence of |definitive )?({_LVI}(?: space)? invasion)(?: is)?(?: identified| seen)?",
               lambda m: _case_like(m.group(0), f"{m.group(1)} present"), affirmed=False),
    _in_region(rf"\b({_LVI}(?: and {_LVI})?(?: space)? invasion)( (?:is |are )?(?:identified|present))",
               lambda m: "No " + m.group(1) + " identified"),
]
_SIDES = {"left": "right", "right": "left"}
_ORGANS = {"ovary": "fallopian tube", "colon": "stomach", "rectum": "stomach", "cervix": "endometrium",
           "bladder": "ureter", "tongue": "larynx", "larynx": "tongue", "kidney": "adrenal gland",
           "pancreas": "duodenum", "liver": "gallbladder", "prostate": "bladder", "lung": "pleura"}
SITES: list[Rule] = [
    _in_region(r"\b(left|right)\b", _swap(_SIDES)),
    _in_region(_words(_ORGANS), _swap(_ORGANS)),
]
LATERALITY: list[Rule] = [SITES[0]]
ORGAN_SITES: list[Rule] = [SITES[1]]
_DEPTHS = {"muscularis propria": "lamina propria", "lamina propria": "muscularis propria",
           "subserosa": "submucosa", "submucosa": "muscularis propria", "perivesical": "subepithelial",
           "perirectal": "submucosal", "pericolonic": "submucosal", "serosa": "submucosa",
           "renal sinus": "renal capsule", "perinephric": "intrarenal", "seminal vesicle": "prostatic capsule",
           "extraprostatic extension": "intraprostatic tumor", "myometrium": "endometrium"}
INVASIONS: list[Rule] = [
    _in_region(_words(_DEPTHS), _swap(_DEPTHS), after_invasion=True),
    _in_region(r"\b(invasive|infiltrating) ((?:\w+ ){0,2}carcinoma)\b",
               lambda m: f"{m.group(2)} in situ"),
]
_PRINCIPAL_LINE_RE = re.compile(
    r"(?im)^(?!.*\b(?:no|negative for|free of|without|specimens?|probes?|studies)\b).*\b(?:carcinoma|"
    r"adenocarcinoma|glioblastoma|"
    r"astrocytoma|oligodendroglioma|glioma|sarcoma|melanoma|lymphoma|mesothelioma)\b.*(?:\n|$)"
)


def dropped_diagnosis(text: str, region: tuple[int, int], rng: random.Random | None = None) -> str | None:
    """Every line of the diagnosis that names a malignancy (and is not a negation) removed."""
    start, end = region
    part = _PRINCIPAL_LINE_RE.sub("", text[start:end])
    return text[:start] + part + text[end:] if part != text[start:end] else None


ERRORS: dict[str, Rule] = {
    "histologic type": _first_rule(_TYPE_RULES),
    "grade": _first_rule(GRADES),
    "stage": _first_rule(STAGES),
    "margin": _first_rule(MARGINS),
    "node status": _first_rule(NODES),
    "negation": _first_rule(NEGATIONS),
    "site": _first_rule(SITES),
    "invasion": _first_rule(INVASIONS),
    "diagnosis dropped": dropped_diagnosis,
    # the kinds named by issue 43 on their own: node counts, the organ alone, the side alone, LVI/PNI alone
    "node counts": _first_rule(NODE_COUNTS),
    "organ site": _first_rule(ORGAN_SITES),
    "laterality": _first_rule(LATERALITY),
    "lvi/pni": _first_rule(LVI_PNI),
}

# The field of the paper's TCGA schema (Table 11, `tcga-pathreporteval`) each kind of error changes,
# or None where the paper's schema has no such field (stage, laterality, depth of invasion are
# pathkit's additions): "in-schema" pairs are the concordant ones and the errors of a Table 11 field.
ERROR_FIELDS: dict[str, str | None] = {
    "histologic type": "histologic_type", "grade": "tumor_grade", "stage": None, "margin": "margin_status",
    "node status": "lymph_node_involvement", "negation": "diagnosis", "site": "organ_site", "invasion": None,
    "diagnosis dropped": "diagnosis", "node counts": "lymph_node_involvement", "organ site": "organ_site",
    "laterality": None, "lvi/pni": "lymphovascular_invasion",
}


def half_of(patient_id: str) -> str:
    return "heldout" if hashlib.sha256(patient_id.encode("utf-8")).digest()[0] % 2 else "dev"


def build_pairs(records: list[dict], seed: int = 0) -> list[dict]:
    """(prediction, reference, kind, correct, report, organ) rows: for each report, itself, and
    one pair of each concordant and each wrong kind that applies; `seed` 0 = the first place each
    rule applies to, another seed = places drawn at random (module docstring)."""
    rows = []
    for record in records:
        reference = record["ocr_text"]
        meta = {"reference": reference, "report": record["patient_id"], "organ": record["organ_group"]}
        rows.append({**meta, "prediction": reference, "kind": "identical", "correct": True})
        region = diagnosis_region(reference)
        for table, correct in ((CONCORDANT, True), (ERRORS, False)):
            for kind, rule in table.items():
                if region is None:
                    continue
                rng = None if seed == 0 else random.Random(f"{seed}:{record['patient_id']}:{kind}")
                new = rule(reference, region, rng)
                if new is not None and new != reference:
                    rows.append({**meta, "prediction": new, "kind": kind, "correct": correct})
    return rows


__all__ = ["CONCORDANT", "ERRORS", "ERROR_FIELDS", "build_pairs", "diagnosis_region", "half_of"]
