"""Metric validity: how well each report metric separates clinically concordant from clinically different reports.

From the real REG 2025 reports (`$PATHKIT_REALDATA/reports/reg2025_pathbench_splits.json`,
default `../shared/data`), every distinct report is turned into graded prediction/reference pairs:

- concordant (a pathologist would sign out the same report): the report itself; a rewording
  that keeps every clinical fact (synonyms, abbreviations, word order, equivalent notations);
  its numbered list in another order; the report on one line; other words for the procedure
  (colonoscopy/colonoscopic, ultrasound-/sono-guided, vacuum-assisted/Mammotome); short forms
  (NST, DCIS, ADH, NSCLC, ...); "No evidence of malignancy." added to a benign report; another
  wording of a tumour's origin;
- clinically different: one field omitted or changed (grade, also in a report written on one
  line; Gleason pattern; diagnosis; in situ <-> invasive), a list item dropped or replaced by
  another lesion, the diagnosis dropped, the origin of a metastasis changed, a benign report
  made malignant.

**Held-out protocol.** The distinct reports are split in two halves by a hash of their skeleton
(the text lower-cased with numbers, Roman numerals and grade words masked, so reports that
differ only in a grade or a percentage fall in the same half): sha256(skeleton), first byte
even = development half, odd = held-out half. CRQS's rules were developed on the development
half only; the figures in docs/metrics.md are measured on the held-out half (`--half heldout`,
the default). CRQS is scored with the vocabulary learned from the train split (the protocol), and
with the built-in vocabulary only (what a user without train reports gets).

For each metric the script prints the AUROC of concordant rewrites (identical pairs left out,
being trivially perfect for every metric) against clinically different pairs, overall and per
kind of error, and the mean score of each kind of concordant rewrite.

    .venv/bin/python benchmarks/metric_validity.py [--half heldout|dev|all] [--split all] [--no-meteor]
                                                   [--resamples 200] [--show 2]

With `--tcga`, the same measure on the real TCGA OCR reports
(`$PATHKIT_REALDATA/reports/tcga_ocr_reports_sample.json`): graded pairs from
`benchmarks/tcga_report_pairs.py` (its docstring lists the rewrite kinds), halves by report
(sha256 of the TCGA patient id), CRQS with the TCGA schema against METEOR, BLEU-4 and ROUGE-L;
`--tcga-reports N` scores a fixed sample of N reports of the half, `--organs BLADDER,KIDNEY` some
organ groups only; it also counts the clinically wrong pairs that CRQS scores 1.0, and prints CRQS's
AUROC on all pairs and in-schema (concordant pairs against the errors of a field of the paper's
Table 11 schema), the share of unscored pairs, and a per-kind table (each equivalent kind against
every changed pair, every equivalent pair against each changed kind).

    .venv/bin/python benchmarks/metric_validity.py --tcga --half heldout [--no-nlg] [--tcga-reports 30]
                                                   [--meteor-timeout 3600]

METEOR 1.5 on pairs of 5,000-character reports is slow (about 600 s for the 259 pairs of 30 reports
on a shared 2-core machine), hence the sample and the long wait allowed for one answer of the jar.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

Rewrite = tuple[str, Callable[[str], str | None]]


def _sub(
    pattern: str, replacement: str | Callable[[re.Match[str]], str], flags: int = 0
) -> Callable[[str], str | None]:
    compiled = re.compile(pattern, flags)

    def apply(text: str) -> str | None:
        new = compiled.sub(replacement, text, count=1)
        return new if new != text else None

    return apply


# ----------------------------------------------------------------------------- paraphrases
# Each keeps every clinical fact; all that apply to a report are applied together.
_ROMAN = {"I": "1", "II": "2", "III": "3"}
PARAPHRASES: list[Rewrite] = [
    ("nst->ductal", _sub(r"Invasive carcinoma of no special type", "Invasive ductal carcinoma")),
    ("roman grade", _sub(r"\bgrade (III|II|I)\b", lambda m: f"histologic grade {_ROMAN[m.group(1)]}")),
    ("nottingham order", _sub(r"\(Tubule formation: (\d), Nuclear grade: (\d), Mitoses: (\d)\)",
                              r"(Nuclear grade: \2, Tubule formation: \1, Mitoses: \3)")),
    ("differentiation first", _sub(r"Adenocarcinoma, (well|moderately|poorly) differentiated",
                                   lambda m: f"{m.group(1).capitalize()} differentiated adenocarcinoma")),
    ("dysplasia comma", _sub(r" with (low|high) grade dysplasia", r", \1-grade dysplasia")),
    ("gleason notation", _sub(r"Gleason's score (\d+) \((\d)\+(\d)\)", r"Gleason score \2+\3=\1")),
    ("isup", _sub(r"grade group (\d)", r"ISUP grade group \1")),
    ("volume phrase", _sub(r"tumor volume: +(\d+)%", r"tumor involving \1% of the tissue")),
    ("hsil abbreviation", _sub(r"High-grade squamous intraepithelial lesion \(HSIL; CIN (\d)\)", r"HSIL (CIN \1)")),
    ("lsil abbreviation", _sub(r"Low-grade squamous intraepithelial lesion \(LSIL; CIN 1\)", "LSIL (CIN 1)")),
    ("negative wording", _sub(r"No tumor present", "Negative for malignancy")),
    ("urothelial grade first", _sub(r"Non-invasive papillary urothelial carcinoma, (high|low) grade",
                                    lambda m: f"{m.group(1).capitalize()} grade non-invasive papillary "
                                              "urothelial carcinoma")),
    ("muscularis", _sub(r"with involvement of muscle proper", "invading the muscularis propria")),
    ("lamina propria", _sub(r"with involvement of subepithelial connective tissue", "invading the lamina propria")),
    ("muscle included", _sub(r"Note\) The specimen includes muscle proper\.", "Muscularis propria is present.")),
    ("muscle not included", _sub(r"Note\) The specimen does not include muscle proper\.",
                                 "Muscularis propria is not identified.")),
    ("typo", _sub(r"interstinal", "intestinal")),
    ("dcis abbreviation", _sub(r"Ductal carcinoma in situ", "DCIS")),
    ("nuclear grade word", _sub(r"- Nuclear grade: ?(High|Intermediate|Low)",
                                lambda m: f"- {m.group(1)} nuclear grade")),
    ("necrosis absent", _sub(r"Necrosis: Absent", "No necrosis")),
    ("necrosis present", _sub(r"Necrosis: Present \((\w+)\)", lambda m: f"{m.group(1).capitalize()} necrosis present")),
    ("microcalcification", _sub(r"\bMicrocalcification\b", "Microcalcifications present")),
]

# ----------------------------------------------------------------------------- errors
OMISSIONS: list[Rewrite] = [
    ("omit grade", _sub(r",? grade (III|II|I|[123])\b(?! \()", "")),
    ("omit nottingham grade", _sub(r", grade (III|II|I) (?=\()", " ")),
    ("omit differentiation", _sub(r", (well|moderately|poorly) differentiated", "")),
    ("omit dysplasia", _sub(r" with (low|high) grade dysplasia", "")),
    ("omit mitoses", _sub(r", Mitoses: \d", "")),
    ("omit grade group", _sub(r", grade group \d( \(Gleason pattern 4: \d+%\))?", "")),
    ("omit tumor volume", _sub(r", tumor volume: +\d+%", "")),
    ("omit in situ component", _sub(r"\n +2\. (Ductal|Urothelial) carcinoma in situ *", "")),
    ("omit muscle note", _sub(r"\n+ *Note\) The specimen (does not include|includes) muscle proper\.", "")),
    ("omit urothelial grade", _sub(r", (high|low) grade\b", "")),
    ("omit necrosis", _sub(r"\n +- Necrosis: [^\n]*", "")),
]
_NEXT_ROMAN = {"I": "II", "II": "III", "III": "II"}
GRADE_CHANGES: list[Rewrite] = [
    ("grade roman", _sub(r"\bgrade (III|II|I)\b", lambda m: f"grade {_NEXT_ROMAN[m.group(1)]}")),
    ("urothelial tier", _sub(r"carcinoma, (high|low) grade",
                             lambda m: "carcinoma, " + ("low" if m.group(1) == "high" else "high") + " grade")),
    ("dysplasia tier", _sub(r"(low|high) grade dysplasia",
                            lambda m: ("high" if m.group(1) == "low" else "low") + " grade dysplasia")),
    ("differentiation", _sub(r"(well|moderately|poorly) differentiated",
                             lambda m: ("poorly" if m.group(1) != "poorly" else "well") + " differentiated")),
    ("neuroendocrine grade", _sub(r"grade ([12])\b", lambda m: f"grade {3 - int(m.group(1))}")),
]
_GLEASON_SWAP = {("3", "4"): ("4", "3", "3"), ("4", "3"): ("3", "4", "2"), ("3", "3"): ("4", "4", "4"),
                 ("4", "4"): ("3", "3", "1"), ("4", "5"): ("3", "4", "2"), ("5", "4"): ("3", "3", "1"),
                 ("5", "5"): ("3", "4", "2"), ("3", "5"): ("3", "3", "1"), ("5", "3"): ("3", "3", "1")}


def _gleason_change(text: str) -> str | None:
    match = re.search(r"Gleason's score (\d+) \((\d)\+(\d)\), grade group (\d)", text)
    if match is None or (match.group(2), match.group(3)) not in _GLEASON_SWAP:
        return None
    primary, secondary, group = _GLEASON_SWAP[(match.group(2), match.group(3))]
    total = int(primary) + int(secondary)
    replacement = f"Gleason's score {total} ({primary}+{secondary}), grade group {group}"
    return text[:match.start()] + replacement + text[match.end():]


GLEASON_CHANGES: list[Rewrite] = [("gleason", _gleason_change)]
DIAGNOSIS_CHANGES: list[Rewrite] = [
    ("lung adeno->scc", _sub(r"(?<=;\n  )Adenocarcinoma\b(?!,)", "Squamous cell carcinoma")),
    ("scc->adeno", _sub(r"(?<=;\n  )Squamous cell carcinoma", "Adenocarcinoma")),
    ("small cell->scc", _sub(r"Small cell carcinoma", "Squamous cell carcinoma")),
    ("gi adeno->tubular adenoma", _sub(r"Adenocarcinoma, (well|moderately|poorly) differentiated",
                                       "Tubular adenoma with high grade dysplasia")),
    ("tubular->tubulovillous", _sub(r"Tubular adenoma", "Tubulovillous adenoma")),
    ("nst->lobular", _sub(r"Invasive carcinoma of no special type", "Invasive lobular carcinoma")),
    ("dcis->lcis", _sub(r"Ductal carcinoma in situ", "Lobular carcinoma in situ")),
    ("hsil->lsil", _sub(r"High-grade squamous intraepithelial lesion \(HSIL; CIN \d\)",
                        "Low-grade squamous intraepithelial lesion (LSIL; CIN 1)")),
    ("lsil->hsil", _sub(r"Low-grade squamous intraepithelial lesion \(LSIL; CIN 1\)",
                        "High-grade squamous intraepithelial lesion (HSIL; CIN 2)")),
    ("no tumor->adenocarcinoma", _sub(r"No tumor present", "Acinar adenocarcinoma")),
    ("gastritis->adenoma", _sub(r"Chronic (active )?gastritis", "Tubular adenoma")),
    ("inflammation->adenocarcinoma", _sub(r"Chronic nonspecific inflammation", "Adenocarcinoma")),
    ("malt->dlbcl", _sub(r"Extranodal marginal zone B cell lymphoma of MALT type", "Diffuse large B cell lymphoma")),
    ("fibroadenoma->phyllodes", _sub(r"\bFibroadenoma\b", "Phyllodes tumor")),
    ("papillary neoplasm->nst", _sub(r"Papillary neoplasm", "Invasive carcinoma of no special type")),
    ("nsclc->small cell", _sub(r"Non-small cell carcinoma, favor \w+( \w+)*? carcinoma", "Small cell carcinoma")),
]
IN_SITU_CHANGES: list[Rewrite] = [
    ("dcis->invasive", _sub(r"(?<![\d] )Ductal carcinoma in situ(?=\n  - Type)",
                            "Invasive carcinoma of no special type")),
    ("dcis item->invasive", _sub(r"Ductal carcinoma in situ", "Invasive carcinoma of no special type")),
    ("nst->dcis", _sub(r"Invasive carcinoma of no special type, grade (III|II|I) \([^)]*\)",
                       "Ductal carcinoma in situ")),
    ("noninvasive->invasive", _sub(r"Non-invasive papillary urothelial carcinoma",
                                   "Invasive papillary urothelial carcinoma")),
    ("invasive->cis", _sub(r"Invasive urothelial carcinoma,\s+with involvement of [a-z ]+",
                           "Urothelial carcinoma in situ")),
    ("cis->invasive", _sub(r"Urothelial carcinoma in situ", "Invasive urothelial carcinoma")),
    ("ais->adenocarcinoma", _sub(r"adenocarcinoma in situ \(AIS\)", "adenocarcinoma")),
    ("hsil->scc", _sub(r"High-grade squamous intraepithelial lesion \(HSIL; CIN \d\)",
                       "Invasive squamous cell carcinoma")),
]

def paraphrase(report: str) -> str | None:
    text, changed = report, False
    for _, rule in PARAPHRASES:
        new = rule(text)
        if new is not None:
            text, changed = new, True
    return text if changed else None


# ----------------------------------------------------------------------------- more concordant rewrites
# Each is its own kind of pair, so that each can be read on its own.
_ITEM_RE = re.compile(r"(?m)^( *)(\d)\. ")


def _list_items(report: str) -> tuple[str, list[str], str] | None:
    """(head, top-level numbered items, tail note) of a REG list report, or None."""
    body, _, note = report.partition("\n\nNote)")
    marks = list(_ITEM_RE.finditer(body))
    if len(marks) < 2 or [int(m.group(2)) for m in marks] != list(range(1, len(marks) + 1)):
        return None
    indent = {m.group(1) for m in marks}
    if len(indent) != 1:
        return None
    head = body[:marks[0].start()]
    items = [body[m.end():(marks[i + 1].start() if i + 1 < len(marks) else len(body))].rstrip("\n ")
             for i, m in enumerate(marks)]
    return head, items, ("\n\nNote)" + note) if note else ""


def _join_items(head: str, items: list[str], tail: str) -> str:
    return head + "\n".join(f"  {i}. {item}" for i, item in enumerate(items, start=1)) + tail


def reorder_list(report: str) -> str | None:
    parts = _list_items(report)
    if parts is None:
        return None
    head, items, tail = parts
    return _join_items(head, items[1:] + items[:1], tail)


def one_line(report: str) -> str | None:
    flat = " ".join(report.split())
    return flat if flat != " ".join(report.split(" ")) and flat != report else None


PROCEDURE_WORDS: list[Rewrite] = [
    ("colonoscopy", _sub(r"\bcolonoscopic\b", "colonoscopy")),
    ("endoscopy", _sub(r"\bendoscopic biopsy\b", "endoscopy biopsy")),
    ("colposcopy", _sub(r"\bcolposcopic biopsy\b", "colposcopy biopsy")),
    ("ultrasound", _sub(r"\bsono-guided\b", "ultrasound-guided")),
    ("core needle", _sub(r"\bcore-needle biopsy\b", "core needle biopsy")),
    ("vacuum-assisted", _sub(r"\bmammotome biopsy\b", "vacuum-assisted biopsy")),
]
SHORT_FORMS: list[Rewrite] = [
    ("nst", _sub(r"Invasive carcinoma of no special type", "Invasive carcinoma, NST")),
    ("dcis", _sub(r"Ductal carcinoma in situ", "DCIS")),
    ("lcis", _sub(r"Lobular carcinoma in situ", "LCIS")),
    ("adh", _sub(r"Atypical ductal hyperplasia", "ADH")),
    ("fea", _sub(r"Flat epithelial atypia", "FEA")),
    ("udh", _sub(r"[Uu]sual ductal hyperplasia", "UDH")),
    ("nsclc", _sub(r"Non-small cell carcinoma", "NSCLC")),
    ("gist", _sub(r"Gastrointestinal stromal tumor", "GIST")),
    ("net", _sub(r"Neuroendocrine tumor", "NET")),
    ("scc", _sub(r"(?<=;\n  )Squamous cell carcinoma", "SCC")),
    ("malt", _sub(r"Extranodal marginal zone B cell lymphoma of MALT type", "MALT lymphoma")),
]
_NOT_BENIGN = re.compile(r"carcinoma|lymphoma|melanoma|sarcoma|malignan|tumor|neoplasm|adenoma|dysplasia|atypi|"
                         r"in situ|intraepithelial|\bCIN\b|HSIL|LSIL|metasta|polyp", re.IGNORECASE)


def benign_negative(report: str) -> str | None:
    """A benign report with "No evidence of malignancy." added (decided from its words)."""
    body = report.split(";", 1)[-1]
    if _NOT_BENIGN.search(body) or "No evidence" in body or not body.strip():
        return None
    return report.rstrip() + "\n  No evidence of malignancy."


ORIGIN_WORDING: list[Rewrite] = [
    ("of origin", _sub(r", from (\w+) primary", r", of \1 origin")),
    ("most likely", _sub(r", favor (\w+) primary", r", most likely of \1 origin")),
]
CONCORDANT: dict[str, list[Rewrite] | Callable[[str], str | None]] = {
    "paraphrase": paraphrase,  # all PARAPHRASES that apply, together
    "reordered list": reorder_list,
    "one line": one_line,
    "procedure words": PROCEDURE_WORDS,
    "short forms": SHORT_FORMS,
    "benign + negative": benign_negative,
    "origin wording": ORIGIN_WORDING,
}

# ----------------------------------------------------------------------------- more errors


def _grade_one_line(text: str) -> str | None:
    for _, rule in GRADE_CHANGES:
        new = rule(text)
        if new is not None:
            return one_line(new)
    return None


def drop_item(report: str) -> str | None:
    parts = _list_items(report)
    if parts is None:
        return None
    head, items, tail = parts
    return _join_items(head, items[:-1], tail) if len(items) > 2 else head + "  " + items[0] + tail


_OTHER_LESION = {"Atypical ductal hyperplasia": "Flat epithelial atypia"}


def replace_item(report: str) -> str | None:
    parts = _list_items(report)
    if parts is None:
        return None
    head, items, tail = parts
    last = items[-1].split("\n")[0].strip()
    other = _OTHER_LESION.get(last, "Atypical ductal hyperplasia" if report.startswith(("Breast", "Nipple"))
                              else "Chronic granulomatous inflammation")
    if other.lower() in report.lower():
        other = "Lobular carcinoma in situ"
    return _join_items(head, items[:-1] + [other], tail)


def drop_diagnosis(report: str) -> str | None:
    head = report.split(";", 1)[0]
    return head + ";" if ";" in report else None


_ORIGIN_SWAP = {"breast": "colon", "colon": "breast", "colorectal": "lung", "lung": "colorectal"}
ORIGIN_CHANGES: list[Rewrite] = [
    ("origin", _sub(r"\b(from|favor) (breast|colon|colorectal|lung) primary",
                    lambda m: f"{m.group(1)} {_ORIGIN_SWAP[m.group(2)]} primary")),
]


def benign_to_malignant(report: str) -> str | None:
    head, sep, body = report.partition(";")
    if not sep or _NOT_BENIGN.search(body) or not body.strip():
        return None
    organ = head.split(",")[0].strip().lower()
    malignant = {"breast": "Invasive carcinoma of no special type, grade II", "lung": "Adenocarcinoma",
                 "stomach": "Adenocarcinoma, moderately differentiated"}.get(organ, "Adenocarcinoma")
    return f"{head};\n  {malignant}"


ERRORS: dict[str, list[Rewrite] | Callable[[str], str | None]] = {
    "omitted": OMISSIONS,
    "grade": GRADE_CHANGES,
    "grade, one line": _grade_one_line,
    "gleason": GLEASON_CHANGES,
    "diagnosis": DIAGNOSIS_CHANGES,
    "in situ/invasive": IN_SITU_CHANGES,
    "list item dropped": drop_item,
    "list item replaced": replace_item,
    "diagnosis dropped": drop_diagnosis,
    "origin": ORIGIN_CHANGES,
    "benign -> malignant": benign_to_malignant,
}


def _options(family: list[Rewrite] | Callable[[str], str | None], report: str) -> list[str]:
    rules = family if isinstance(family, list) else [("", family)]
    return [out for _, rule in rules if (out := rule(report)) is not None and out != report]


def build_pairs(reports: list[str], seed: int) -> list[dict[str, str]]:
    """(prediction, reference, kind, correct) rows; one rewrite of each kind per report at most."""
    rng = random.Random(seed)
    rows = []
    for reference in reports:
        rows.append({"prediction": reference, "reference": reference, "kind": "identical", "correct": True})
        for table, correct in ((CONCORDANT, True), (ERRORS, False)):
            for kind, family in table.items():
                options = _options(family, reference)
                if options:
                    rows.append({"prediction": rng.choice(options), "reference": reference, "kind": kind,
                                 "correct": correct})
    return rows


# ----------------------------------------------------------------------------- held-out halves


def skeleton(report: str) -> str:
    """The report with numbers, Roman numerals and grade words masked: reports that differ only
    in a value share a skeleton, hence a half."""
    text = re.sub(r"\d+", "#", report.lower())
    text = re.sub(r"\b(?:iv|iii|ii|i)\b", "#", text)
    text = re.sub(r"\b(?:high|low|intermediate|well|moderately|poorly)\b", "~", text)
    return " ".join(text.split())


def half_of(report: str) -> str:
    return "heldout" if hashlib.sha256(skeleton(report).encode("utf-8")).digest()[0] % 2 else "dev"


def auroc(positive: list[float], negative: list[float]) -> float:
    """Probability that a correct pair outscores a wrong one (ties count one half)."""
    import numpy as np
    from scipy.stats import rankdata

    if not positive or not negative:
        return float("nan")
    scores = np.concatenate([np.asarray(positive, float), np.asarray(negative, float)])
    ranks = rankdata(scores)
    n_pos, n_neg = len(positive), len(negative)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def auroc_ci(positive: list[float], negative: list[float], resamples: int, seed: int) -> tuple[float, float]:
    import numpy as np

    from pathkit_sdk.bootstrap import bootstrap_statistic_ci

    scores = np.asarray(positive + negative, float)
    labels = np.asarray([1] * len(positive) + [0] * len(negative))

    def statistic(idx: np.ndarray) -> float:
        y, s = labels[idx], scores[idx]
        return auroc(list(s[y == 1]), list(s[y == 0]))

    return bootstrap_statistic_ci(statistic, len(scores), n_resamples=resamples, seed=seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("PATHKIT_REALDATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--split", default="all", choices=("train", "val", "test", "all"))
    parser.add_argument("--half", default="heldout", choices=("heldout", "dev", "all"))
    parser.add_argument("--no-meteor", action="store_true", help="leave METEOR out (no Java needed)")
    parser.add_argument("--no-nlg", action="store_true", help="CRQS only")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples for AUROC intervals (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=0, help="print this many example pairs per kind")
    parser.add_argument("--tcga", action="store_true",
                        help="the TCGA OCR report pairs (benchmarks/tcga_report_pairs.py) instead of REG")
    parser.add_argument("--organs", default="", help="TCGA only: comma-separated organ groups (default all)")
    parser.add_argument("--graded-reg", action="store_true",
                        help="with --tcga: the graded rules of tcga_report_pairs.py over the REG 2025 reports")
    parser.add_argument("--tcga-reports", type=int, default=0,
                        help="TCGA only: score the pairs of this many reports of the half (a fixed sample: the "
                             "first by sha256 of the patient id); 0 = all")
    parser.add_argument("--meteor-timeout", type=float, default=3600.0,
                        help="TCGA only: seconds METEOR may take for one answer (long reports are slow)")
    args = parser.parse_args(argv)
    if args.tcga:
        return run_tcga(args)

    from pathkit_metrics.crqs import CRQSMetric

    path = Path(args.data) / "reports" / "reg2025_pathbench_splits.json"
    if not path.is_file():
        print(f"error: {path} not found (set PATHKIT_REALDATA or --data)", file=sys.stderr)
        return 2
    splits = json.loads(path.read_text(encoding="utf-8"))
    train = [row["report"] for row in splits["train"]]
    chosen = [row["report"] for name in (("train", "val", "test") if args.split == "all" else (args.split,))
              for row in splits[name]]
    reports = sorted({r for r in chosen if args.half == "all" or half_of(r) == args.half})
    rows = build_pairs(reports, args.seed)
    predictions = [r["prediction"] for r in rows]
    references = [r["reference"] for r in rows]
    kinds = [r["kind"] for r in rows]
    correct = [r["correct"] for r in rows]
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    print(f"{len(reports)} distinct reports ({args.split} split, {args.half} half) -> {len(rows)} pairs: "
          + ", ".join(f"{k} {n}" for k, n in counts.items()))
    if args.show:
        for kind in counts:
            for row in [r for r in rows if r["kind"] == kind][: args.show]:
                print(f"[{kind}]\n  ref:  {row['reference']!r}\n  pred: {row['prediction']!r}")

    scores: dict[str, list[float]] = {}
    started = time.perf_counter()
    for label, context in (("CRQS", {"train_reports": train}), ("CRQS (built-in vocabulary)", {})):
        crqs = CRQSMetric().compute(predictions, references,
                                    context={"dataset": "reg2025", "bootstrap_resamples": 0, **context})
        scores[label] = [float("nan") if v is None else v for v in crqs.per_case.get_column("CRQS").to_list()]
    crqs_seconds = time.perf_counter() - started
    nlg_seconds = 0.0
    if not args.no_nlg:
        from pathkit_metrics.nlg import NLGMetric

        started = time.perf_counter()
        nlg = NLGMetric().compute(predictions, references, context={"options": {"meteor": not args.no_meteor}})
        for name in ("BLEU-1", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr"):
            if name in nlg.per_case.columns:
                scores[name] = nlg.per_case.get_column(name).to_list()
        nlg_seconds = time.perf_counter() - started

    concordant_kinds = [k for k in counts if k != "identical" and k in CONCORDANT]
    error_kinds = [k for k in counts if k in ERRORS]
    print()
    _auroc_table(scores, kinds, correct, concordant_kinds, error_kinds, args.resamples, args.seed)
    _means_table(scores, kinds, correct, concordant_kinds)
    print(f"\nCRQS scored {len(rows)} pairs twice in {crqs_seconds:.2f} s; nlg in {nlg_seconds:.2f} s")

    print("\nThe paper's Table 3 examples (published METEOR / CRQS in brackets):")
    for (reference, prediction, dataset), published in zip(TABLE3, ((0.4264, -0.0714), (0.0114, 0.9143)),
                                                           strict=True):
        crqs_value = CRQSMetric().compute([prediction], [reference], context={
            "dataset": dataset, "bootstrap_resamples": 0}).summary["CRQS"]
        meteor = "n/a"
        if not (args.no_meteor or args.no_nlg):
            from pathkit_metrics.nlg import NLGMetric

            value = NLGMetric().compute([prediction], [reference]).summary["METEOR"]
            meteor = f"{value:.4f}"
        print(f"  [{dataset}] METEOR {meteor} ({published[0]})  CRQS {crqs_value:.4f} ({published[1]})")
    return 0


def _auroc_table(scores: dict[str, list[float]], kinds: list[str], correct: list[bool], concordant_kinds: list[str],
                 error_kinds: list[str], resamples: int, seed: int) -> None:
    header = ["metric", "AUROC concordant vs different", "95% CI", *[f"vs {k}" for k in error_kinds]]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, values in scores.items():
        pos = [v for v, k in zip(values, kinds, strict=True) if k in concordant_kinds]
        neg = [v for v, c in zip(values, correct, strict=True) if not c]
        cells = [name, f"{auroc(pos, neg):.3f}"]
        if resamples:
            low, high = auroc_ci(pos, neg, resamples, seed)
            cells.append(f"{low:.3f}-{high:.3f}")
        else:
            cells.append("")
        for kind in error_kinds:
            wrong = [v for v, k in zip(values, kinds, strict=True) if k == kind]
            cells.append(f"{auroc(pos, wrong):.3f}")
        print(" | ".join(cells))


def _means_table(scores: dict[str, list[float]], kinds: list[str], correct: list[bool],
                 concordant_kinds: list[str]) -> None:
    """Mean score of each kind of concordant rewrite, and of the clinically different pairs."""
    header = ["metric", *[f"mean {k}" for k in concordant_kinds], "mean different"]
    print()
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, values in scores.items():
        cells = [name]
        for kind in concordant_kinds:
            chosen = [v for v, k in zip(values, kinds, strict=True) if k == kind]
            cells.append(f"{sum(chosen) / len(chosen):.3f}")
        neg = [v for v, c in zip(values, correct, strict=True) if not c]
        cells.append(f"{sum(neg) / len(neg):.3f}")
        print(" | ".join(cells))


def _reg_as_graded_records(path: Path, split: str) -> list[dict]:
    """The REG 2025 reports as records of the graded-pair builder (the report id stands for the
    patient: the halves are by report)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    splits = ("train", "val", "test") if split == "all" else (split,)
    return [{"ocr_text": r["report"], "patient_id": str(r["id"]), "organ_group": "REG"}
            for name in splits for r in data[name]]


