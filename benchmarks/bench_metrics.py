"""Report-metric speed against the reference implementations, measured side by side in one run.

Sections (run all, or some with --only):

- nlg: BLEU-1..4, ROUGE-L and CIDEr pairs per second, pathkit (numpy, bit-parallel LCS) vs
  pycocoevalcap on the same corpus, with the largest difference of every number printed
  (they must agree to 1e-9); on REG-length reports and on long OCR TCGA reports.
- meteor: METEOR 1.5 per-call overhead and corpus throughput, pathkit's reused, pipelined
  JVM vs pycocoevalcap's `Meteor` (one JVM per instance, one round trip per segment).

Corpus: real REG 2025 / TCGA reports from `$PATHKIT_REALDATA/reports` (default
../shared/data) when present, else synthetic report-like text.

    .venv/bin/python benchmarks/bench_metrics.py [--only nlg,meteor] [--pairs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# "cpu" times this process's CPU (robust when other jobs share the cores; fine for pure
# Python and numpy, which run on one thread here); "wall" is needed where a JVM does the work.
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


def _best(repeat: int, fn: Callable[[], Any], clock: str = "cpu") -> tuple[float, Any]:
    """Fastest time of `repeat` runs on the given clock, and the last result."""
    now = CLOCKS[clock]
    best, result = float("inf"), None
    for _ in range(repeat):
        started = now()
        result = fn()
        best = min(best, now() - started)
    return best, result


def _synthetic(n: int, seed: int, words_per_report: tuple[int, int]) -> list[str]:
    rng = random.Random(seed)
    vocab = (
        "invasive carcinoma ductal lobular no special type grade I II III tubule formation nuclear mitoses "
        "breast core-needle biopsy; margin negative positive lymph node metastasis in situ the and with"
    ).split()
    return [" ".join(rng.choices(vocab, k=rng.randint(*words_per_report))) for _ in range(n)]


def load_corpora(data: Path, pairs: int, seed: int = 0) -> dict[str, tuple[list[str], list[str]]]:
    rng = random.Random(seed)
    corpora: dict[str, tuple[list[str], list[str]]] = {}
    reg_file = data / "reports" / "reg2025_pathbench_splits.json"
    if reg_file.is_file():
        split = json.loads(reg_file.read_text())
        reports = [item["report"] for part in split.values() for item in part]
        refs = rng.sample(reports, pairs)
        preds = [r if i % 5 == 0 else rng.choice(reports) for i, r in enumerate(refs)]
        corpora["REG (real)"] = (preds, refs)
    else:
        texts = _synthetic(2 * pairs, seed, (5, 40))
        corpora["REG-like (synthetic)"] = (texts[:pairs], texts[pairs:])
    tcga_file = data / "reports" / "tcga_ocr_reports_sample.json"
    n_long = max(50, pairs // 10)
    if tcga_file.is_file():
        reports = [r["ocr_text"] for r in json.loads(tcga_file.read_text())]
        refs = rng.sample(reports, n_long)
        # predictions capped at 600 words, PathBench's TCGA decoding limit
        preds = [" ".join(rng.choice(reports).split()[:600]) for _ in refs]
        corpora["TCGA OCR (real, long)"] = (preds, refs)
    else:
        texts = _synthetic(2 * n_long, seed + 1, (200, 1200))
        corpora["TCGA-like (synthetic, long)"] = (texts[:n_long], texts[n_long:])
    return corpora


def _nlg_rows(preds: list[str], refs: list[str], repeat: int) -> list[tuple[str, float, float, float]]:
    """(metric, pycocoevalcap seconds, pathkit seconds, largest difference) on one corpus."""
    import numpy as np
    from pathkit_metrics._nlg.ngram_metrics import (
        SplitCorpus,
        bleu_statistics,
        cider_scores,
        corpus_bleu,
        sentence_bleu,
    )
    from pathkit_metrics._nlg.rouge import rouge_l_scores
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts = {i: [r] for i, r in enumerate(refs)}
    res = {i: [p] for i, p in enumerate(preds)}
    ref_lists = [(r,) for r in refs]

    def coco_bleu():
        with contextlib.redirect_stdout(io.StringIO()):  # Bleu prints its counts
            return Bleu(4).compute_score(gts, res)

    def ours_bleu():
        stats = bleu_statistics(SplitCorpus(preds, ref_lists))
        return corpus_bleu(stats), sentence_bleu(stats)

    rows = []
    t_coco, (b, b_cases) = _best(repeat, coco_bleu)
    t_ours, (mb, mb_cases) = _best(repeat, ours_bleu)
    diff = max(np.max(np.abs(np.array(b) - mb)), np.max(np.abs(np.array(b_cases).T - mb_cases)))
    rows.append(("BLEU", t_coco, t_ours, diff))
    t_coco, (r, r_cases) = _best(repeat, lambda: Rouge().compute_score(gts, res))
    t_ours, mr = _best(repeat, lambda: rouge_l_scores(preds, ref_lists))
    rows.append(("ROUGE-L", t_coco, t_ours, max(abs(r - mr.mean()), np.max(np.abs(r_cases - mr)))))
    t_coco, (c, c_cases) = _best(repeat, lambda: Cider().compute_score(gts, res))
    t_ours, mc = _best(repeat, lambda: cider_scores(SplitCorpus(preds, ref_lists)))
    rows.append(("CIDEr", t_coco, t_ours, max(abs(c - mc.mean()), np.max(np.abs(c_cases - mc)))))
    rows.append(
        ("all 3", sum(row[1] for row in rows), sum(row[2] for row in rows), max(row[3] for row in rows))
    )
    return rows


def bench_nlg(corpora: dict[str, tuple[list[str], list[str]]], repeat: int) -> None:
    print(f"\n== nlg: BLEU-1..4 / ROUGE-L / CIDEr, pathkit vs pycocoevalcap (CPU time, best of {repeat}) ==")
    print(
        f"{'corpus':28} {'metric':8} {'pairs':>6} {'coco pairs/s':>13} {'pathkit pairs/s':>16} "
        f"{'ratio':>7} {'max |diff|':>11}"
    )
    for name, (preds, refs) in corpora.items():
        n = len(preds)
        for metric, coco_s, ours_s, difference in _nlg_rows(preds, refs, repeat):
            print(
                f"{name:28} {metric:8} {n:6d} {n / coco_s:13.0f} {n / ours_s:16.0f} "
                f"{coco_s / ours_s:6.1f}x {difference:11.1e}"
            )


def bench_meteor(corpora: dict[str, tuple[list[str], list[str]]], repeat: int) -> None:
    import shutil

    if shutil.which("java") is None:
        print("\n== meteor: skipped (no `java` on PATH) ==")
        return
    import numpy as np
    from pathkit_metrics._nlg import meteor as pk_meteor
    from pycocoevalcap.meteor.meteor import Meteor

    name = next(iter(corpora))
    preds, refs = corpora[name]
    # pycocoevalcap's wrapper hangs on a newline; give both the same newline-free text
    preds = [p.replace("\n", " ") for p in preds]
    refs = [r.replace("\n", " ") for r in refs]
    gts = {i: [r] for i, r in enumerate(refs)}
    res = {i: [p] for i, p in enumerate(preds)}
    one_gts, one_res = {0: [refs[0]]}, {0: [preds[0]]}
    print(f"\n== meteor: METEOR 1.5 jar, {name}, {len(preds)} pairs (wall time, best of {repeat}) ==")

    pk_meteor.shutdown_meteor()
    started = time.perf_counter()
    pk_meteor.meteor_scores([preds[0]], [[refs[0]]])
    pk_cold = time.perf_counter() - started
    started = time.perf_counter()
    coco_compute = Meteor().compute_score  # the instance (and its JVM) lives as long as this
    coco_compute(one_gts, one_res)
    coco_cold = time.perf_counter() - started

    pk_call, _ = _best(repeat * 5, lambda: pk_meteor.meteor_scores([preds[0]], [[refs[0]]]), "wall")
    coco_call, _ = _best(repeat * 5, lambda: coco_compute(one_gts, one_res), "wall")
    pk_corpus_s, (pk_score, pk_cases) = _best(
        repeat, lambda: pk_meteor.meteor_scores(preds, [[r] for r in refs]), "wall"
    )
    coco_corpus_s, (coco_score, coco_cases) = _best(repeat, lambda: coco_compute(gts, res), "wall")
    difference = max(abs(pk_score - coco_score), float(np.max(np.abs(np.array(pk_cases) - coco_cases))))
    print(f"{'':34} {'pycocoevalcap':>14} {'pathkit':>10} {'ratio':>7}")
    print(f"{'first call (JVM start + tables)':34} {coco_cold:13.2f}s {pk_cold:9.2f}s {coco_cold / pk_cold:6.1f}x")
    print(
        f"{'per-call overhead, 1 pair, warm':34} {coco_call * 1e3:12.1f}ms {pk_call * 1e3:8.1f}ms "
        f"{coco_call / pk_call:6.1f}x"
    )
    print(
        f"{'new scorer per call (1 pair)':34} {coco_cold:13.2f}s {pk_call * 1e3:8.1f}ms "
        f"{coco_cold / pk_call:6.0f}x   (pycocoevalcap starts a JVM per Meteor(); pathkit reuses one)"
    )
    print(
        f"{'corpus, pairs/s':34} {len(preds) / coco_corpus_s:14.0f} {len(preds) / pk_corpus_s:10.0f} "
        f"{coco_corpus_s / pk_corpus_s:6.1f}x"
    )
    print(f"max |diff| of corpus and segment scores: {difference:.1e}")
    pk_meteor.shutdown_meteor()


# Each section takes the corpora and the repeat count; a section of another metric is one more entry.
SECTIONS: dict[str, Callable[[dict[str, tuple[list[str], list[str]]], int], None]] = {
    "nlg": bench_nlg,
    "meteor": bench_meteor,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("PATHKIT_REALDATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated: {', '.join(SECTIONS)}")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    corpora = load_corpora(Path(args.data), args.pairs)
    print(f"corpora: {', '.join(f'{k}: {len(v[0])} pairs' for k, v in corpora.items())}")
    for section in chosen:
        SECTIONS[section](corpora, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
