"""OCR spelling repair for CRQS: a word one edit away from exactly one clinical word is read as that word.

OCR drops, doubles, swaps or misreads single letters ("olioblastoma", "carcinorna" is two edits
and stays). A token of prepared text (lower case) is corrected when it is not itself a known
word, is at least `MIN_LENGTH` letters long, and lies within one edit (insertion, deletion,
substitution or transposition of neighbours) of exactly one clinical word; with two or more
candidates ("serous"/"serosa" both one edit from "serousa") it is left as written. Clinical
words are the words of the built-in vocabulary's terms and of the field rules (`FIELD_WORDS`);
ordinary words one edit from a clinical word ("capillary" / "papillary") are listed in
`KNOWN_WORDS` so they are never "corrected". A token no edit repairs that is a clinical word
glued to a short word (`GLUE_WORDS`) or to another clinical word, in one way only
("differentiatedwith"), is read as the two words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pathkit_metrics._crqs.lazy_pattern import lazy

MIN_LENGTH = 7

# Words the field rules read (grades, margins, invasion, nodes, stage, sites, procedures).
FIELD_WORDS = (
    "differentiated", "undifferentiated", "differentiation", "lymphovascular", "angiolymphatic", "perineural",
    "invasion", "invasive", "invading", "infiltrating", "margins", "negative", "positive", "involved",
    "uninvolved", "identified", "metastatic", "metastasis", "metastases", "carcinoma", "adenocarcinoma",
    "urothelial", "squamous", "papillary", "necrosis", "chromophobe", "endometrioid", "glioblastoma",
    "astrocytoma", "oligodendroglioma", "hepatocellular", "cholangiocarcinoma", "sarcomatoid", "keratinizing",
    "muscularis", "propria", "perivesical", "extraprostatic", "extension", "seminal", "vesicle", "lymphatic",
    "vascular", "moderately", "poorly", "nuclear", "fuhrman", "gleason", "pattern", "lymph", "present",
    "absent", "resection", "nephrectomy", "prostatectomy", "cystectomy", "hysterectomy", "oophorectomy",
    "salpingo", "pancreaticoduodenectomy", "hepatectomy", "lobectomy", "colectomy", "laryngectomy",
    "glossectomy", "craniotomy", "ovary", "fallopian", "endometrium", "myometrium", "myometrial", "cervix",
    "bladder", "prostate", "kidney", "pancreas", "rectum", "sigmoid", "tongue", "larynx", "tonsil",
    "temporal", "frontal", "parietal", "occipital", "mucinous", "serous", "clear", "transitional",
)

# Ordinary words of pathology reports one edit away from a clinical word: never corrected.
KNOWN_WORDS = frozenset((
    "capillary", "capillaries", "involves", "involving", "invades", "invaded", "carcinomas", "margined",
    "serosal", "serosa", "mucosal", "identify", "positively", "negatively", "presents", "presented",
    "extensions", "resections", "vesicles", "lymphoid", "patterns", "prostatic", "nuclei", "cervical",
    "temporally", "metastasize", "metastasized", "differentiate", "invasions", "ovaries", "kidneys",
    "tonsils", "involve", "absence", "present", "presence", "radical", "typical", "pyloric", "identifier",
    "diseased", "tubulare",
))

# Short words OCR glues onto a clinical word ("differentiatedwith", "ofcarcinoma"): a token that is a
# clinical word and one of these, or two clinical words, is read as the two words.
GLUE_WORDS = frozenset((
    "with", "and", "of", "the", "in", "to", "for", "or", "by", "at", "on", "from", "is", "are", "no", "not",
    "reported", "see", "type", "grade",
))
_MIN_GLUED_PART = 6  # the clinical word of a glued pair has at least this many letters

_TOKEN_RE = lazy(rf"[a-z]{{{MIN_LENGTH},}}")


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}


def _one_edit(a: str, b: str) -> bool:
    """Whether a and b (a != b) are one insertion, deletion, substitution or neighbour swap apart."""
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    short, long_ = (a, b) if la < lb else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


class SpellingRepair:
    """One-edit repair of tokens towards a set of clinical words (see the module docstring)."""

    def __init__(self, words: Iterable[str], known: Iterable[str] = ()) -> None:
        self.words = frozenset(w for w in words if len(w) >= MIN_LENGTH - 1 and w.isalpha())
        self.known = frozenset(known) | self.words
        # the deletion index is made on the first word to repair: a run of short (REG) reports never
        # repairs a word, and a fresh process then saves building it (20-35 ms)
        self._index: dict[str, set[str]] | None = None
        self._memo: dict[str, str | None] = {}

    def _deletion_index(self) -> dict[str, set[str]]:
        """Each clinical word and each of its one-letter deletions -> the words it comes from."""
        index: dict[str, set[str]] = {}
        for word in self.words:
            index.setdefault(word, set()).add(word)
            for deleted in _deletions(word):
                index.setdefault(deleted, set()).add(word)
        self._index = index
        return index

    def correction(self, token: str) -> str | None:
        """The one clinical word `token` is a one-edit misspelling of, or None."""
        if token in self.known:
            return None
        if token in self._memo:
            return self._memo[token]
        index = self._index if self._index is not None else self._deletion_index()
        candidates: set[str] = set(index.get(token, ()))
        for deleted in _deletions(token):
            candidates |= index.get(deleted, set())
        candidates = {c for c in candidates if c != token and _one_edit(c, token)}
        fixed = next(iter(candidates)) if len(candidates) == 1 else self._unglued(token)
        if len(self._memo) > 200_000:
            self._memo.clear()
        self._memo[token] = fixed
        return fixed

    def _unglued(self, token: str) -> str | None:
        """"a b" for a token that is two words OCR glued together: a clinical word of at least
        `_MIN_GLUED_PART` letters and a short word (`GLUE_WORDS`) or another clinical word; None
        when no split, or more than one, reads so."""
        splits = []
        for cut in range(2, len(token) - 1):
            head, tail = token[:cut], token[cut:]
            head_clinical = len(head) >= _MIN_GLUED_PART and head in self.words
            tail_clinical = len(tail) >= _MIN_GLUED_PART and tail in self.words
            if (head_clinical and (tail in GLUE_WORDS or tail_clinical)) or (tail_clinical and head in GLUE_WORDS):
                splits.append(f"{head} {tail}")
        return splits[0] if len(splits) == 1 else None

    def repair(self, text: str) -> str:
        """`text` (prepared, lower case) with every repairable token replaced."""

        known, memo = self.known, self._memo

        def replace(match: re.Match[str]) -> str:
            token = match.group(0)
            if token in known:  # most tokens: answered here, without a call
                return token
            fixed = memo[token] if token in memo else self.correction(token)
            return token if fixed is None else fixed

        return _TOKEN_RE.sub(replace, text)


def clinical_words(phrases: Iterable[str]) -> set[str]:
    """The words of `phrases` and of `FIELD_WORDS`."""
    words = set(FIELD_WORDS)
    for phrase in phrases:
        words.update(phrase.split())
    return words


__all__ = ["SpellingRepair", "clinical_words", "FIELD_WORDS", "GLUE_WORDS", "KNOWN_WORDS", "MIN_LENGTH"]
