"""`pathkit bench --config suite.toml`: every cell of a benchmark suite, its tidy leaderboard, the
paired comparisons within each task and ranks across tasks, and the suite report."""

from __future__ import annotations

from pathlib import Path

import typer

from pathkit_core.cli.common import console, print_table, user_errors
from pathkit_core.contracts import PathkitError


def register(app: typer.Typer) -> None:
    @app.command("bench")
    @user_errors
    def bench_cmd(
        config: Path = typer.Option(..., "--config", "-c", help="The suite TOML (docs/comparisons.md)."),
        workdir: Path = typer.Option(Path("pathkit-work"), "--workdir", "-w", help="Workspace of every cell."),
        shard: str | None = typer.Option(None, "--shard", help="Run only shard i of N (i/N) of the cells; a last "
                                                                "run without it reuses them and writes the report."),
        cpu: bool = typer.Option(False, "--cpu", help="Train on the CPU even when a GPU is present."),
        report_only: bool = typer.Option(False, "--report-only",
                                         help="Rebuild the comparisons and report from the suite folder; run nothing."),
        slurm: bool = typer.Option(False, "--slurm", help="Submit the cells as a Slurm job array and the report as a "
                                   "job that waits for it (sbatch; docs/scale.md); print the job ids."),
        sbatch_option: list[str] = typer.Option([], "--sbatch-option", help="Passed to both sbatch calls, e.g. "
                                                "--sbatch-option=--partition=gpu (repeatable)."),
    ) -> None:
        """Run a benchmark suite (resumable: a rerun reuses every finished cell) and write its leaderboard,
        comparisons and report under <workdir>/suites/<name>/."""
        from pathkit_bench.report.suite import write_suite_report
        from pathkit_bench.suite.analysis import SuiteAnalysis
        from pathkit_bench.suite.config import load_suite
        from pathkit_bench.suite.runner import run_cells, suite_folder, write_leaderboard

        suite = load_suite(config)
        folder = suite_folder(workdir, suite)
        if slurm:
            _submit(config, workdir, suite, shard=shard, report_only=report_only, cpu=cpu, options=sbatch_option)
            return
        if sbatch_option:
            raise PathkitError("--sbatch-option needs --slurm")
        if not report_only:
            console.print(f"suite {suite.name}: {len(suite.cells())} cell(s) ({len(suite.tasks)} task(s) x encoders "
                          f"x generators x {len(suite.seeds)} seed(s))", highlight=False)
            results, whole = run_cells(suite, workdir, shard=shard, overrides={"cpu": True} if cpu else None,
                                       log=lambda line: console.print(line, highlight=False))
            failed = [r for r in results if r.error]
            reused = sum(r.reused for r in results)
            console.print(f"{len(results) - len(failed)} cell(s) finished ({reused} reused), {len(failed)} failed",
                          highlight=False)
            if not whole:
                console.print("run without --shard to write the suite leaderboard and report (finished cells are "
                              "reused)", highlight=False)
                if failed:
                    raise PathkitError(f"{len(failed)} cell(s) of this shard failed: "
                                       + "; ".join(f"{r.cell.label}: {r.error}" for r in failed))
                return
            write_leaderboard(suite, results, folder)
        analysis = SuiteAnalysis(folder, correction=suite.correction, alpha=suite.alpha, level=suite.level,
                                 resamples=suite.resamples)
        report = write_suite_report(analysis)
        rows = analysis.headline_rows()
        print_table(f"suite {suite.name}: compared score per cell (mean over seeds; ★ significantly best)",
                    ["task", "score", "encoder", "generator", "mean", "sd", "CI low", "CI high"],
                    [[r["task"], r["score"], r["encoder"], ("★ " if r["best"] else "") + r["generator"], r["mean"],
                      r["sd"], r["ci_low"], r["ci_high"]] for r in rows])
        console.print(f"tidy leaderboard: {folder / 'leaderboard.parquet'}; report: {report}", highlight=False)
        if not report_only:
            failed = [r for r in results if r.error]
            if failed:
                raise PathkitError(f"{len(failed)} cell(s) failed (the report shows the others): "
                                   + "; ".join(f"{r.cell.label}: {r.error}" for r in failed))


def _submit(config: Path, workdir: Path, suite, *, shard: str | None, report_only: bool, cpu: bool,
            options: list[str]) -> None:
    from rich.markup import escape

    from pathkit_bench.suite.slurm import submit

    if shard is not None or report_only:
        raise PathkitError("--slurm submits every cell and the report: leave out --shard and --report-only")
    done = submit(config, workdir, suite.name, len(suite.cells()), options=options, cpu=cpu)
    console.print(f"suite {escape(suite.name)}: cells as array job {done.array_job} ({done.tasks} task(s); finished "
                  f"cells are reused), report as job {done.report_job} (after every task succeeds); logs in "
                  f"{escape(str(done.log_dir))}", highlight=False)
    console.print(f"array_job={done.array_job} report_job={done.report_job}", highlight=False)
