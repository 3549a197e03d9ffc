"""Where a long pathology report states its diagnosis: section finding, clutter removal, specimen parts.

A pathologist reads a long surgical pathology report (TCGA) from its final diagnosis and its
synoptic summary, not from the clinical history, the gross description, the comment or the
sign-out attestation. `read_spans` finds those sections on the raw text (its line structure
intact, before normalisation): a diagnosis header (FINAL DIAGNOSIS, DIAGNOSIS:, PATHOLOGIC
DIAGNOSIS, ... at the start of a line; never "clinical", "postoperative", "frozen section",
"intraoperative" diagnoses or the TCGA discrepancy form) or a synoptic header opens a section,
which runs to the next gross / clinical / comment / signature / form header. A report without a
diagnosis header is read up to its first such header (the diagnosis is on top), and one that
opens with such a header is read whole; one with headers also from its top when that names a
malignancy. A "(Continued)" diagnosis header reads back to the top of the page before it; a
synoptic summary runs past its own item labels ("Procedure:"); the TCGA QC stamp is blanked
before any of this. `strip_clutter` drops barcodes, the QC stamp, page markers and sign-out
boilerplate; `specimen_parts` cuts the read text into its specimen parts (A., B:,
PART 1, 1) ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pathkit_metrics._crqs.lazy_pattern import lazy

# Qualifiers a diagnosis header may carry; anything else before "diagnosis" (clinical, post-
# operative, frozen section, ...) makes it another kind of line.
_DIAGNOSIS_HEADER_RE = lazy(
    # qualified ("FINAL PATHOLOGIC DIAGNOSIS ...", "Final Diagnosis (Verified)"): whatever follows
    r"(?im)^[ \t\W]{0,4}(?:(?:final|pathologic(?:al)?|surgical pathology|histopatholog(?:ic|ical)|"
    r"histologic(?:al)?|histology|anatomic(?:al)?|consolidated|revised|amended|addendum|pathology)[ \t]+)+"
    r"diagnos[ie]s(?:[ \t]*\(es\))?[ \t]*(?:\([^)\n]{0,20}\))?[ \t]*[:.\-]?[ \t]*"
    # bare: "DIAGNOSIS:", "Diagnosis", "DIAGNOSIS -", "DIAGNOSIS ," (OCR), "Diagnosis /"
    r"|^[ \t\W]{0,4}diagnos[ie]s(?:[ \t]*\(es\))?(?:[ \t]+details)?[ \t]*(?:\([^)\n]{0,20}\))?[ \t]*"
    r"(?:[:.,/\-][ \t]*|(?=\n)|$)"
    r"|^[ \t\W]{0,4}(?:impression|interpretation|conclusions?)[ \t]*:[ \t]*"
    # an amended report's own diagnosis: "Final Addendum Pathology Report"
    r"|^[ \t\W]{0,4}final[ \t]+addendum[ \t]+(?:pathology[ \t]+)?report\b[^\n]*"
)
_SYNOPTIC_HEADER_RE = lazy(
    r"(?im)^[ \t\W]{0,4}(?:[a-z]+[ \t]+){0,3}(?:synoptic|case synopsis|tumor characteristics|"
    r"(?:cancer|tumor)[ \t]+(?:case[ \t]+)?summary|pathologic(?:al)?[ \t]+(?:parameters|staging|stage)|"
    r"checklist|summary of (?:pathologic )?findings)\b[^\n]*"
)
# Lines that open a section which is not the diagnosis.
_STOP_HEADER_RE = lazy(
    r"(?im)^[ \t\W]{0,4}(?:gross(?:[ \t]+(?:description|examination|exam|findings))?\b|clinical[ \t]+\w+|"
    r"(?:brief[ \t]+|patient[ \t]+|past[ \t]+)?history\b|comments?\b|microscopic[ \t]+(?:description|examination|exam)|"
    r"(?:\*+[ \t]*)?(?:report[ \t]+)?electronically|signed\b|i[ \t]+(?:attest|have[ \t]+personally|personally)|"
    r"attestation|specimens?(?:\(s\))?[ \t]+(?:received|submitted|source)|source[ \t]+of[ \t]+(?:specimen|tissue)|"
    r"frozen[ \t]+section|intra[ \t-]?operative|(?:pre|post)[ \t-]?op(?:erative)?\b|operative|procedures?[ \t]*:|"
    r"addendum(?![ \t]+(?:diagnos|pathology[ \t]+report))|criteria\b|diagnosis[ \t]+discrepan\w*|"
    r"primary[ \t]+tumor[ \t]+site[ \t]+discrepan\w*|case[ \t]+is[ \t]+\(circle\)|special[ \t]+(?:studies|stains)|"
    r"summary[ \t]+of[ \t]+sections|"
    r"(?:block|cassette|section)[ \t]+(?:summary|code)|immunohistochemi\w*|molecular|"
    r"interpretation[ \t]+performed|dictated|transcribed|printed|ink[ \t]+code)"
)
# Stop keywords that a synoptic summary also uses as item labels ("Procedure: Resection",
# "Specimen received: ..."): inside a synoptic section they do not end it.
_ITEM_STOP_RE = lazy(
    r"(?i)[ \t\W]{0,4}(?:specimens?|source|frozen|intra|pre|post|operative|procedure|special|summary|block|"
    r"cassette|section|immunohistochemi|molecular|interpretation|ink)"
)
# The TCGA quality-control stamp ("Criteria", "Diagnosis Discrepancy", ..., "Case is (circle):",
# "Reviewer Initials"), which OCR often interleaves with the report's own lines: blanked, so that
# it neither ends a section nor is read.
_QC_FORM_RE = lazy(
    r"(?im)^[ \t\W]{0,4}criteria\b[^\n]{0,30}$"
    r"|\b(?:diagnosis|primary[ \t]+tumor[ \t]+site|hipaa)[ \t]*discrep[a-z]{0,5}(?:[ \t]+n?cy\b)?"
    r"|\bprior[ \t]+malignan\w*[ \t]+histor\w*|\bdual[ \t]*/[ \t]*synchronous[ \t]+primar\w*"
    r"|\bcase[ \t]+is[ \t]+\(circle[)}]?[ \t]*:?|\breviewer[ \t]+in\w*|\bdate[ \t]+reviewed\b[ \t:]*"
    r"|\bdisqualified\b|^[ \t\W]*qualified[ \t\W]*$"
)
# (searched in the lower-cased text: a case-blind search of literals is ten times slower)
_QC_HINT_RE = lazy(r"criteria|discrep|malignan|synchronous|circle|reviewe|qualified")


def _without_qc_form(text: str, blank: bool) -> str:
    """`text` with the QC stamp's phrases blanked (same length, `blank`) or removed: the stamp's
    pattern runs only on the lines that hold one of its words, a fast scan."""
    pieces, last, end = [], 0, -1
    lower = text.lower()
    if len(lower) != len(text):  # a character whose lower case is longer: no stamp is looked for
        return text
    for hit in _QC_HINT_RE.finditer(lower):
        if hit.start() < end:
            continue
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.end())
        end = len(text) if end < 0 else end
        for match in _QC_FORM_RE.finditer(text, start, end):
            pieces.append(text[last:match.start()])
            pieces.append(" " * len(match.group(0)) if blank else "")
            last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


# A line that names a malignant tumour (a diagnosis standing on top of a report without its header).
_MALIGNANCY_RE = lazy(
    r"(?i)\b(?:\w*carcinoma|\w*sarcoma|melanoma|lymphoma|leuka?emia|\w*glioma|glioblastoma|\w*blastoma|"
    r"astrocytoma|mesothelioma|seminoma|malignan\w*)\b"
)
# A page break: a page marker line or an OCR'd "(Continued)" line.
_PAGE_BREAK_RE = lazy(r"(?im)^[^\n]*\bpage[ \t]*\d+\b[^\n]*$|^[ \t\W]*\(?[ \t]*conti[ \t]*nu\w*[ \t\W]*$")
_MAX_SECTION_CHARS = 6000
_MIN_SECTION_CHARS = 20

# Clutter: barcodes and record numbers, OCR'd barcode stripes, page markers, sign-out boilerplate.
_CLUTTER_LINE_RE = lazy(
    # a record identifier: 32 letters or digits (a UUID), OCR separators between them, no more, so a
    # word glued to its end ("...F52DURETER RIGHT") stays
    r"(?im)\buuid *:? *(?:[0-9a-z][ .\-]{0,2}){31}[0-9a-z]"
    r"|\btcga-[a-z0-9]{2}-[a-z0-9]{4}[a-z0-9\-]*(?:[ \t]*redacted)?"
    r"|^[ \t]*[il1|!\[\]](?:[ \t]*[il1|!\[\]]){7,}[^\n]*$"  # a barcode stripe read as I, l, 1 and |
    r"|^[ \t]*page[ \t]+\d+(?:[ \t]+of[ \t]+\d+)?[ \t]*$"
)
_BOILERPLATE_RE = lazy(
    r"(?i)\b(?:clinical correlation is (?:recommended|suggested|advised)|"
    r"correlation with (?:clinical|imaging|radiologic)[^.\n]{0,40}(?:recommended|suggested)|"
    r"the (?:above|final) diagnos[ie]s (?:is|are|reflects?)|support the above diagnosis|"
    r"results will be (?:issued|reported)|see (?:separate|addendum) report|"
    r"(?:has|have) been reviewed by|reviewed and approved this report|"
    r"this (?:test|assay) was developed|not been cleared or approved)"
)

# the most characters a boilerplate phrase's sentence may hold before it and still be cut whole
# ("I attest that the above diagnosis ..."); a longer lead is text OCR glued to it
_BOILERPLATE_LEAD = 40

# Specimen part markers at the start of a line: "A.", "B)", "C:", "PART 1:", "SPECIMEN 2 -", "1)";
# also a lettered marker or "PART N:" that follows the end of a sentence on its line and opens a
# capitalised word ("... present. (C) PROSTATE", "(2/9). F. Omentum"): OCR merged the part's line.
_PART_MARKER_RE = lazy(
    r"(?im)(?:^[ \t\W]{0,3}|(?<=[.)] )\(?(?=(?-i:[A-P])[.):] ?(?-i:[A-Z])|part[ \t]*[a-p1-9][ \t]*[:\-]))"
    r"(?:(?:part|specimen)[ \t]*([a-p1-9])\b[ \t]*[.):\-]?|([a-p])[ \t]*[.):]|([1-9])[ \t]*[.)])"
    r"[ \t]*(?=\S)"
)
# A numbered line that is a synoptic item ("1. Tumor type: ..."), not a specimen part.
_SYNOPTIC_ITEM_RE = lazy(
    r"(?i)[ \t]*(?:histolog\w*|tumou?r|grade|margins?|lymph|depth|ptnm|p?tnm|stage|size|laterality|site|"
    r"procedure|extent|invasion|vascular|perineural|focality|type|specimen|nodes?|distant|primary|regional|"
    r"pathologic|additional|gleason|extra\w*|seminal|venous|lymphatic)\b[^\n:]{0,40}:"
)


@dataclass(frozen=True)
class Section:
    """A span of the raw report that is read, and what opened it."""

    start: int
    end: int
    label: str
    kind: str = "diagnosis"  # "diagnosis", "synoptic", or "fallback" (no diagnosis header)

    def describe(self) -> str:
        return f"{self.label} [{self.start}:{self.end}]"


def _header_label(match: re.Match[str]) -> str:
    return " ".join(match.group(0).strip(" \t:.-*#•").lower().split())[:40] or "diagnosis"


def _header_like(text: str, match: re.Match[str]) -> bool:
    """Whether a stop keyword opens a header line rather than a sentence ("Frozen section
    diagnosis is confirmed."): the line has a colon soon after it, or is written in capitals,
    or ends within a few characters of it."""
    line_end = text.find("\n", match.end())
    rest = text[match.end():line_end if line_end >= 0 else len(text)]
    if ":" in rest[:40] or len(rest.strip()) <= 12:
        return True
    line = text[match.start():match.end()] + rest
    letters = [c for c in line if c.isalpha()]
    return bool(letters) and sum(c.isupper() for c in letters) >= 0.8 * len(letters)


def _continued_start(text: str, header: re.Match[str], stops: list[int]) -> int:
    """Where a "FINAL DIAGNOSIS (Continued)" header's section really starts: at the top of the
    page before it (after the page break that precedes the header's own page top), when no stop
    header lies between, since OCR often loses the first page's header; else at the header."""
    breaks = [m.end() for m in _PAGE_BREAK_RE.finditer(text, 0, header.start())]
    # the breaks straight above the header are the top of its own page
    while breaks and not text[breaks[-1]:header.start()].strip(" \t\n*()-:"):
        breaks.pop()
    while breaks and len(text[breaks[-1]:header.start()].strip()) < _MIN_SECTION_CHARS:
        breaks.pop()
    if not breaks or breaks[-1] < header.start() - _MAX_SECTION_CHARS:
        return header.end()
    start = breaks[-1]
    if any(start <= stop < header.start() for stop in stops):
        return header.end()
    return start


def read_spans(text: str) -> tuple[Section, ...]:
    """The sections of `text` that hold its diagnosis (see the module docstring), in text order."""
    scan = _without_qc_form(text, blank=True)
    stop_matches = [m for m in _STOP_HEADER_RE.finditer(scan) if _header_like(scan, m)]
    stops = [m.start() for m in stop_matches]
    # a synoptic summary runs past its own item labels ("Procedure:", "Specimen received:")
    hard_stops = [m.start() for m in stop_matches if not _ITEM_STOP_RE.match(scan, m.start())]

    def section_from(match: re.Match[str], start: int, kind: str) -> Section | None:
        ends = hard_stops if kind == "synoptic" else stops
        end = next((s for s in ends if s > match.start()), len(text))
        end = min(end, start + _MAX_SECTION_CHARS)
        if len(text[start:end].strip()) < _MIN_SECTION_CHARS:
            return None
        return Section(start, end, _header_label(match), kind)

    diagnoses = []
    for match in _DIAGNOSIS_HEADER_RE.finditer(scan):
        line_end = scan.find("\n", match.end())
        line = scan[match.start():line_end if line_end >= 0 else len(scan)].lower()
        start = _continued_start(scan, match, stops) if "contin" in line else match.end()
        if (section := section_from(match, start, "diagnosis")) is not None:
            diagnoses.append(section)
    synoptic = [sec for m in _SYNOPTIC_HEADER_RE.finditer(scan) if (sec := section_from(m, m.start(), "synoptic"))]
    if not diagnoses:
        first_stop = stops[0] if stops else len(text)
        if len(text[:first_stop].strip()) >= _MIN_SECTION_CHARS:
            diagnoses = [Section(0, min(first_stop, _MAX_SECTION_CHARS), "before first non-diagnosis header",
                                 "fallback")]
    else:
        # a diagnosis on top, before any header, that names a malignancy (the header lost by OCR, or
        # a report whose headers come later): read too
        first = min([*stops, *(sec.start for sec in diagnoses + synoptic)])
        top = scan[:min(first, _MAX_SECTION_CHARS)]
        if _MALIGNANCY_RE.search(top) and len(top.strip()) >= _MIN_SECTION_CHARS:
            diagnoses.append(Section(0, len(top), "before first header", "fallback"))
    sections: list[Section] = []
    for section in sorted(diagnoses + synoptic, key=lambda sec: sec.start):
        if sections and section.start < sections[-1].end:
            if section.end <= sections[-1].end and section.kind != "synoptic":
                continue  # inside the section before
            # a synoptic block inside a diagnosis section is a section of its own
            last = sections[-1]
            sections[-1] = Section(last.start, section.start, last.label, last.kind)
        sections.append(section)
    sections = [sec for sec in sections if len(text[sec.start:sec.end].strip()) >= _MIN_SECTION_CHARS]
    return tuple(sections) if sections else (Section(0, len(text), "whole report", "fallback"),)


def strip_clutter(text: str) -> str:
    """`text` without barcodes, record identifiers, page markers and sign-out boilerplate (the
    sentence that holds a boilerplate phrase, from the phrase on where more than
    `_BOILERPLATE_LEAD` characters precede it in its sentence: OCR glued it to the line before,
    "POORLY DIFFERENTIATED SQUAMOUS CELL CARCINOMA0-7BY is signature ,Iattest that the above
    diagnosis is based on ...")."""
    text = _CLUTTER_LINE_RE.sub("", text)
    text = _without_qc_form(text, blank=False)
    cuts = []
    for match in _BOILERPLATE_RE.finditer(text):
        start = max(text.rfind(".", 0, match.start()), text.rfind("\n", 0, match.start())) + 1
        if match.start() - start > _BOILERPLATE_LEAD:
            start = match.start()
        ends = [i for i in (text.find(".", match.end()), text.find("\n", match.end())) if i >= 0]
        end = min(ends) + 1 if ends else len(text)
        if cuts and start < cuts[-1][1]:
            start = cuts[-1][0]
            cuts.pop()
        cuts.append((start, end))
    if not cuts:
        return text
    pieces, last = [], 0
    for start, end in cuts:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def specimen_parts(text: str) -> list[tuple[str, int, int]]:
    """(label, start, end) of each specimen part of raw diagnosis text, in text order; [] when the
    text has fewer than two parts. Lettered parts win over numbered ones; a numbered list whose
    items are mostly synoptic items ("1. Tumor type: ...") is not a list of parts."""
    lettered: list[tuple[int, str]] = []
    numbered: list[tuple[int, str, bool]] = []
    for match in _PART_MARKER_RE.finditer(text):
        label = (match.group(1) or match.group(2) or match.group(3)).lower()
        if match.group(3) is not None or (match.group(1) is not None and label.isdigit()):
            numbered.append((match.start(), label, _SYNOPTIC_ITEM_RE.match(text, match.end()) is not None))
        else:
            lettered.append((match.start(), label))
    marks: list[tuple[int, str]]
    if len({label for _, label in lettered}) >= 2:
        marks = lettered
    elif len({label for _, label, _ in numbered}) >= 2 and \
            sum(item for _, _, item in numbered) * 2 < len(numbered):
        marks = [(start, label) for start, label, item in numbered if not item]
    else:
        return []
    parts = []
    for index, (start, label) in enumerate(marks):
        end = marks[index + 1][0] if index + 1 < len(marks) else len(text)
        parts.append((label, start, end))
    return parts


__all__ = ["Section", "read_spans", "strip_clutter", "specimen_parts"]