def run_tcga(args: argparse.Namespace) -> int:
    """Graded pairs from the TCGA OCR reports, split by report (patient id)."""
    import tcga_report_pairs as tcga
    from pathkit_metrics.crqs import CRQSMetric

    path = Path(args.data) / "reports" / "tcga_ocr_reports_sample.json"
    if not path.is_file():
        print(f"error: {path} not found (set PATHKIT_REALDATA or --data)", file=sys.stderr)
        return 2
    records = json.loads(path.read_text(encoding="utf-8"))
    if args.graded_reg:  # the same graded rules over the REG 2025 reports: the REG "set 2"
        records = _reg_as_graded_records(Path(args.data) / "reports" / "reg2025_pathbench_splits.json", args.split)
    organs = {o.strip().upper() for o in args.organs.split(",") if o.strip()}
    records = [r for r in records if (args.half == "all" or tcga.half_of(r["patient_id"]) == args.half)
               and (not organs or r["organ_group"] in organs)]
    if args.tcga_reports:
        records = sorted(records, key=lambda r: hashlib.sha256(r["patient_id"].encode("utf-8")).hexdigest())
        records = records[:args.tcga_reports]
    rows = tcga.build_pairs(records, args.seed)
    predictions = [r["prediction"] for r in rows]
    references = [r["reference"] for r in rows]
    kinds = [r["kind"] for r in rows]
    correct = [r["correct"] for r in rows]
    counts = {k: kinds.count(k) for k in ("identical", *tcga.CONCORDANT, *tcga.ERRORS) if k in kinds}
    print(f"{len(records)} TCGA reports ({args.half} half) -> {len(rows)} pairs: "
          + ", ".join(f"{k} {n}" for k, n in counts.items()))

    scores: dict[str, list[float]] = {}
    started = time.perf_counter()
    crqs = CRQSMetric().compute(predictions, references, ids=[str(i) for i in range(len(rows))],
                                context={"dataset": "reg2025" if args.graded_reg else "tcga-pathtext",
                                         "bootstrap_resamples": 0})
    scores["CRQS"] = [float("nan") if v is None else v for v in crqs.per_case.get_column("CRQS").to_list()]
    crqs_seconds = time.perf_counter() - started
    nlg_seconds = 0.0
    if not args.no_nlg:
        from pathkit_metrics.nlg import NLGMetric

        started = time.perf_counter()
        # a long OCR report can pass METEOR's default 3,000-word guard, and one answer of the jar on a
        # pair of 5,000-character reports can take minutes on a busy machine
        nlg = NLGMetric().compute(predictions, references, context={"options": {
            "meteor": not args.no_meteor, "meteor_max_words": 20000, "meteor_timeout": args.meteor_timeout}})
        for name in ("METEOR", "BLEU-4", "ROUGE-L"):
            if name in nlg.per_case.columns:
                scores[name] = nlg.per_case.get_column(name).to_list()
        nlg_seconds = time.perf_counter() - started

    # a pair whose reference states nothing the schema scores has no CRQS (its reason is in the
    # per-case `unscored_reason`); it is left out of every metric's AUROC, so all compare on the same pairs
    reasons = (crqs.per_case.get_column("unscored_reason").to_list() if "unscored_reason" in crqs.per_case.columns
               else [None] * len(rows))  # an earlier pathkit (`PYTHONPATH` on its checkout) has no such column
    unscored = [i for i, v in enumerate(scores["CRQS"]) if v != v]
    keep = [i for i in range(len(rows)) if scores["CRQS"][i] == scores["CRQS"][i]]
    all_kinds, all_correct = kinds, correct
    kinds = [all_kinds[i] for i in keep]
    correct = [all_correct[i] for i in keep]
    scores = {name: [values[i] for i in keep] for name, values in scores.items()}
    concordant_kinds = [k for k in counts if k in tcga.CONCORDANT]
    error_kinds = [k for k in counts if k in tcga.ERRORS]
    print(f"\n{len(unscored)} pairs without CRQS (their reference states no TCGA field), left out: "
          + ", ".join(f"{k} {n}" for k, n in Counter(all_kinds[i] for i in unscored).items()))
    for index in unscored[:3]:
        print(f"  [{rows[index]['report']}, {all_kinds[index]}]: {reasons[index]}")
    print()
    _auroc_table(scores, kinds, correct, concordant_kinds, error_kinds, args.resamples, args.seed)
    _means_table(scores, kinds, correct, concordant_kinds)
    _kind_table(scores["CRQS"], kinds, correct, concordant_kinds, error_kinds, len(unscored), len(rows))
    crqs_values = scores["CRQS"]
    identical = [v for v, k in zip(crqs_values, kinds, strict=True) if k == "identical"]
    wrong_at_one = [i for i, (v, c) in enumerate(zip(crqs_values, correct, strict=True)) if not c and v >= 1.0 - 1e-9]
    print(f"\nCRQS: identical pairs scoring 1.0: {sum(v == 1.0 for v in identical)} of {len(identical)}; "
          f"clinically wrong pairs scoring 1.0: {len(wrong_at_one)} of {correct.count(False)} ("
          + ", ".join(f"{k} {n}" for k, n in Counter(kinds[i] for i in wrong_at_one).items()) + ")")
    rows = [rows[i] for i in keep]
    references = [references[i] for i in keep]
    predictions = [predictions[i] for i in keep]
    for index in wrong_at_one[: max(args.show, 0) or 0]:
        print(f"  wrong at 1.0 [{rows[index]['report']}, {kinds[index]}]")
    if args.show:
        import difflib

        for kind in [*concordant_kinds, *error_kinds]:
            shown = [i for i, k in enumerate(kinds) if k == kind and (crqs_values[i] < 1.0) == correct[i]]
            for index in shown[: args.show]:
                diff = [line for line in difflib.unified_diff(references[index].split("\n"),
                                                              predictions[index].split("\n"), lineterm="", n=0)
                        if line[:1] in "+-" and line[:3] not in ("---", "+++")]
                print(f"[{kind}] {rows[index]['report']} CRQS {crqs_values[index]:.3f}: {' || '.join(diff)[:300]}")
    print(f"\nCRQS scored {len(rows)} pairs in {crqs_seconds:.2f} s; nlg in {nlg_seconds:.2f} s")
    return 0


