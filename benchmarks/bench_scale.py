"""A cohort of 100 / 1,000 / 10,000 slides: what each bookkeeping step costs and how it grows.

Built without images (manifests, feature files and run folders of the cohort's shape, as the
stages leave them), each step timed at each size in one process, with its growth exponent (slope
of log CPU time against log N between the smallest and largest size, and between the two
largest, where fixed costs weigh least: 1 linear, ~1.1 n log n, 2 quadratic):

- plan: 16 shards each pick their slides (`Shard.select`) and record the whole list as planned;
- tiling bookkeeping: every slide's outcome recorded as `tile_slides` does for a failure (one
  status write per slide: the worst case), then read back;
- status: `pathkit_core.status.collect` over a workspace holding a tile store and a feature store
  of N slides (what `pathkit status` prints);
- run-identity key: `dataset_identity` of N cases, one small slide file each (cold cache);
- suite analysis: `SuiteAnalysis` of a suite of 3 encoders x 2 seeds on one task of N test
  cases (paired bootstrap, 200 resamples), its headline and rank tables;
- compare: `compare_runs` of two run folders of N test cases (AUROC by DeLong, accuracy by
  McNemar).

    .venv/bin/python benchmarks/bench_scale.py [--sizes 100,1000,10000]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _cpu() -> float:
    return time.process_time()  # user + system CPU of this process, at the clock's resolution


def _ids(n: int) -> list[str]:
    return [f"TCGA-{i:06d}" for i in range(n)]


def step_plan(root: Path, n: int) -> Callable[[], object]:
    from pathkit_core.features import store
    from pathkit_core.shard import Shard

    ids = _ids(n)

    def run() -> object:
        for k in range(16):
            Shard(k, 16).select(ids)
            store.record_planned(root / "plan", "enc", {s: {"manifest": f"/m/{s}.parquet"} for s in ids})
        return None

    return run


def step_tiling(root: Path, n: int) -> Callable[[], object]:
    from pathkit_core.wsi.tiling import TileResult, _update_status, read_tiling_status

    out = root / "tiling"
    out.mkdir()

    def run() -> object:
        for sid in _ids(n):
            _update_status(out, [TileResult(sid, f"/s/{sid}.svs", "failed", f"/s/{sid}.svs: no mpp", code="no-mpp")],
                           "p")
        assert len(read_tiling_status(out)) == n
        return None

    return run


def _workspace(root: Path, n: int) -> Path:
    from pathkit_core.features import store
    from pathkit_core.wsi.tiling import TileResult, _update_status

    ws = root / "ws"
    tiles = ws / "tiles" / "256px_0.5mpp"
    tiles.mkdir(parents=True)
    ids = _ids(n)
    _update_status(tiles, [TileResult(s, f"/s/{s}.svs", "ok", "", n_tiles=15000) for s in ids], "p",
                   {s: f"/s/{s}.svs" for s in ids})
    for s in ids:
        (tiles / f"{s}.parquet").touch()
        (store.encoder_dir(ws / "features", "uni2h")).mkdir(parents=True, exist_ok=True)
    store.record_planned(ws / "features", "uni2h", {s: {"manifest": str(tiles / f"{s}.parquet")} for s in ids})
    store.record_statuses(ws / "features", "uni2h", {s: store.status_record("ok", n_tiles=15000) for s in ids[::2]})
    for s in ids[::2]:
        store.feature_path(ws / "features", "uni2h", s).touch()
    return ws


def step_status(root: Path, n: int) -> Callable[[], object]:
    from pathkit_core.status import collect

    ws = _workspace(root, n)

    def run() -> object:
        report = collect(ws)
        assert [s.counts()["done"] for s in report["stores"]] == [n, (n + 1) // 2]
        return None

    return run


def step_identity(root: Path, n: int) -> Callable[[], object]:
    from pathkit_core.contracts import Case, Dataset
    from pathkit_core.run.identity import dataset_identity
    from pathkit_core.sources import _identity

    class Cohort(Dataset):
        name = "bench-scale"

    folder = root / "slides"
    folder.mkdir()
    cases: dict[str, list[Case]] = {"train": [], "val": [], "test": []}
    for i, sid in enumerate(_ids(n)):
        slide = folder / f"{sid}.svs"
        slide.write_bytes(sid.encode() * 64)
        part = ("train", "train", "train", "val", "test")[i % 5]
        cases[part].append(Case(sid, f"P{i // 2}", target=i % 3, slides=(slide,), meta={"mpp": 0.5}))
    dataset = Cohort(folder)

    def run() -> object:
        _identity.cache_clear()
        return dataset_identity(dataset, cases)

    return run


def _classification_run(run_dir: Path, p: np.ndarray, y: np.ndarray, encoder: str, seed: int) -> Path:
    from pathkit_core.contracts import Case
    from pathkit_core.evaluation.runner import score, write_results
    from pathkit_core.run.score import write_test_cases

    ids = _ids(len(y))
    preds = {i: {"label": int(q >= 0.5), "probabilities": [1 - float(q), float(q)]}
             for i, q in zip(ids, p, strict=True)}
    refs = {i: int(t) for i, t in zip(ids, y, strict=True)}
    result = score(["classification"], preds, refs, ids=ids, context={"options": {"n_resamples": 0}})
    run_dir.mkdir(parents=True)
    write_test_cases(run_dir / "test_cases.jsonl", [Case(i, i, refs[i]) for i in ids], refs)
    write_results(result, run_dir, extra={"run": {"dataset": "x", "encoder": encoder, "generator": "g", "seed": seed},
                                          "task": "slide-classification"})
    return run_dir


def _runs(root: Path, n: int) -> tuple[list, Path]:
    from pathkit_bench.suite.config import parse_suite
    from pathkit_bench.suite.runner import CellResult, write_leaderboard
    from pathkit_core.report.run_folder import RunFolder

    config = parse_suite({"name": "scale", "encoders": ["a", "b", "c"], "generators": ["g"], "seeds": [0, 1],
                          "resamples": 200, "tasks": [{"name": "t", "dataset": "x", "compare": "AUROC"}]},
                         root / "suite.toml")
    y = (np.random.default_rng(0).random(n) < 0.4).astype(int)
    results = []
    for k, cell in enumerate(config.cells()):
        skill = {"a": 2.0, "b": 1.0, "c": 0.5}[cell.encoder]
        p = 1 / (1 + np.exp(-(skill * (2 * y - 1) + np.random.default_rng(k).normal(0, 1, n))))
        run_dir = _classification_run(root / "runs" / cell.encoder / f"seed{cell.seed}", p, y, cell.encoder, cell.seed)
        results.append(CellResult(cell, run_dir, RunFolder(run_dir).summary))
    folder = root / "suite"
    write_leaderboard(config, results, folder)
    return results, folder


def step_analysis(root: Path, n: int) -> Callable[[], object]:
    from pathkit_bench.suite.analysis import SuiteAnalysis

    _, folder = _runs(root / "analysis", n)

    def run() -> object:
        analysis = SuiteAnalysis(folder, resamples=200)
        analysis.headline_rows()
        return analysis.ranks("encoder")

    return run


def step_compare(root: Path, n: int) -> Callable[[], object]:
    from pathkit_bench.compare import compare_runs
    from pathkit_core.report.run_folder import RunFolder

    results, _ = _runs(root / "compare", n)
    a, b = results[0].run_dir, results[2].run_dir

    def run() -> object:
        rows, _ = compare_runs(RunFolder(a), RunFolder(b), ["AUROC", "accuracy"], n_resamples=200)
        return rows

    return run


STEPS = {"plan": step_plan, "tiling bookkeeping": step_tiling, "status": step_status,
         "run-identity key": step_identity, "suite analysis": step_analysis, "compare": step_compare}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--steps", default=",".join(STEPS))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    names = [s.strip() for s in args.steps.split(",")]
    print("CPU seconds of this process per step (wall seconds in brackets: the disk's fsyncs add to them)")
    print(f"{'step':<20}" + "".join(f"{n:>20,}" for n in sizes) + f"{'exponent':>10}{'last pair':>11}")
    for name in names:
        cpu, wall = [], []
        for n in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                run = STEPS[name](Path(tmp), n)
                c0, t0 = _cpu(), time.perf_counter()
                run()
                cpu.append(_cpu() - c0)
                wall.append(time.perf_counter() - t0)
        exponent = math.log(max(cpu[-1], 1e-3) / max(cpu[0], 1e-3)) / math.log(sizes[-1] / sizes[0])
        last = math.log(max(cpu[-1], 1e-3) / max(cpu[-2], 1e-3)) / math.log(sizes[-1] / sizes[-2])
        cells = "".join(f"{c:>9.3f}s ({w:>6.2f}s)" for c, w in zip(cpu, wall, strict=True))
        print(f"{name:<20}{cells}{exponent:>10.2f}{last:>11.2f}", flush=True)


if __name__ == "__main__":
    main()
