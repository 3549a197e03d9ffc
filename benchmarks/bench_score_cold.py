"""Cold scoring in a whole process, side by side with the scripts a researcher would run instead.

- CRQS on the 741 test reports of REG 2025 (`../shared/data/reports/reg2025_pathbench_splits.json`,
  each report against another test report, a fixed shuffle): `pathkit score -m crqs` against
  PathBench's own CRQS script (`python -m crqs.run_crqs --dataset reg`, its public code, pure
  Python), given with `--pathbench DIR` (a folder holding PathBench's `crqs/` package); without it
  that side is skipped with a message. The two are different extractors: their CRQS values are
  printed, not compared (docs/metrics.md says where they differ).
- BLEU-1..4 / METEOR / ROUGE-L on the same pairs (texts with their line breaks made spaces, which
  pycocoevalcap's METEOR wrapper needs): `pathkit score -m nlg` against a script doing what
  PathBench's metric code does with pycocoevalcap (`Bleu(4)`, `Meteor()`, `Rouge()` on the same
  dicts); every shared number is compared. Skipped with a message when pycocoevalcap or Java is
  missing. pathkit's METEOR reads a paraphrase table cut to the corpus from a cache it builds
  once (docs/metrics.md); the warm-up pair builds it if absent. `--first-run` also times one
  `pathkit score -m nlg` with an empty cache folder (`XDG_CACHE_HOME`), the cache-building run.

Each side is a fresh `python` process timed from its start to its exit (wall clock), in
interleaved pairs after an untimed warm-up pair (file cache, the modules' bytecode, which is
written even where PYTHONDONTWRITEBYTECODE is set); the ratio is the peer's time over pathkit's,
median of the pairs. Nothing is installed here. Run it from the checkout under test: `python -m`
puts the working folder first on sys.path, before PYTHONPATH.

`--budget` prints where a cold `pathkit score -m crqs` process spends its time instead: the same
steps as the command, timed phase by phase in fresh processes (median of 3 after a warm-up), an
empty interpreter's start, and numpy's import against the standard library drawing the CRQS
bootstrap (numpy's generator draws the resamples, so only it gives the same intervals).

    .venv/bin/python benchmarks/bench_score_cold.py [--pairs 3] [--pathbench DIR] [--only crqs|nlg] [--first-run]
        [--copies 10]  # CRQS on 7,410 pairs: the 741 test pairs ten times, copy k shuffled with seed k
        [--baseline CHECKOUT]  # CRQS of this checkout against another's (before/after), side by side
    .venv/bin/python benchmarks/bench_score_cold.py --budget
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "reports" / "reg2025_pathbench_splits.json"

COCO_SCRIPT = """
import json, sys
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.meteor.meteor import Meteor
from pycocoevalcap.rouge.rouge import Rouge
pairs = json.load(open(sys.argv[1]))
gts = {k: [v["target"]] for k, v in pairs.items()}
res = {k: [v["pred"]] for k, v in pairs.items()}
out = {}
bleu, _ = Bleu(4).compute_score(gts, res)
out.update({f"BLEU-{i + 1}": b for i, b in enumerate(bleu)})
out["METEOR"], _ = Meteor().compute_score(gts, res)
out["ROUGE-L"], _ = Rouge().compute_score(gts, res)
print(json.dumps(out))
"""


# The steps of `pathkit score -p PAIRS -m crqs --json` (pathkit_interop.score_cli), timed apart.
BUDGET_SCRIPT = """
import json, sys, time
marks = [("start", time.perf_counter())]
mark = lambda name: marks.append((name, time.perf_counter()))
from pathkit_core.plugins import plain_command
mark("pathkit core import (pluggy, contracts, registry)")
run = plain_command("score")
mark("built-in plugins loaded, score command imported")
import numpy
mark("numpy import (the bootstrap's)")
import pathkit_metrics._crqs.scoring
mark("CRQS modules import")
from pathkit_core.plugins import get_component
get_component("metric", "crqs")
mark("registry of the built-in plugins and the crqs entry point")
from pathkit_interop.records import read_records
pairs = read_records(sys.argv[1])
mark("predictions read")
from pathkit_metrics._crqs.scoring import extractor_for, resolve_vocabulary
extractor_for(resolve_vocabulary({}))
mark("CRQS extractor built")
from pathkit_core.evaluation.runner import score
result = score(["crqs"], pairs.values, pairs.references, ids=list(pairs.references))
mark("scored: extraction, comparison, bootstrap")
sys.stdout.write(json.dumps(result.summary) + chr(10))
mark("summary printed")
phases = [[b, y - x] for (a, x), (b, y) in zip(marks, marks[1:])]
imported_polars = "polars" in sys.modules
t0 = time.perf_counter()
import polars
polars_import = time.perf_counter() - t0
result.per_case
print(json.dumps({"plain": run is not None, "phases": phases, "polars": imported_polars,
                  "out_only": [polars_import, time.perf_counter() - t0 - polars_import]}))
