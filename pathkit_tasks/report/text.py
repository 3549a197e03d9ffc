"""Report text normalisation shared by report datasets (references) and report tokenizers (targets).

Two styles, after PathBench's tokenizer (surykntsingh/PathBench; docs/report-generation.md):

- ``"none"``: the text is kept exactly as released (REG 2025: short, semi-structured reports
  whose line breaks and indentation carry structure).
- ``"pathbench"``: the cleaning PathBench applies to TCGA and HistAI reports, as its current
  tokenizer does it (``clean_report_brca_v2`` of surykntsingh/PathBench at the revision that added
  HistGen and BiGen, 65863bb, unchanged since): characters that cannot be UTF-8 encoded dropped,
  list numbering removed, whitespace collapsed, lower-cased, split into sentences at ". ",
  ``# , ? ; * ! ^ & _ : [ ] { }`` and quotes and backslashes stripped from each sentence, and the
  sentences re-joined as ``"s1 . s2 ."``. Sizes stay as written and ``+ ( ) -`` stay (an older
  revision replaced sizes by "x units" and stripped those four; the current one does neither).
  Unlike PathBench, a number followed by a period is removed only where it is a list marker
  (text or line start, or after ".", ":" or ";"), so "grade 2." keeps its grade and "3.5 cm"
  its size (PathBench's ``\\b([1-9]|1[0-4])\\.`` turns them into "grade" and " 5 cm").

Both are idempotent (cleaning cleaned text changes nothing), so a dataset can clean its
references and a tokenizer can clean again without drift.
"""

from __future__ import annotations

import re

from pathkit_core.contracts import PathkitError

CLEANING_STYLES: tuple[str, ...] = ("none", "pathbench")

# "1." to "14." used as list markers: at the start of the text or of a line, or right after
# ".", ":" or ";". Elsewhere ("grade 2.") the number is content; a digit after the period is a decimal.
_LIST_MARKER = re.compile(r"(?:^|(?<=\n)|(?<=[.:;]))[ \t]*(?:[1-9]|1[0-4])\.(?!\d)\s*")
_SENTENCE_NOISE = re.compile(r"[#,?;*!^&_:\[\]{}\"'\\]")
_SPACES = re.compile(r"\s+")


def invalid_text_reason(text: object) -> str | None:
    """Why a report text is unusable (not a string, empty, not encodable as UTF-8), or None."""
    if not isinstance(text, str):
        return f"report is {type(text).__name__}, not text"
    if not text.strip():
        return "report is empty"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"report is not valid UTF-8 text (character {exc.start}: {text[exc.start]!r})"
    if "\ufffd" in text:
        return "report contains U+FFFD replacement characters (it was decoded from non-UTF-8 bytes)"
    return None


def _clean_pathbench(text: str) -> str:
    text = text.encode("utf-8", "ignore").decode("utf-8")
    text = _LIST_MARKER.sub(" ", text)
    text = _SPACES.sub(" ", text)
    text = _SPACES.sub(" ", text).strip().lower() + " "
    sentences = []
    for sentence in text.split(". "):
        sentence = _SPACES.sub(" ", _SENTENCE_NOISE.sub("", sentence)).strip()
        if sentence:
            sentences.append(sentence)
    return " . ".join(sentences) + " ." if sentences else ""


def clean_report(text: str, style: str = "none") -> str:
    """`text` normalised with cleaning `style` (one of CLEANING_STYLES)."""
    if style == "none":
        return text
    if style == "pathbench":
        return _clean_pathbench(text)
    raise PathkitError(f"unknown report cleaning {style!r}; known: {', '.join(CLEANING_STYLES)}")
