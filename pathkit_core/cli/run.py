"""`pathkit run`: tile, extract, fit, predict and score one or more benchmark cells."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from pathkit_core.cli.common import console, parse_key_values, print_scores, split_names, user_errors
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
        slide_reader: str | None = typer.Option(
            None, "--slide-reader", help="Slide reader by name (pathkit list slide-readers) [first that opens it]; "
                                         "the [tiling] table's slide_reader."),
    ) -> None:
        """Run the benchmark pipeline; with no arguments, the embedded demo."""
        from pathkit_core.run import RunSpec, run_pipeline
        from pathkit_core.workspace import DEFAULT_WORKDIR, check_writable_dir

        values = _config_or_demo(config, dataset, encoder, generator)
        _apply_flags(values, {"dataset": dataset, "workdir": workdir, "dataset_root": dataset_root,
                              "weights": weights, "seed": seed, "shard": shard,
                              "skip_missing": skip_missing or None, "cpu": cpu or None},
                     metric, max_epochs, dataset_option, metric_option, {"slide_reader": slide_reader})
        # each cell's RunSpec below names its own encoder and generator over the config's
        encoders = split_names(encoder) or _as_list(values.get("encoder"))
        generators = split_names(generator) or _as_list(values.get("generator"))
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
            _show_cell(spec.dataset, enc, gen, result)
        if len(cells) > 1:
            from pathkit_core.plugins import get_plugin_manager

            get_plugin_manager().pm.hook.cells_finished(
                results=results, workdir=Path(values.get("workdir") or DEFAULT_WORKDIR), dataset=values["dataset"],
                console=console)


def _config_or_demo(config: Path | None, dataset: str | None, encoder: list[str], generator: list[str]) -> dict:
    """The run's settings from `--config`, or the demo's when nothing names a cell."""
    from pathkit_core.plugins import get_plugin_manager
    from pathkit_core.run import load_run_config
    from pathkit_core.workspace import check_regular_file

    if config is not None:
        check_regular_file(config, "--config")  # a named pipe would block the read
    values: dict = dict(load_run_config(config)) if config else {}
    if not config and not encoder and not generator:
        registry = get_plugin_manager()
        name = dataset or registry.default_demo()
        demo = registry.get("dataset", name).demo_run
        if demo:
            values.update(copy.deepcopy(dict(demo)), dataset=name)
            console.print(f"[bold]pathkit demo[/] {escape(name)}: {escape(registry.get('dataset', name).description)}")
    return values


def _apply_flags(values: dict, given: dict, metric: list[str], max_epochs: int | None, dataset_option: list[str],
                 metric_option: list[str], tiling: dict | None = None) -> None:
    """The command line's options over the settings (`given`: the plain ones, None where not given;
    `tiling`: the [tiling] table's, the same)."""
    values.update({key: value for key, value in given.items() if value is not None})
    tiling = {key: value for key, value in (tiling or {}).items() if value is not None}
    if tiling:
        from pathkit_core.wsi.reader_choice import check_reader_name

        check_reader_name(tiling.get("slide_reader"))
        values.setdefault("tiling", {}).update(tiling)
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


def _show_cell(dataset: str, enc: str, gen: str, result: Any) -> None:
    """A finished cell's banners, headline scores and folder."""
    from pathkit_core.evaluation.provenance import banners
    from pathkit_core.report.run_folder import read_json

    saved = read_json(result.run_dir / "metrics.json") or {}
    for text in banners(saved):
        console.print(f"[bold red]{escape(text)}[/]", highlight=False)
    hidden = print_scores(f"test scores: {dataset} / {enc} / {gen}", result.summary, result.baselines,
                          headline_only=True, details=saved.get("details"))
    if hidden:
        console.print(escape(f"{hidden} more score(s) in {result.run_dir / 'metrics.json'}; figures and per-case "
                             f"evidence in {result.run_dir / 'report.html'}"), highlight=False)
    console.print(f"run folder: {escape(str(result.run_dir))}", highlight=False)


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return split_names([value])
    return [str(v) for v in value]
