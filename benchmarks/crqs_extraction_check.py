"""CRQS extraction fingerprint: what the extractor reads from every shipped report, to prove that a
speed-up changed no output.

Extracts every TCGA OCR report (`tcga_ocr_reports_sample.json`, 1,939 reports, built-in vocabulary)
and every REG 2025 report of every split (7,405 texts, 801 distinct; built-in vocabulary and the
vocabulary learned from the train split), each with a fresh extractor and no cache, and writes one
JSON line per report (source, index, extraction) to `--write FILE`, or compares with such a file
(`--compare FILE`) and prints every report whose extraction differs (exit status 1 if any does).

    .venv/bin/python benchmarks/crqs_extraction_check.py --write /tmp/crqs-extraction-before.jsonl
    ... change the extractor ...
    .venv/bin/python benchmarks/crqs_extraction_check.py --compare /tmp/crqs-extraction-before.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path


def _lines(data: Path) -> Iterator[str]:
    from pathkit_metrics._crqs.extract import ClinicalExtractor
    from pathkit_metrics._crqs.vocabulary import build_vocabulary

    reports = data / "reports"
    tcga = json.loads((reports / "tcga_ocr_reports_sample.json").read_text(encoding="utf-8"))
    splits = json.loads((reports / "reg2025_pathbench_splits.json").read_text(encoding="utf-8"))
    reg = [row["report"] for name in ("train", "val", "test") for row in splits[name]]
    learned = build_vocabulary([row["report"] for row in splits["train"]], min_count=2)
    runs = [("tcga", ClinicalExtractor(), [row["ocr_text"] for row in tcga]),
            ("reg-builtin", ClinicalExtractor(), reg),
            ("reg-learned", ClinicalExtractor(learned), reg)]
    for source, extractor, texts in runs:
        for index, text in enumerate(texts):
            record = {"source": source, "index": index, "extraction": extractor._extract(text).as_dict()}
            yield json.dumps(record, sort_keys=True, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("PATHKIT_REALDATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", type=Path, help="write the extraction of every report here (JSON lines)")
    action.add_argument("--compare", type=Path, help="compare with a file made by --write")
    args = parser.parse_args(argv)
    data = Path(args.data)
    if args.write:
        with args.write.open("w", encoding="utf-8") as out:
            count = 0
            for line in _lines(data):
                out.write(line + "\n")
                count += 1
        print(f"{count} extractions written to {args.write}")
        return 0
    expected = args.compare.read_text(encoding="utf-8").splitlines()
    lines = list(_lines(data))
    if len(lines) != len(expected):
        print(f"{len(lines)} extractions now, {len(expected)} in {args.compare}")
        return 1
    differing = 0
    for line, old in zip(lines, expected, strict=True):
        if line != old:
            differing += 1
            if differing <= 20:
                print(f"differs: {line[:300]}\n   was: {old[:300]}")
    count = len(lines)
    print(f"{count} extractions compared with {args.compare}: {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