def _kind_table(values: list[float], kinds: list[str], correct: list[bool], concordant_kinds: list[str],
                error_kinds: list[str], n_unscored: int, n_pairs: int) -> None:
    """CRQS per kind (an equivalent kind against every changed pair, every equivalent pair against a
    changed kind), on all pairs and in-schema (errors of a field of the paper's Table 11 schema)."""
    import tcga_report_pairs as tcga

    pos = [v for v, k in zip(values, kinds, strict=True) if k in concordant_kinds]
    neg = [v for v, c in zip(values, correct, strict=True) if not c]
    in_schema = [v for v, k in zip(values, kinds, strict=True) if tcga.ERROR_FIELDS.get(k)]
    print(f"\nCRQS AUROC all pairs {auroc(pos, neg):.3f} ({len(pos)} equivalent / {len(neg)} changed); in-schema "
          f"{auroc(pos, in_schema):.3f} ({len(in_schema)} changed); unscored {n_unscored} of {n_pairs} pairs "
          f"({100 * n_unscored / max(n_pairs, 1):.1f} %)")
    print("kind | pairs | CRQS AUROC")
    for kind in concordant_kinds:
        chosen = [v for v, k in zip(values, kinds, strict=True) if k == kind]
        print(f"equivalent, {kind} | {len(chosen)} | {auroc(chosen, neg):.3f}")
    for kind in error_kinds:
        chosen = [v for v, k in zip(values, kinds, strict=True) if k == kind]
        print(f"changed {kind} | {len(chosen)} | {auroc(pos, chosen):.3f}")


TABLE3 = (
    ("Uterine cervix, colposcopic biopsy; High-grade squamous intraepithelial lesion (HSIL; CIN 2)",
     "Uterine cervix, colposcopic biopsy; Low-grade squamous intraepithelial lesion (LSIL; CIN 1)", "reg2025"),
    ("The lymph node biopsy from the right supraclavicular area corresponds to a reactive lymph node. "
     "No evidence of metastatic carcinoma is identified.",
     "Morphological and immunophenotypic features correspond to reactive lymph node hyperplasia.", "histai"),
)


if __name__ == "__main__":
    raise SystemExit(main())