"""

BOOTSTRAP_SCRIPT = """
import json, random, sys, time
n, resamples, columns = int(sys.argv[1]), 1000, 5
rows = [[random.random() for _ in range(n)] for _ in range(columns)]
t0 = time.perf_counter()
rng = random.Random(0)
for _ in range(resamples):
    drawn = rng.choices(range(n), k=n)
    means = [sum(row[i] for i in drawn) / n for row in rows]
stdlib = time.perf_counter() - t0
t0 = time.perf_counter()
import numpy as np
imported = time.perf_counter() - t0
from pathkit_sdk.bootstrap import resample_indices
matrix = np.array(rows)
t0 = time.perf_counter()
for block in resample_indices(n, resamples, 0):
    means = [row[block].mean(axis=1) for row in matrix]
print(json.dumps({"stdlib": stdlib, "numpy_import": imported, "numpy": time.perf_counter() - t0}))
"""


def budget(data: Path, runs: int = 3) -> None:
    """Where a cold CRQS scoring process spends its time, phase by phase (medians)."""
    interpreter = []
    for _ in range(runs + 1):
        interpreter.append(timed([sys.executable, "-c", "pass"])[0])
    phases: dict[str, list[float]] = {}
    out_only: list[list[float]] = []  # polars' import and the per-case table: only with --out
    for run in range(runs + 1):  # the first is a warm-up
        out = timed([sys.executable, "-c", BUDGET_SCRIPT, str(data)])[1]
        found = json.loads(out.strip().splitlines()[-1])
        if run:
            if not found["plain"]:
                raise SystemExit("no built-in plugin offers a plain `score` command")
            for name, seconds in found["phases"]:
                phases.setdefault(name, []).append(seconds)
            out_only.append(found["out_only"])
            if found["polars"]:
                print("note: polars was imported before the per-case table was read")
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    total = sum(med(v) for v in phases.values())
    start = med(interpreter[1:])
    print(f"cold `pathkit score -m crqs` on {len(json.loads(data.read_text()))} pairs, phases (median of {runs}):")
    print(f"  {'interpreter start (python -c pass)':58s} {start * 1000:7.1f} ms")
    for name, values in phases.items():
        print(f"  {name:58s} {med(values) * 1000:7.1f} ms  {100 * med(values) / (total + start):4.1f} %")
    print(f"  {'total':58s} {(total + start) * 1000:7.1f} ms")
    print(f"only with --out (not in the total): polars import {med([o[0] for o in out_only]) * 1000:.1f} ms, "
          f"per-case table built {med([o[1] for o in out_only]) * 1000:.1f} ms")
    boot = json.loads(timed([sys.executable, "-c", BOOTSTRAP_SCRIPT, "741"])[1])
    ms = {k: f"{v * 1000:.0f} ms" for k, v in boot.items()}
    print(f"CRQS bootstrap (741 cases, 1000 resamples, 5 columns): numpy import {ms['numpy_import']} + numpy's "
          f"draws {ms['numpy']} against the standard library's {ms['stdlib']} (other draws, other intervals)")


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pairs_file(folder: Path, data: Path, *, one_line: bool, copies: int = 1) -> Path:
    """Each test report against another test report (shuffle `random.Random(k)`); with `copies`
    above 1, the 741 test reports that many times, copy k shuffled with seed k and its ids ended
    with `#k` (7,410 pairs for ten copies)."""
    reports = json.loads(data.read_text(encoding="utf-8"))["test"]
    text = (lambda s: " ".join(s.split())) if one_line else (lambda s: s)
    pairs = {}
    for k in range(copies):
        order = list(range(len(reports)))
        random.Random(k).shuffle(order)
        suffix = f"#{k}" if copies > 1 else ""
        pairs.update({f"{r['id']}{suffix}": {"target": text(r["report"]), "pred": text(reports[order[i]]["report"])}
                      for i, r in enumerate(reports)})
    path = folder / f"reg_test_pairs{'_one_line' if one_line else ''}{f'_x{copies}' if copies > 1 else ''}.json"
    path.write_text(json.dumps(pairs), encoding="utf-8")
    return path


def with_bytecode(env: dict | None = None) -> dict:
    """The environment without PYTHONDONTWRITEBYTECODE: the warm-up pair leaves the compiled
    modules behind, as any installed program has them (else every cold process would compile
    every module from source, both sides alike)."""
    return {k: v for k, v in (env or os.environ).items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, str, float]:
    """Wall seconds, stdout and CPU seconds (user + system) of one process: on a busy machine the
    CPU time is the steadier of the two (wall time includes waiting for a core)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(command, cwd=cwd, env=with_bytecode(env), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({out.returncode}): {out.stderr[-2000:]}")
    return seconds, out.stdout, after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime


def side_by_side(name: str, mine: list[str], peer: list[str], pairs: int, peer_cwd: Path | None = None,
                 peer_env: dict | None = None) -> tuple[str, str]:
    times: dict[str, list[float]] = {"pathkit": [], "peer": []}
    cpu: dict[str, list[float]] = {"pathkit": [], "peer": []}
    outs = {"pathkit": "", "peer": ""}
    for pair in range(pairs + 1):
        order = ("pathkit", "peer") if pair % 2 else ("peer", "pathkit")
        for side in order:
            seconds, outs[side], cpu_seconds = timed(mine if side == "pathkit" else peer,
                                                     peer_cwd if side == "peer" else None,
                                                     peer_env if side == "peer" else None)
            if pair:
                times[side].append(seconds)
                cpu[side].append(cpu_seconds)
        print(f"  pair {pair}{' (warm-up)' if not pair else ''}: load {loadavg().split()[0]}"
              + ("" if not pair else f", pathkit {times['pathkit'][-1]:.3f} s, peer {times['peer'][-1]:.3f} s"))
    ratios = sorted(p / m for p, m in zip(times["peer"], times["pathkit"], strict=True))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"  {name}: pathkit {med(times['pathkit']):.3f} s, peer {med(times['peer']):.3f} s (medians); "
          f"peer / pathkit per pair {', '.join(f'{r:.2f}' for r in ratios)} -> median {med(ratios):.2f}x")
    cpu_ratios = sorted(p / m for p, m in zip(cpu["peer"], cpu["pathkit"], strict=True))
    print(f"  {name}, CPU time (user + system): pathkit {med(cpu['pathkit']):.3f} s, peer {med(cpu['peer']):.3f} s "
          f"(medians); peer / pathkit per pair {', '.join(f'{r:.2f}' for r in cpu_ratios)} -> median "
          f"{med(cpu_ratios):.2f}x")
    return outs["pathkit"], outs["peer"]


