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
    ) -> None:
        """Run a benchmark suite (resumable: a rerun reuses every finished cell) and write its leaderboard,
        comparisons and report under <workdir>/suites/<name>/."""
        from pathkit_bench.report.suite import write_suite_report
        from pathkit_bench.suite.analysis import SuiteAnalysis
        from pathkit_bench.suite.config import load_suite
        from pathkit_bench.suite.runner import run_cells, suite_folder, write_leaderboard

        suite = load_suite(config)
        folder = suite_folder(workdir, suite)
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
