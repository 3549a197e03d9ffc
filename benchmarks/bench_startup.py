"""`pathkit --help` from a cold process, this checkout against another (before/after), side by side.

Each side is a fresh `python -m pathkit_core.cli --help` timed from start to exit (wall clock and
CPU seconds), in interleaved pairs after an untimed warm-up pair (the same machinery as
`bench_score_cold.py`, whose `side_by_side` prints the medians and the per-pair ratios). The
baseline is another pathkit checkout (e.g. main's, or `git archive` of a commit unpacked in a
scratch folder): its code is put first on the path, so the interpreter and the installed
third-party packages are the same on both sides. An empty interpreter's start is timed too: what
no change to pathkit can remove.

    .venv/bin/python benchmarks/bench_startup.py --baseline /tmp/pathkit-main [--pairs 5]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench_score_cold import loadavg, side_by_side, timed


def baseline_env(base: Path) -> dict[str, str]:
    """The environment running the baseline checkout's code (its packages and plugin folders first)."""
    paths = [base, *(base / "plugins" / p for p in ("encoders", "generators", "datasets", "metrics"))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, required=True, help="another pathkit checkout (before)")
    args = parser.parse_args()
    base = args.baseline.resolve()
    command = [sys.executable, "-m", "pathkit_core.cli", "--help"]
    print(f"load average {loadavg()}; python {sys.executable}")
    empty = sorted(timed([sys.executable, "-c", "pass"])[0] for _ in range(5))[2]
    print(f"  an empty interpreter: {empty:.3f} s (median of 5)")
    print(f"`pathkit --help`, this checkout ('pathkit') against the baseline {base} ('peer'):")
    now, before = side_by_side("pathkit --help", command, command, args.pairs, base, baseline_env(base))
    print(f"  help texts {'identical' if now == before else 'DIFFERENT'}")
    print(f"load average {loadavg()}")


if __name__ == "__main__":
    main()
