"""`pathkit crossval` (registered by the goldmark plugin): every fold, the cross-validation and reciprocal
cross-site settings of GOLDMARK Figure 3, mean/std and encoder rank-sums (Table 2)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, print_table, split_names, user_errors
from pathkit_core.contracts import PathkitError

SHOWN_KEYS = ("AUROC", "AP", "balanced_accuracy", "F1", "ECE", "Brier")


def register(app: typer.Typer) -> None:
    @app.command("crossval")
    @user_errors
    def crossval_cmd(
        dataset: list[str] = typer.Option([], "--dataset", "-d", help="Dataset(s)/task views, e.g. goldmark:COAD-MSI."),
        encoder: list[str] = typer.Option([], "--encoder", "-e", help="Encoder plugin(s), comma-separated."),
        generator: list[str] = typer.Option([], "--generator", "-g", help="Generator plugin(s), comma-separated."),
        train_cohort: str | None = typer.Option(None, "--train-cohort", help="Cohort the models are trained on."),
        test_cohort: str | None = typer.Option(
            None, "--test-cohort", help="Other cohort: frozen-weight external test (and the reciprocal direction)."),
        reciprocal: bool = typer.Option(True, "--reciprocal/--no-reciprocal",
                                        help="Also train on the test cohort and test on the train cohort."),
        folds: int = typer.Option(5, "--folds", min=1, help="Number of patient-level splits to run (1..N)."),
        top_k: int = typer.Option(8, "--top-k", min=0, help="Rank-sums also over the k best tasks (0: off)."),
        config: Path | None = typer.Option(None, "--config", "-c", help="TOML run config (base options)."),
        workdir: Path | None = typer.Option(None, "--workdir", "-w", help="Workspace (default ./pathkit-work)."),
        dataset_root: Path | None = typer.Option(None, "--dataset-root", help="Folder of the dataset release."),
        seed: int | None = typer.Option(None, "--seed"),
        max_epochs: int | None = typer.Option(None, "--max-epochs", help="Override the training epochs."),
        skip_missing: bool = typer.Option(False, "--skip-missing", help="Leave out cases without features (recorded)."),
        cpu: bool = typer.Option(False, "--cpu", help="Train on the CPU even when a GPU is present."),
    ) -> None:
        """Run the folds of one or more cells in the GOLDMARK settings (A-CV, A->B, B-CV, B->A)."""
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from pathkit_core.run import load_run_config
        from pathkit_datasets._goldmark_crossval import run_crossval, settings_for

        values: dict = dict(load_run_config(config)) if config else {}
        given = {"workdir": workdir, "dataset_root": dataset_root, "seed": seed,
                 "skip_missing": skip_missing or None, "cpu": cpu or None}
        values.update({key: value for key, value in given.items() if value is not None})
        if max_epochs is not None:
            values.setdefault("train", {})["max_epochs"] = max_epochs
        datasets = split_names(dataset) or split_names([values.pop("dataset", "")])
        encoders = split_names(encoder) or split_names([values.pop("encoder", "")])
        generators = split_names(generator) or split_names([values.pop("generator", "")])
        for key in ("dataset", "encoder", "generator"):
            values.pop(key, None)
        if not datasets or not encoders or not generators:
            raise PathkitError("give --dataset, --encoder and --generator (or --config FILE.toml)")
        if folds < 1:
            raise PathkitError(f"--folds must be at least 1, got {folds}")
        settings = settings_for(train_cohort, test_cohort, reciprocal)
        cells = [(d, e, g) for d in datasets for e in encoders for g in generators]
        total = len(cells) * folds * len(settings)
        results = []
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} runs"),
                      TimeElapsedColumn(), console=console, transient=False) as progress:
            bar = progress.add_task("crossval", total=total)

            def on_run(what: str) -> None:
                progress.update(bar, description=what)

            def log(message: str) -> None:
                if message.startswith(("best epoch", "frozen weights")):
                    progress.advance(bar)
                progress.console.print(message, highlight=False)

            for d, e, g in cells:
                result = run_crossval({**values, "dataset": d, "encoder": e, "generator": g},
                                      folds=list(range(1, folds + 1)), train_cohort=train_cohort,
                                      test_cohort=test_cohort, reciprocal=reciprocal, log=log, on_run=on_run)
                results.append(result)
        for cell, result in zip(cells, results, strict=True):
            _show_cell(cell, result)
        if len(encoders) > 1:
            _rank_sums(results, Path(values.get("workdir", "pathkit-work")), top_k)


def _show_cell(cell: tuple[str, str, str], result) -> None:
    """One cell's mean and sd over folds of the shown scores."""
    rows = [(s["setting"], s["checkpoint"], s["key"], s["mean"], s["std"], s["n_folds"])
            for s in result.summary if s["key"] in SHOWN_KEYS]
    rows.sort(key=lambda r: (r[0], r[1], SHOWN_KEYS.index(r[2])))
    print_table(f"{' / '.join(cell)}: mean and sd over folds", ["setting", "checkpoint", "score", "mean", "sd",
                                                                "folds"], rows)
    console.print(f"written to {escape(str(result.out_dir))}", highlight=False)


def _rank_sums(results, workdir: Path, top_k: int) -> None:
    import polars as pl

    from pathkit_core.workspace import atomic_write_with
    from pathkit_datasets._goldmark_crossval import RANKSUM_SUBDIR
    from pathkit_datasets._goldmark_ranksum import encoder_rank_sums, top_tasks

    rows = [{"task": s["dataset"], "encoder": s["encoder"], "generator": s["generator"], "setting": s["setting"],
             "value": s["mean"]}
            for r in results for s in r.summary
            if s["metric"] == "classification" and s["key"] == "AUROC" and s["checkpoint"] == "best"]
    out_dir = workdir / "leaderboards" / RANKSUM_SUBDIR
    for generator in sorted({r["generator"] for r in rows}):
        subset = [r for r in rows if r["generator"] == generator]
        tables = {"all": encoder_rank_sums(subset)}
        if top_k and len({r["task"] for r in subset}) > top_k:
            tables[f"top{top_k}"] = encoder_rank_sums(subset, tasks=top_tasks(subset, top_k))
        for name, table in tables.items():
            atomic_write_with(out_dir / f"encoder_ranksum_{generator}_{name}.csv", pl.DataFrame(table).write_csv)
            print_table(f"encoder rank-sums ({generator}, {name} tasks; lower is better)",
                        ["setting", "encoder", "mean AUROC", "rank-sum", "tasks"],
                        [(t["setting"], t["encoder"], t["mean_score"], t["rank_sum"], t["n_tasks"]) for t in table])
    console.print(f"rank-sums written to {escape(str(out_dir))}", highlight=False)
