"""`pathkit bench --slurm`: a suite's cells as one Slurm job array and its report as a job that
waits for the array (`--dependency=afterok`), submitted with plain `sbatch` (docs/scale.md,
"Suites on Slurm").

Array task k of T runs `pathkit bench` on the same suite and workspace; the task takes outer
shard k of T from `SLURM_ARRAY_TASK_*` (pathkit_core.shard), i.e. the cells whose label hashes
to it, and every cell already finished with the same inputs is reused by the pipeline's own
resume, so a resubmitted suite only runs what is missing. The report job is `pathkit bench`
without a shard: it finds every cell finished and writes the leaderboard, comparisons and
report. T is the number of cells (capped by `max_tasks`).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pathkit_core.contracts import PathkitError


@dataclass(frozen=True)
class Submission:
    array_job: str
    report_job: str
    tasks: int
    log_dir: Path


def bench_command(config: Path, workdir: Path, *, cpu: bool) -> list[str]:
    """The `pathkit bench` every job runs (this interpreter, absolute paths: jobs start elsewhere)."""
    cmd = [sys.executable, "-m", "pathkit_core.cli", "bench", "--config", str(Path(config).resolve()),
           "--workdir", str(Path(workdir).resolve())]
    return [*cmd, "--cpu"] if cpu else cmd


def _sbatch(args: Sequence[str]) -> str:
    exe = shutil.which("sbatch")
    if exe is None:
        raise PathkitError("--slurm: sbatch is not on PATH (run it on a Slurm login node)")
    done = subprocess.run([exe, "--parsable", *args], capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[0]
        raise PathkitError(f"--slurm: sbatch refused the job: {why}")
    job = done.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise PathkitError(f"--slurm: sbatch printed {done.stdout.strip()!r}, not a job id")
    return job


def submit(config: Path, workdir: Path, suite_name: str, n_cells: int, *, options: Sequence[str] = (),
           cpu: bool = False, max_tasks: int = 1000) -> Submission:
    """Submit the array (one task per cell, at most `max_tasks`) and the dependent report job.
    `options` go to both `sbatch` calls (e.g. `--partition=gpu`, `--gres=gpu:1`)."""
    if n_cells < 1:
        raise PathkitError("--slurm: the suite has no cells")
    tasks = min(n_cells, max_tasks)
    log_dir = (Path(workdir) / "suites" / suite_name / "slurm").resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    wrap = shlex.join(bench_command(config, workdir, cpu=cpu))
    array = _sbatch([f"--job-name=pathkit-bench-{suite_name}", f"--array=0-{tasks - 1}",
                     f"--output={log_dir}/cells-%A_%a.out", *options, f"--wrap={wrap}"])
    report = _sbatch([f"--job-name=pathkit-bench-{suite_name}-report", f"--dependency=afterok:{array}",
                      "--kill-on-invalid-dep=yes", f"--output={log_dir}/report-%j.out", *options, f"--wrap={wrap}"])
    return Submission(array, report, tasks, log_dir)
