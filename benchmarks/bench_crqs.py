"""CRQS throughput: pairs per second on REG-length reports (target >= 5,000 on one core), extraction speed.

Pairs are the real REG 2025 reports (`$PATHKIT_REALDATA/reports/reg2025_pathbench_splits.json`,
default `../shared/data`) scored against a shuffled copy of themselves, REG schema, vocabulary
learned from the train split. Measured side by side in one run:

- warm: the metric as a training loop calls it every epoch (extraction cache filled);
- cold: a fresh extractor, every distinct report extracted once (REG has 801 distinct strings);
- cold, all distinct: every prediction made unique, so nothing can be cached (worst case);
- with and without the bootstrap intervals (1,000 resamples);
- per-report extraction time on REG, on the long OCR TCGA reports, and on one 100,000-character report;
- with `--baseline DIR` (a checkout of an earlier pathkit, e.g. `git worktree add /tmp/crqs-before
  <commit>`; repeat the option for several), extraction of the long TCGA OCR reports by each
  version and by this one, each in a fresh process, alternating, and the ratio to the first;
- with `--cold-baseline DIR` (repeatable), the cold start of each version and of this one: a fresh
  process that imports the metric, builds an extractor and extracts the 741 REG test reports once
  (CPU seconds of the import and of the extraction, and the process's wall time from start to
  exit), alternating, seven rounds, the median of each.

    .venv/bin/python benchmarks/bench_crqs.py [--repeat 3] [--baseline DIR ...] [--tcga-reports 300]
        [--cold-baseline DIR ...] [--cold-only]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
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
    parser.add_argument("--baseline", action="append", default=[],
                        help="an earlier pathkit checkout: its long-report extraction is timed beside this one's "
                             "(may be repeated: every ratio is to the first)")
    parser.add_argument("--tcga-reports", type=int, default=300, help="how many TCGA OCR reports to time")
    parser.add_argument("--cold-baseline", action="append", default=[],
                        help="an earlier pathkit checkout whose cold start (import + first extraction of the "
                             "741 REG test reports, fresh process) is timed beside this one's (may be repeated)")
    parser.add_argument("--cold-only", action="store_true", help="only the cold-start comparison")
    parser.add_argument("--tcga-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cold-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tcga_worker:
        return _tcga_worker(Path(args.data), args.tcga_reports, args.repeat)
    if args.cold_worker:
        return _cold_worker(Path(args.data))
    if args.cold_only:
        _compare_cold([Path(b) for b in args.cold_baseline], Path(args.data))
        return 0
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
    if args.baseline and tcga_path.is_file():
        _compare_with_baseline([Path(b) for b in args.baseline], Path(args.data), args.tcga_reports, args.repeat)
    long_report = ("Invasive carcinoma of no special type, grade II, without necrosis; "
                   "lymphovascular invasion not identified. ") * 900
    _, seconds = _best(args.repeat, lambda: extractor._extract(long_report[:100_000]))
    print(f"extraction, one 100,000-character report: {seconds * 1e3:.0f} CPU ms")
    _compare_cold([Path(b) for b in args.cold_baseline], Path(args.data))
    return 0


def _cold_worker(data: Path) -> int:
    """A cold start, in a process of its own: import the metric and its extractor, build an
    extractor (built-in vocabulary) and extract each of the 741 REG test reports once; print the
    CPU seconds of the import and of the rest."""
    started = time.process_time()
    from pathkit_metrics._crqs.extract import ClinicalExtractor
    from pathkit_metrics._crqs.scoring import score_reports  # noqa: F401 - the modules a score loads
    from pathkit_metrics.crqs import CRQSMetric  # noqa: F401
    imported = time.process_time()
    splits = json.loads((data / "reports" / "reg2025_pathbench_splits.json").read_text(encoding="utf-8"))
    reports = [row["report"] for row in splits["test"]]
    loaded = time.process_time()
    extractor = ClinicalExtractor()
    for text in reports:
        extractor._extract(text)
    done = time.process_time()
    print(json.dumps({"import_s": imported - started, "extract_s": done - loaded, "reports": len(reports)}))
    return 0


def _compare_cold(baselines: list[Path], data: Path, rounds: int = 7) -> None:
    """The cold start (`_cold_worker`) of each of `baselines` and of this checkout, alternating in
    fresh processes, `rounds` rounds; the median of each figure."""
    import statistics

    here = Path(__file__).resolve().parents[1]
    roots = [*baselines, here]
    found: list[list[tuple[float, float, float]]] = [[] for _ in roots]
    for _ in range(rounds):
        for root, runs in zip(roots, found, strict=True):
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "plugins" / "metrics")])}
            wall = time.perf_counter()
            out = subprocess.run([sys.executable, __file__, "--cold-worker", "--data", str(data)], env=env,
                                 capture_output=True, text=True, check=True)
            wall = time.perf_counter() - wall
            row = json.loads(out.stdout.strip().splitlines()[-1])
            runs.append((row["import_s"], row["extract_s"], wall))
    print(f"cold start: fresh process, import + extractor + the 741 REG test reports extracted once, median of "
          f"{rounds} alternating runs (CPU s import, CPU s extraction, wall s whole process):")
    for index, (root, runs) in enumerate(zip(roots, found, strict=True)):
        label = "this checkout" if index == len(roots) - 1 else f"baseline {root}"
        imp, ext, wall = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"  {label}: import {imp:.3f}, extraction {ext:.3f}, import + extraction {imp + ext:.3f}; "
              f"process wall {wall:.3f}")


def _tcga_worker(data: Path, n_reports: int, repeat: int) -> int:
    """Print the best CPU ms per report of extracting the first `n_reports` TCGA OCR reports with
    the built-in vocabulary, fresh extractor each run (run in a process of its own)."""
    from pathkit_metrics._crqs.extract import ClinicalExtractor

    rows = json.loads((data / "reports" / "tcga_ocr_reports_sample.json").read_text(encoding="utf-8"))
    sample = [row["ocr_text"] for row in rows[:n_reports]]
    best = float("inf")
    for _ in range(repeat):
        extractor = ClinicalExtractor()
        started = time.process_time()
        for text in sample:
            extractor._extract(text)
        best = min(best, time.process_time() - started)
    print(json.dumps({"ms_per_report": best / len(sample) * 1e3, "mean_chars": sum(map(len, sample)) / len(sample)}))
    return 0


def _compare_with_baseline(baselines: list[Path], data: Path, n_reports: int, repeat: int) -> None:
    """Long-report extraction by each of `baselines`' code and by this checkout's, alternating in
    fresh processes (three rounds), best of each, and each one's ratio to the first baseline."""
    here = Path(__file__).resolve().parents[1]

    def run(root: Path) -> float:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "plugins" / "metrics")])}
        out = subprocess.run([sys.executable, __file__, "--tcga-worker", "--data", str(data), "--tcga-reports",
                              str(n_reports), "--repeat", str(repeat)], env=env, capture_output=True, text=True,
                             check=True)
        return float(json.loads(out.stdout.strip().splitlines()[-1])["ms_per_report"])

    roots = [*baselines, here]
    times: list[list[float]] = [[] for _ in roots]
    for _ in range(3):
        for root, found in zip(roots, times, strict=True):
            found.append(run(root))
    first = min(times[0])
    print(f"long TCGA OCR reports ({n_reports}), CPU ms per report, best of 3 alternating runs "
          "(ratio to the first baseline):")
    for index, (root, found) in enumerate(zip(roots, times, strict=True)):
        label = "this checkout" if index == len(roots) - 1 else f"baseline {root}"
        print(f"  {label}: {min(found):.2f} ({', '.join(f'{t:.2f}' for t in found)}); "
              f"ratio {min(found) / first:.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
