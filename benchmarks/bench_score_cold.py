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
interleaved pairs after an untimed warm-up pair (file cache, and the modules' bytecode, which is
written even where PYTHONDONTWRITEBYTECODE is set); the ratio is the peer's time over pathkit's,
median of the pairs. Nothing is installed here.

    .venv/bin/python benchmarks/bench_score_cold.py [--pairs 3] [--pathbench DIR] [--only crqs|nlg] [--first-run]
"""

from __future__ import annotations

import argparse
import json
import os
import random
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


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pairs_file(folder: Path, data: Path, *, one_line: bool) -> Path:
    reports = json.loads(data.read_text(encoding="utf-8"))["test"]
    order = list(range(len(reports)))
    random.Random(0).shuffle(order)
    text = (lambda s: " ".join(s.split())) if one_line else (lambda s: s)
    pairs = {r["id"]: {"target": text(r["report"]), "pred": text(reports[order[i]]["report"])}
             for i, r in enumerate(reports)}
    path = folder / f"reg_test_pairs{'_one_line' if one_line else ''}.json"
    path.write_text(json.dumps(pairs), encoding="utf-8")
    return path


def with_bytecode(env: dict | None = None) -> dict:
    """The environment without PYTHONDONTWRITEBYTECODE: the warm-up pair leaves the compiled
    modules behind, as any installed program has them (else every cold process would compile
    every module from source, both sides alike)."""
    return {k: v for k, v in (env or os.environ).items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(command, cwd=cwd, env=with_bytecode(env), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({out.returncode}): {out.stderr[-2000:]}")
    return seconds, out.stdout


def side_by_side(name: str, mine: list[str], peer: list[str], pairs: int, peer_cwd: Path | None = None,
                 peer_env: dict | None = None) -> tuple[str, str]:
    times: dict[str, list[float]] = {"pathkit": [], "peer": []}
    outs = {"pathkit": "", "peer": ""}
    for pair in range(pairs + 1):
        order = ("pathkit", "peer") if pair % 2 else ("peer", "pathkit")
        for side in order:
            seconds, outs[side] = timed(mine if side == "pathkit" else peer, peer_cwd if side == "peer" else None,
                                        peer_env if side == "peer" else None)
            if pair:
                times[side].append(seconds)
        print(f"  pair {pair}{' (warm-up)' if not pair else ''}: load {loadavg().split()[0]}"
              + ("" if not pair else f", pathkit {times['pathkit'][-1]:.3f} s, peer {times['peer'][-1]:.3f} s"))
    ratios = sorted(p / m for p, m in zip(times["peer"], times["pathkit"], strict=True))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"  {name}: pathkit {med(times['pathkit']):.3f} s, peer {med(times['peer']):.3f} s (medians); "
          f"peer / pathkit per pair {', '.join(f'{r:.2f}' for r in ratios)} -> median {med(ratios):.2f}x")
    return outs["pathkit"], outs["peer"]


def first_run_nlg(command: list[str], folder: Path, expected: str) -> None:
    """Time one nlg process with an empty cache folder: it parses METEOR's paraphrase table
    into the cache before scoring (later processes reuse it)."""
    cache = folder / "empty-cache"
    cache.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    seconds, out = timed(command, env=env)
    same = json.loads(out) == json.loads(expected)
    print(f"  first-ever run (empty cache, builds METEOR's paraphrase index): pathkit {seconds:.1f} s, "
          f"load {loadavg().split()[0]}, scores {'identical' if same else 'DIFFERENT'} to the cached runs'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--pathbench", type=Path, default=None, help="folder holding PathBench's crqs/ package")
    parser.add_argument("--only", choices=("crqs", "nlg"), default=None)
    parser.add_argument("--first-run", action="store_true", help="also time nlg with an empty pathkit cache")
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"{args.data}: the REG 2025 splits file is missing (give --data)")
    pathkit = [sys.executable, "-m", "pathkit_core.cli", "score", "--json", "-p"]
    print(f"load average {loadavg()}; python {sys.executable}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.only in (None, "crqs"):
            data = pairs_file(folder, args.data, one_line=False)
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
