"""`pathkit run`: tile, extract, fit, predict and score one or more benchmark cells."""

from __future__ import annotations

import copy
from pathlib import Path

import typer
from rich.markup import escape

from pathkit_core.cli.common import (
    console,
    parse_key_values,
    print_scores,
    split_names,
    user_errors,
)
from pathkit_core.contracts import PathkitError


def register(app: typer.Typer) -> None:
    @app.command("run")
    @user_errors
    def run_cmd(
        dataset: str | None = typer.Option(None, "--dataset", "-d", help="Dataset plugin (default: the demo)."),
        encoder: list[str] = typer.Option([], "--encoder", "-e", help="Encoder plugin(s), comma-separated."),
        generator: list[str] = typer.Option([], "--generator", "-g", help="Generator plugin(s), comma-separated."),
        metric: list[str] = typer.Option([], "--metric", "-m", help="Metric(s); default: the dataset's."),
        config: Path | None = typer.Option(None, "--config", "-c", help="TOML run config."),
        workdir: Path | None = typer.Option(None, "--workdir", "-w", help="Workspace (default ./pathkit-work)."),
        dataset_root: Path | None = typer.Option(None, "--dataset-root", help="Folder of the dataset release."),
        weights: Path | None = typer.Option(None, "--weights", help="Encoder checkpoint file."),
        seed: int | None = typer.Option(None, "--seed"),
        max_epochs: int | None = typer.Option(None, "--max-epochs", help="Override the training epochs."),
        skip_missing: bool = typer.Option(
            False, "--skip-missing", help="Leave out cases whose slides are missing or give no features (recorded)."),
        cpu: bool = typer.Option(False, "--cpu", help="Train on the CPU even when a GPU is present."),
        shard: str | None = typer.Option(
            None, "--shard", help="Tile and extract only shard i of N (i/N) of the slides, then stop; "
                                  "a Slurm array task takes its own. A last run without it trains and scores."),
        dataset_option: list[str] = typer.Option(
            [], "--dataset-option", "-o", help="Dataset option KEY=VALUE (repeatable), e.g. split=random."),
        metric_option: list[str] = typer.Option(
            [], "--metric-option", help="Option of one metric, METRIC.KEY=VALUE (repeatable), e.g. "
                                        "mymetric.threshold=0.5; a change rescores only."),
    ) -> None:
        """Run the benchmark pipeline; with no arguments, the embedded demo."""
        from pathkit_core.plugins import get_plugin_manager
        from pathkit_core.run import RunSpec, load_run_config, run_pipeline
        from pathkit_core.workspace import DEFAULT_WORKDIR, check_regular_file, check_writable_dir

        if config is not None:
            check_regular_file(config, "--config")  # a named pipe would block the read
        values: dict = dict(load_run_config(config)) if config else {}
        if not config and not encoder and not generator:
            registry = get_plugin_manager()
            name = dataset or registry.default_demo()
            demo = registry.get("dataset", name).demo_run
            if demo:
                values.update(copy.deepcopy(dict(demo)), dataset=name)
                console.print(f"[bold]pathkit demo[/] {name}: {registry.get('dataset', name).description}")
        for key, value in (("dataset", dataset), ("workdir", workdir), ("dataset_root", dataset_root),
                           ("weights", weights), ("seed", seed)):
            if value is not None:
                values[key] = value
        if skip_missing:
            values["skip_missing"] = True
        if cpu:
            values["cpu"] = True
        if shard is not None:
            values["shard"] = shard
        if metric:
            values["metrics"] = split_names(metric)
        if max_epochs is not None:
            values.setdefault("train", {})["max_epochs"] = max_epochs
        if dataset_option:
            values.setdefault("dataset_options", {}).update(parse_key_values(dataset_option, "--dataset-option"))
        for dotted, value in parse_key_values(metric_option, "--metric-option").items():
            metric_name, _, key = dotted.partition(".")
            if not metric_name or not key:
                raise PathkitError(f"--metric-option {dotted}={value}: write METRIC.KEY=VALUE, "
                                   "e.g. mymetric.threshold=0.5")
            values.setdefault("metric_options", {}).setdefault(metric_name, {})[key] = value
        encoders = split_names(encoder) or _as_list(values.pop("encoder", None))
        generators = split_names(generator) or _as_list(values.pop("generator", None))
        values.pop("encoder", None)
        values.pop("generator", None)
        if "dataset" not in values or not encoders or not generators:
            raise PathkitError("give --dataset, --encoder and --generator (or --config FILE.toml), "
                               "or no arguments at all for the demo")
        check_writable_dir(values.get("workdir") or DEFAULT_WORKDIR, "--workdir")
        cells = [(e, g) for e in encoders for g in generators]
        results = []
        for enc, gen in cells:
            spec = RunSpec.from_mapping({**values, "encoder": enc, "generator": gen})
            console.rule(f"{spec.dataset} / {enc} / {gen}")
            result = run_pipeline(spec, log=console.print)
            if not result.summary:  # a shard's feature stage: nothing scored yet
                continue
            results.append((enc, gen, result))
            from pathkit_core.evaluation.provenance import banners
            from pathkit_core.report.run_folder import read_json

            saved = read_json(result.run_dir / "metrics.json") or {}
            for text in banners(saved):
                console.print(f"[bold red]{escape(text)}[/]", highlight=False)
            hidden = print_scores(f"test scores: {spec.dataset} / {enc} / {gen}", result.summary, result.baselines,
                                  headline_only=True, details=saved.get("details"))
            if hidden:
                console.print(f"{hidden} more score(s) in {result.run_dir / 'metrics.json'}; figures and per-case "
                              f"evidence in {result.run_dir / 'report.html'}", highlight=False)
            console.print(f"run folder: {result.run_dir}")
        if len(cells) > 1:
            from pathkit_core.plugins import get_plugin_manager

            get_plugin_manager().pm.hook.cells_finished(
                results=results, workdir=Path(values.get("workdir") or DEFAULT_WORKDIR), dataset=values["dataset"],
                console=console)


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return split_names([value])
    return [str(v) for v in value]
