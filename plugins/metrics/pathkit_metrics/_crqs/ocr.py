"""OCR spelling repair for CRQS: a token OCR damaged is read as the one clinical word it stands for.

A token of prepared text (lower case) that is not itself a known word is repaired towards the
clinical words (the words of the built-in vocabulary's terms and of the field rules, `FIELD_WORDS`)
in three steps, each accepted only when it leads to exactly one clinical word:

1. *OCR's glyph confusions undone* (`CONFUSIONS`: "rn" read for "m", "ii" for "n" or "u", "cl" for
   "d", a digit for a letter, ...): "carcinorna", "adenocarciiioma" and "1ymphovascular" are one
   confusion from a clinical word, though two edits away;
2. *a fuzzy match* (`rapidfuzz`'s Levenshtein distance over the clinical words): one edit for a
   token of `MIN_LENGTH` letters or more ("olioblastoma"), two for one of `TWO_EDITS_LENGTH`;
3. *a word OCR broke* ("adeno carcinoma", "squa mous") is read as the clinical word its two pieces
   make, where at most one piece is a known word; a token that is a clinical word glued to a short
   word (`GLUE_WORDS`) or to another clinical word, in one way only ("differentiatedwith"), is read
   as the two words.

With two or more candidates ("serous"/"serosa" both one edit from "serousa") a token is left as
written; ordinary words near a clinical word ("capillary" / "papillary") are listed in
`KNOWN_WORDS` so they are never "corrected". The confusions are OCR's substitution errors of
similar-looking glyphs (Kukich 1992, "Techniques for automatically correcting words in text",
ACM Computing Surveys 24(4)), the pairs chosen from the development half of the TCGA reports.
"""


from __future__ import annotations

from collections.abc import Iterable

from pathkit_metrics._crqs.lazy_pattern import lazy

MIN_LENGTH = 7
TWO_EDITS_LENGTH = 11
# what OCR reads for a glyph or glyph pair -> what was printed
CONFUSIONS = (("rn", "m"), ("ii", "n"), ("ii", "u"), ("cl", "d"), ("vv", "w"), ("1", "l"), ("1", "i"), ("0", "o"),
              ("5", "s"), ("l", "i"), ("i", "l"), ("c", "e"), ("e", "c"), ("b", "h"), ("q", "g"), ("8", "b"))

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
    # real words of the REG and development-half TCGA reports one edit from another clinical term
    "endometriosis", "endometritis", "cerebriform", "ectocervical", "exocervical", "pharyngectomy", "microcystic",
    "multilocular", "functional", "paravesical", "perineuronal", "mesothelium", "extrahepatic",
    "granulosa", "microadenoma", "modular", "identifiers", "sarcomatous", "proliferation", "lymphocytes",
    "pathologist", "significance", "significantly",
))

# Short words OCR glues onto a clinical word ("differentiatedwith", "ofcarcinoma"): a token that is a
# clinical word and one of these, or two clinical words, is read as the two words.
GLUE_WORDS = frozenset((
    "with", "and", "of", "the", "in", "to", "for", "or", "by", "at", "on", "from", "is", "are", "no", "not",
    "reported", "see", "type", "grade",
))
_MIN_GLUED_PART = 6  # the clinical word of a glued pair has at least this many letters

_TOKEN_RE = lazy(r"[a-z0-9]*[a-z][a-z0-9]*")
_NEVER_JOINED = frozenset(("no", "not", "non", "in", "un", "of", "and", "or", "the", "with"))


class SpellingRepair:
    """Confusion-aware repair of tokens towards a set of clinical words (the module docstring)."""

    def __init__(self, words: Iterable[str], known: Iterable[str] = ()) -> None:
        self.words = frozenset(w for w in words if len(w) >= MIN_LENGTH - 1 and w.isalpha())
        self.known = frozenset(known) | self.words
        self._choices = sorted(self.words)
        self._memo: dict[str, str | None] = {}

    def _unique(self, candidates: Iterable[str]) -> str | None:
        found = set(candidates)
        return next(iter(found)) if len(found) == 1 else None

    def _unconfused(self, token: str) -> str | None:
        """The one clinical word that undoing one glyph confusion (or every digit) of `token` gives."""
        found = []
        for read, printed in CONFUSIONS:
            at = token.find(read)
            while at >= 0:
                candidate = token[:at] + printed + token[at + len(read):]
                if candidate in self.words:
                    found.append(candidate)
                at = token.find(read, at + 1)
        if not found and not token.isalpha():
            letters = token.translate(_DIGIT_LETTERS)
            found = [letters] if letters in self.words else [] if not letters.isalpha() else [
                c for c in [self._fuzzy(letters)] if c]
        return self._unique(found)

    def _fuzzy(self, token: str) -> str | None:
        """The one clinical word nearest `token` within one edit (two for a long token), or None."""
        if len(token) < MIN_LENGTH or not token.isalpha():
            return None
        from rapidfuzz import process  # imported on the first long report's first unknown word
        from rapidfuzz.distance import Levenshtein

        limit = 2 if len(token) >= TWO_EDITS_LENGTH else 1
        matches = process.extract(token, self._choices, scorer=Levenshtein.distance, score_cutoff=limit,
                                  limit=None)
        if not matches:
            return None
        best = min(m[1] for m in matches)
        return self._unique(m[0] for m in matches if m[1] == best)

    def correction(self, token: str) -> str | None:
        """The one clinical word `token` is an OCR misreading of, or None."""
        if token in self.known:
            return None
        if token in self._memo:
            return self._memo[token]
        fixed = self._unconfused(token) or self._unglued(token) or self._fuzzy(token)
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

    def _joined(self, head: str, tail: str) -> str | None:
        """The clinical word a word broken in two ("adeno carcinoma") stands for, or None."""
        if head in _NEVER_JOINED or tail in _NEVER_JOINED or (head in self.known and tail in self.known):
            return None
        key = head + " " + tail
        if key not in self._memo:
            word = head + tail
            self._memo[key] = word if word in self.words else self._unconfused(word)
        return self._memo[key]

    def repair(self, text: str) -> str:
        """`text` (prepared, lower case) with every repairable token replaced."""
        tokens = [(m.start(), m.end(), m.group(0)) for m in _TOKEN_RE.finditer(text)]
        out, last, i = [], 0, 0
        while i < len(tokens):
            start, end, token = tokens[i]
            if i + 1 < len(tokens) and text[end:tokens[i + 1][0]] == " " and len(token) >= 2:
                joined = self._joined(token, tokens[i + 1][2])
                if joined is not None:
                    out.append(text[last:start] + joined)
                    last, i = tokens[i + 1][1], i + 2
                    continue
            if token not in self.known and (len(token) >= MIN_LENGTH or not token.isalpha()):
                fixed = self.correction(token)
                if fixed is not None:
                    out.append(text[last:start] + fixed)
                    last = end
            i += 1
        out.append(text[last:])
        return "".join(out)


_DIGIT_LETTERS = str.maketrans("0158", "olsb")


def clinical_words(phrases: Iterable[str]) -> set[str]:
    """The words of `phrases` and of `FIELD_WORDS`."""
    words = set(FIELD_WORDS)
    for phrase in phrases:
        words.update(phrase.split())
    return words


__all__ = ["SpellingRepair", "clinical_words", "CONFUSIONS", "FIELD_WORDS", "GLUE_WORDS", "KNOWN_WORDS", "MIN_LENGTH"]
