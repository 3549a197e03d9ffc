"""`pathkit bench --config suite.toml`: every cell of a benchmark suite, its tidy leaderboard, the
paired comparisons within each task and ranks across tasks, and the suite report."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, print_table, user_errors
from pathkit_core.contracts import PathkitError


def register(app: typer.Typer) -> None:
    @app.command("bench")
    @user_errors
    def bench_cmd(
        config: Path | None = typer.Option(None, "--config", "-c", help="The suite TOML (docs/comparisons.md)."),
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
        export: Path | None = typer.Option(None, "--export", help="Also write the suite's tidy table with every "
                                           "cell's identities to FILE (Parquet; CSV when it ends in .csv)."),
        merge: tuple[Path, Path] | None = typer.Option(None, "--merge", help="Merge two exports A B into "
                                                       "<workdir>/suites/merged/ and compare them (rows whose "
                                                       "protocol differs are refused); no --config."),
    ) -> None:
        """Run a benchmark suite (resumable: a rerun reuses every finished cell) and write its leaderboard,
        comparisons and report under <workdir>/suites/<name>/."""
        from pathkit_bench.report.suite import write_suite_report
        from pathkit_bench.suite.analysis import SuiteAnalysis
        from pathkit_bench.suite.config import check_registered, load_suite
        from pathkit_bench.suite.runner import suite_folder, suite_lock
        from pathkit_core.shard import current_shard

        if merge:
            _merge(merge, workdir, config)
            return
        if config is None:
            raise PathkitError("pathkit bench needs --config SUITE.toml (or --merge A B)")
        suite = load_suite(config)
        folder = suite_folder(workdir, suite)
        if slurm:
            _submit(config, workdir, suite, shard=shard, report_only=report_only, cpu=cpu, options=sbatch_option)
            return
        if sbatch_option:
            raise PathkitError("--sbatch-option needs --slurm")
        results: list = []
        if report_only:
            _check_report_only(suite, folder)
        else:
            check_registered(suite)  # every name a registered plugin's, before any cell runs
            if current_shard(shard).outer().whole:  # not --shard, nor a Slurm array task
                folder.mkdir(parents=True, exist_ok=True)
                lock = suite_lock(folder).acquire()  # a second whole run of this suite is refused
            else:
                lock = None
            try:
                results = _run(suite, workdir, folder, shard, cpu)
            finally:
                if lock is not None:
                    lock.release()
            if results is None:
                return
        analysis = SuiteAnalysis(folder, correction=suite.correction, alpha=suite.alpha, level=suite.level,
                                 resamples=suite.resamples)
        report = write_suite_report(analysis)
        rows = analysis.headline_rows()
        print_table(f"suite {suite.name}: compared score per cell (mean over seeds; ★ significantly best)",
                    ["task", "score", "encoder", "generator", "mean", "sd", "CI low", "CI high"],
                    [[r["task"], r["score"], r["encoder"], ("★ " if r["best"] else "") + r["generator"], r["mean"],
                      r["sd"], r["ci_low"], r["ci_high"]] for r in rows])
        console.print(escape(f"tidy leaderboard: {folder / 'leaderboard.parquet'}; report: {report}"),
                      highlight=False)
        from pathkit_bench.report.cost import cost_rows, device_hours

        spent = cost_rows(analysis)
        if spent:
            _say(f"cost: {device_hours(spent):.4f} device-hours over {len(spent)} cell(s) (the report's Cost section)")
        _check_compared(suite, analysis)
        if export is not None:
            from pathkit_bench.suite.exchange import write_export

            _say(f"export: {write_export(folder, export)} (every cell's identities: docs/comparisons.md)")
        failed = [r for r in results if r.error]
        if failed:
            raise PathkitError(f"{len(failed)} cell(s) failed (the report shows the others): "
                               + "; ".join(f"{r.cell.label}: {r.error}" for r in failed))


def _merge(files: tuple[Path, Path], workdir: Path, config: Path | None) -> None:
    """`--merge A B`: the merged suite folder, its report and headline table."""
    from pathkit_bench.report.suite import write_suite_report
    from pathkit_bench.suite.analysis import SuiteAnalysis
    from pathkit_bench.suite.exchange import merge_exports, read_export, write_merged

    if config is not None:
        raise PathkitError("--merge takes two exports, not --config")
    merged, refused = merge_exports(read_export(files[0]), read_export(files[1]))
    if refused:
        _say(f"refused {len(refused)} row(s) of {files[1]} whose protocol differs from {files[0]}'s for the same "
             f"task and generator: {'; '.join(refused[:10])}{' ...' if len(refused) > 10 else ''}")
    folder = write_merged(merged, Path(workdir) / "suites" / "merged", "merged")
    missing = [d for d in merged["run_dir"].unique().to_list() if not d or not Path(d).is_dir()]
    if missing:
        _say(f"merged leaderboard: {folder / 'leaderboard.parquet'}; {len(missing)} run folder(s) are not on this "
             "machine, so the paired comparisons need them copied to the paths the exports name")
        return
    report = write_suite_report(SuiteAnalysis(folder))
    _say(f"merged {merged.height} row(s) into {folder / 'leaderboard.parquet'}; report: {report}")


def _say(line: str) -> None:
    console.print(escape(line), highlight=False)  # cell labels and errors quote the suite's names


def _run(suite, workdir: Path, folder: Path, shard: str | None, cpu: bool) -> list | None:
    """Run this process's cells; the results when they were every cell (the leaderboard then
    written), None for a shard."""
    from pathkit_bench.suite.runner import run_cells, write_leaderboard

    _say(f"suite {suite.name}: {len(suite.cells())} cell(s) ({len(suite.tasks)} task(s) x encoders x generators x "
         f"{len(suite.seeds)} seed(s))")
    results, whole = run_cells(suite, workdir, shard=shard, overrides={"cpu": True} if cpu else None,
                               log=lambda line: console.print(line, highlight=False))  # the run's own markup
    failed = [r for r in results if r.error]
    reused = sum(r.reused for r in results)
    _say(f"{len(results) - len(failed)} cell(s) finished ({reused} reused), {len(failed)} failed")
    if not whole:
        _say("run without --shard to write the suite leaderboard and report (finished cells are reused)")
        if failed:
            raise PathkitError(f"{len(failed)} cell(s) of this shard failed: "
                               + "; ".join(f"{r.cell.label}: {r.error}" for r in failed))
        return None
    write_leaderboard(suite, results, folder)
    return results


def _check_report_only(suite, folder: Path) -> None:
    """`--report-only` rebuilds from the suite folder: refused when the TOML's compared scores
    differ from those its cells were run with (the comparisons would mix the two)."""
    from pathkit_bench.suite.runner import CELLS, is_suite_folder
    from pathkit_core.readers import DamagedFile

    if not is_suite_folder(folder):
        raise PathkitError(f"{folder} holds no suite leaderboard; run `pathkit bench --config {suite.path}` first")
    import polars as pl

    try:
        cells = pl.read_csv(folder / f"{CELLS}.csv", infer_schema_length=0)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise DamagedFile(folder / f"{CELLS}.csv", f"is not a readable cells table ({exc})") from None
    recorded = {r["task"]: r.get("compare") or "" for r in cells.iter_rows(named=True)}
    changed = [f"{t.name}: {recorded[t.name]!r} -> {t.compare or ''!r}" for t in suite.tasks
               if t.name in recorded and recorded[t.name] != (t.compare or "")]
    if changed:
        raise PathkitError(f"{suite.path}: the compared score changed since the cells ran ({'; '.join(changed)}); "
                           "run without --report-only (finished cells are reused) to compare on it")


def _check_compared(suite, analysis) -> None:
    """A task whose compared score none of its cells holds is an error, not an empty headline."""
    compared = {t.task for t in analysis.tasks}
    for task in suite.tasks:
        if task.compare and task.name not in compared:
            held = analysis.frame.filter(analysis.frame["task"] == task.name)["score"].unique().sort().to_list()
            if held:
                raise PathkitError(f"{suite.path}: task {task.name!r} compares {task.compare!r}, which none of its "
                                   f"cells scored; they hold {', '.join(held)}")


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