def first_run_nlg(command: list[str], folder: Path, expected: str) -> None:
    """Time `pathkit meteor index` with an empty cache folder (the one-off parse of METEOR's
    paraphrase table), and one nlg process without that index (the whole table read, as on a
    machine where the index was never built)."""
    cache = folder / "empty-cache"
    cache.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    seconds, out, _ = timed(command, env=env)
    same = json.loads(out) == json.loads(expected)
    print(f"  without the paraphrase index (whole table read): pathkit {seconds:.1f} s, load {loadavg().split()[0]}, "
          f"scores {'identical' if same else 'DIFFERENT'} to the indexed runs'")
    seconds, _, _ = timed([sys.executable, "-m", "pathkit_core.cli", "meteor", "index"], env=env)
    print(f"  `pathkit meteor index` with an empty cache (once per machine): {seconds:.1f} s, "
          f"load {loadavg().split()[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--pathbench", type=Path, default=None, help="folder holding PathBench's crqs/ package")
    parser.add_argument("--only", choices=("crqs", "nlg"), default=None)
    parser.add_argument("--copies", type=int, default=1,
                        help="CRQS on the test pairs this many times, copy k shuffled with seed k (10: 7,410 pairs)")
    parser.add_argument("--budget", action="store_true", help="time the phases of a cold CRQS scoring process")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another pathkit checkout (main's) whose CRQS scoring is timed against this one")
    parser.add_argument("--first-run", action="store_true",
                        help="also time nlg without METEOR's paraphrase index, and building the index")
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"{args.data}: the REG 2025 splits file is missing (give --data)")
    if args.budget:
        print(f"load average {loadavg()}; python {sys.executable}")
        with tempfile.TemporaryDirectory() as tmp:
            budget(pairs_file(Path(tmp), args.data, one_line=False))
        print(f"load average {loadavg()}")
        return
    pathkit = [sys.executable, "-m", "pathkit_core.cli", "score", "--json", "-p"]
    print(f"load average {loadavg()}; python {sys.executable}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.only in (None, "crqs"):
            data = pairs_file(folder, args.data, one_line=False, copies=args.copies)
            print(f"CRQS, {len(json.loads(data.read_text()))} REG test pairs, whole process:")
            if args.pathbench is None or not (args.pathbench / "crqs" / "run_crqs.py").is_file():
                print("  PathBench's CRQS script: not given (--pathbench DIR with its crqs/ package), skipped")
            else:
                peer = [sys.executable, "-m", "crqs.run_crqs", "--dataset", "reg", "--config",
                        str(args.pathbench / "crqs" / "crqs_reg" / "src" / "config.py"), "--input", str(data),
                        "--output-dir", str(folder / "pathbench-out")]
                env = {**os.environ, "PYTHONPATH": str(args.pathbench)}
                mine, _ = side_by_side("CRQS", [*pathkit, str(data), "-m", "crqs"], peer, args.pairs,
                                       args.pathbench, env)
                theirs = json.loads((folder / "pathbench-out" / "reg_summary.json").read_text())
                print(f"  CRQS (different extractors, not compared): pathkit {json.loads(mine)['crqs']['CRQS']:.4f}, "
                      f"PathBench {theirs['CRQS_norm']:.4f}")
            if args.baseline is not None:
                # the same command run in the baseline checkout (`python -m` puts the working folder
                # first on sys.path, before PYTHONPATH) with its code on the path (a checkout that
                # still keeps an index of entry points gets a file of its own)
                base = args.baseline.resolve()
                paths = [base, *(base / "plugins" / p for p in ("encoders", "generators", "datasets", "metrics"))]
                env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)),
                       "PATHKIT_PLUGIN_INDEX": str(folder / "baseline-index.json")}
                print(f"  this checkout against the baseline {base} (the 'peer' below):")
                now, before = side_by_side("CRQS", [*pathkit, str(data), "-m", "crqs"],
                                           [*pathkit, str(data), "-m", "crqs"], args.pairs, base, env)
                print(f"  summaries {'identical' if now == before else 'DIFFERENT'}")
        if args.only in (None, "nlg"):
            data = pairs_file(folder, args.data, one_line=True)
            print("BLEU-1..4 / METEOR / ROUGE-L on the same pairs (one-line texts), whole process:")
            try:
                import pycocoevalcap  # noqa: F401 - only whether it is there
            except ImportError:
                print("  pycocoevalcap: not installed, skipped")
                return
            script = folder / "coco_scores.py"
            script.write_text(COCO_SCRIPT)
            # pathkit with METEOR's paraphrase index, built once per machine (untimed; --first-run
            # times it and a run without it)
            subprocess.run([sys.executable, "-m", "pathkit_core.cli", "meteor", "index"], check=True)
            mine, theirs = side_by_side("nlg", [*pathkit, str(data), "-m", "nlg"],
                                        [sys.executable, str(script), str(data)], args.pairs)
            mine_scores, peer_scores = json.loads(mine)["nlg"], json.loads(theirs.strip().splitlines()[-1])
            diff = max(abs(mine_scores[k] - v) for k, v in peer_scores.items())
            print(f"  scores compared ({', '.join(peer_scores)}): largest difference {diff:.2e}")
            if args.first_run:
                first_run_nlg([*pathkit, str(data), "-m", "nlg"], folder, mine)
    print(f"load average {loadavg()}")


if __name__ == "__main__":
    main()
