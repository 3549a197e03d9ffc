"""CRQS throughput: pairs per second on REG-length reports (target >= 5,000 on one core), extraction speed.

Pairs are the real REG 2025 reports (`$PATHKIT_REALDATA/reports/reg2025_pathbench_splits.json`,
default `../shared/data`) scored against a shuffled copy of themselves, REG schema, vocabulary
learned from the train split. Measured side by side in one run:

- warm: the metric as a training loop calls it every epoch (extraction cache filled);
- cold: a fresh extractor, every distinct report extracted once (REG has 801 distinct strings);
- cold, all distinct: every prediction made unique, so nothing can be cached (worst case);
- with and without the bootstrap intervals (1,000 resamples);
- per-report extraction time on REG, on the long OCR TCGA reports, and on one 100,000-character report.

    .venv/bin/python benchmarks/bench_crqs.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path


def _best(repeat: int, fn) -> tuple[float, float]:  # noqa: ANN001
    """Best wall-clock and best CPU seconds over `repeat` runs (CPU time is what one core spends,
    and is the steadier figure on a machine shared with other jobs)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("PATHKIT_REALDATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    # one core: no BLAS or polars worker threads
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("POLARS_MAX_THREADS", "1")

    from pathkit_metrics._crqs import scoring
    from pathkit_metrics._crqs.extract import ClinicalExtractor
    from pathkit_metrics.crqs import CRQSMetric

    reports_dir = Path(args.data) / "reports"
    splits = json.loads((reports_dir / "reg2025_pathbench_splits.json").read_text(encoding="utf-8"))
    train = [row["report"] for row in splits["train"]]
    references = [row["report"] for name in ("train", "val", "test") for row in splits[name]]
    predictions = references[:]
    random.Random(0).shuffle(predictions)
    unique_predictions = [f"{text} ({i})" for i, text in enumerate(predictions)]
    n = len(references)
    metric = CRQSMetric()
    context = {"dataset": "reg2025", "train_reports": train}
    no_ci = {**context, "bootstrap_resamples": 0}
    vocabulary = scoring.resolve_vocabulary(context)

    def fresh_extractor() -> None:
        scoring._extractors.pop(vocabulary.sha256, None)

    metric.compute(predictions, references, context=no_ci)  # learn the vocabulary, fill the cache
    warm_ci = _best(args.repeat, lambda: metric.compute(predictions, references, context=context))
    warm = _best(args.repeat, lambda: metric.compute(predictions, references, context=no_ci))

    def cold_run(preds: list[str]) -> None:
        fresh_extractor()
        metric.compute(preds, references, context=no_ci)

    cold = _best(args.repeat, lambda: cold_run(predictions))
    cold_unique = _best(args.repeat, lambda: cold_run(unique_predictions))
    print(f"CRQS on {n} REG pairs (REG schema, learned vocabulary, one process, pure Python):")
    rows = [
        ("warm, with 1000-resample CIs", warm_ci),
        ("warm, no CIs", warm),
        ("cold (801 distinct reports extracted)", cold),
        ("cold, every prediction distinct", cold_unique),
    ]
    print(f"  {'':40s} {'wall s':>8s} {'pairs/s':>9s} {'CPU s':>8s} {'pairs/s':>9s}  CPU rate / 5,000 target")
    for label, (wall, cpu) in rows:
        print(f"  {label:40s} {wall:8.3f} {n / wall:9,.0f} {cpu:8.3f} {n / cpu:9,.0f}  {n / cpu / 5000:.1f}x")

    distinct = sorted(set(references))
    extractor = ClinicalExtractor(vocabulary)
    _, seconds = _best(args.repeat, lambda: [extractor._extract(text) for text in distinct])
    print(f"extraction, REG: {len(distinct)} distinct reports in {seconds:.3f} CPU s "
          f"({seconds / len(distinct) * 1e6:.0f} us/report)")
    tcga_path = reports_dir / "tcga_ocr_reports_sample.json"
    if tcga_path.is_file():
        tcga = [row["ocr_text"] for row in json.loads(tcga_path.read_text(encoding="utf-8"))]
        sample = tcga[:300]
        _, seconds = _best(1, lambda: [extractor._extract(text) for text in sample])
        chars = sum(len(t) for t in sample) / len(sample)
        print(f"extraction, TCGA OCR: {len(sample)} reports (mean {chars:,.0f} chars) in {seconds:.3f} CPU s "
              f"({seconds / len(sample) * 1e3:.1f} ms/report)")
    long_report = ("Invasive carcinoma of no special type, grade II, without necrosis; "
                   "lymphovascular invasion not identified. ") * 900
    _, seconds = _best(args.repeat, lambda: extractor._extract(long_report[:100_000]))
    print(f"extraction, one 100,000-character report: {seconds * 1e3:.0f} CPU ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
