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


# What pathkit itself sets on each job: an option that changed it would change what runs or when.
_RESERVED = ("--wrap", "--array", "--dependency", "--kill-on-invalid-dep", "--parsable")
_RESERVED_SHORT = ("-a", "-d")


def sbatch_option_problem(option: str) -> str | None:
    """Why `option` cannot go to `sbatch` (None when it can): each is one sbatch option
    (`--partition=gpu`, `-pgpu`), passed as one argument, never through a shell; one with a
    newline or another control character, one that is not an option (a script path) and one that
    would replace what pathkit sets (the job's command, its array, its dependency) are refused."""
    if not isinstance(option, str) or not option.startswith("-") or option in ("-", "--"):
        return f"--sbatch-option {option!r} is not an sbatch option (give it as --sbatch-option=--partition=gpu)"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in option):
        return f"--sbatch-option {option!r} holds a newline or another control character"
    name = option.split("=", 1)[0]
    if name in _RESERVED or (not option.startswith("--") and option[:2] in _RESERVED_SHORT):
        return f"--sbatch-option {option!r} would replace what pathkit sets on its jobs ({name})"
    return None


def submit(config: Path, workdir: Path, suite_name: str, n_cells: int, *, options: Sequence[str] = (),
           cpu: bool = False, max_tasks: int = 1000) -> Submission:
    """Submit the array (one task per cell, at most `max_tasks`) and the dependent report job.
    `options` go to both `sbatch` calls (e.g. `--partition=gpu`, `--gres=gpu:1`)."""
    from pathkit_core.workspace import confined

    if n_cells < 1:
        raise PathkitError("--slurm: the suite has no cells")
    for option in options:
        if problem := sbatch_option_problem(option):
            raise PathkitError(problem)
    tasks = min(n_cells, max_tasks)
    log_dir = confined(Path(workdir) / "suites", suite_name, "slurm", what="--slurm: suite name").resolve()
    log_dir.mkdir(parents=True, exist_ok=True)
    wrap = shlex.join(bench_command(config, workdir, cpu=cpu))
    array = _sbatch([f"--job-name=pathkit-bench-{suite_name}", f"--array=0-{tasks - 1}",
                     f"--output={log_dir}/cells-%A_%a.out", *options, f"--wrap={wrap}"])
    report = _sbatch([f"--job-name=pathkit-bench-{suite_name}-report", f"--dependency=afterok:{array}",
                      "--kill-on-invalid-dep=yes", f"--output={log_dir}/report-%j.out", *options, f"--wrap={wrap}"])
    return Submission(array, report, tasks, log_dir)
