"""`pathkit compare A B`: is run A better than run B on the same test cases, and are we sure?"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, print_json, print_table, split_names, user_errors
from pathkit_core.contracts import PathkitError


def register(app: typer.Typer) -> None:
    @app.command("compare")
    @user_errors
    def compare_cmd(
        run_a: Path = typer.Argument(..., help="Run folder A (with metrics.json); any workspace or machine."),
        run_b: Path = typer.Argument(..., help="Run folder B, scored on the same test cases."),
        metric: list[str] = typer.Option([], "--metric", "-m",
                                         help="Score(s) to compare (AUROC, accuracy, CRQS, BLEU-4, ...); "
                                              "default: the headline scores with per-case values."),
        resamples: int = typer.Option(2000, "--resamples", help="Bootstrap resamples."),
        seed: int = typer.Option(0, "--seed", help="Seed of the resampling."),
        level: float = typer.Option(0.95, "--level", help="Confidence level of the intervals."),
        correction: str = typer.Option("holm", "--correction", help="Over the scores compared: holm, bh or none."),
        as_json: bool = typer.Option(False, "--json", help="Print the comparisons as JSON."),
        out: Path | None = typer.Option(None, "--out", help="Also write the comparisons to this CSV file."),
        also_a: list[Path] = typer.Option([], "--also-a",
                                          help="Another run folder of A with another training seed (repeat it); "
                                               "A's and B's runs are paired by the seed each recorded."),
        also_b: list[Path] = typer.Option([], "--also-b", help="Another run folder of B with another training seed."),
    ) -> None:
        """Paired tests of A - B on every case both runs scored: DeLong (AUROC), McNemar (accuracy), paired
        bootstrap (per-case scores); refuses, naming the cases, when the test cases differ. With several
        seeds per side (--also-a, --also-b), the suites' seeds x cases inference."""
        from pathkit_bench.compare_seeds import compare_seed_runs
        from pathkit_bench.suite.schema import MAX_SEED, check_statistics_options
        from pathkit_core.report.run_folder import RunFolder

        # the suite's rules (docs/comparisons.md): resamples, level and correction in range
        check_statistics_options("pathkit compare", correction=correction, level=level, resamples=resamples)
        if not 0 <= seed <= MAX_SEED:
            raise PathkitError(f"pathkit compare: --seed {seed} is outside [0, {MAX_SEED}]")
        names = split_names(metric)
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # counted twice, a score would weigh twice in the correction
            raise PathkitError(f"pathkit compare: --metric names {', '.join(twice)} more than once")
        runs_a, runs_b = [RunFolder(p) for p in (run_a, *also_a)], [RunFolder(p) for p in (run_b, *also_b)]
        rows, skipped, seeds = compare_seed_runs(runs_a, runs_b, names, n_resamples=resamples, seed=seed, level=level,
                                                 correction=correction)
        side_a, side_b = (";".join(str(r.path) for r in runs) for runs in (runs_a, runs_b))
        if out is not None:
            import polars as pl

            from pathkit_core.workspace import atomic_write_with

            frame = pl.DataFrame([r.row() for r in rows]).with_columns(pl.lit(side_a).alias("run_a"),
                                                                       pl.lit(side_b).alias("run_b"))
            if seeds:  # several seeds per side: which ones (one seed: the columns as they always were)
                frame = frame.with_columns(pl.lit(";".join(map(str, seeds))).alias("seeds"))
            atomic_write_with(out, frame.write_csv)
        if as_json:
            found = {"run_a": side_a, "run_b": side_b, "comparisons": [r.row() for r in rows],
                     "not_compared": skipped}
            print_json({**found, "seeds": seeds} if seeds else found)
            return
        console.print(escape(f"A: {side_a}\nB: {side_b}"), highlight=False)
        over = f" x {len(seeds)} seeds ({', '.join(map(str, seeds))})" if seeds else ""
        print_table(f"A - B on {rows[0].n_cases} shared test cases{over} (p adjusted: {correction})",
                    ["score", "test", "A", "B", "A - B", f"{int(level * 100)}% CI", "p", "p adj."],
                    [[r.key, r.test, r.a, r.b, r.difference, f"[{r.ci_low:.4f}, {r.ci_high:.4f}]", r.p_value,
                      r.p_adjusted] for r in rows])
        for r in rows:
            if r.note:
                console.print(escape(f"{r.key}: {r.note}"), highlight=False)
        for line in skipped:
            console.print(escape(f"not compared: {line}"), highlight=False)
        if out is not None:
            console.print(escape(f"comparisons written to {out}"), highlight=False)
