"""A suite config (TOML): tasks (a dataset with its options and root), encoders, generators (per task
where they differ), metrics, seeds, and the run options every cell shares.

    name = "my-suite"
    encoders = ["uni2h", "virchow2"]
    generators = ["gma-mil"]          # default for tasks that name none
    seeds = [0, 1, 2]
    correction = "holm"               # or "bh", "none": over every comparison of a task's table
    alpha = 0.05
    resamples = 2000

    [run]                             # any `pathkit run` option (RunSpec field) shared by every cell
    max_tiles = 1000
    [run.train]
    max_epochs = 20

    [[tasks]]
    dataset = "goldmark:COAD-MSI"
    name = "COAD-MSI"                 # the task's label (default: the dataset)
    dataset_root = "/data/goldmark"
    compare = "AUROC"                 # the score compared and ranked (default: the first headline score)
    generators = ["gma-mil", "clam"]  # this task's own (optional)
    metrics = ["classification"]
    [tasks.dataset_options]
    fold = 1
    [tasks.train]                     # over [run.train] for this task's cells

Components are named, never imported: a suite can only choose among registered plugins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathkit_bench.suite.schema import check_suite_schema
from pathkit_core.contracts import PathkitError
from pathkit_core.random_copy import random_base

SUITE_KEYS = ("name", "encoders", "generators", "seeds", "metrics", "correction", "alpha", "resamples", "level",
              "run", "tasks", "reference_scores", "baselines")
# The encoders `baselines = true` adds to every task as reference rows (docs/comparisons.md): the
# ImageNet ResNet-50 truncated after its third stage (CLAM/TRIDENT's resnet50_trunc); it also adds
# `NAME+random`, the random-weight copy, of each foundation-model encoder of the task.
BASELINE_ENCODERS = ("resnet50-trunc",)
TASK_KEYS = ("name", "dataset", "dataset_root", "dataset_options", "encoders", "generators", "metrics", "compare",
             "hparams", "train", "tiling", "options")
# Run options a suite decides per cell; the [run] table may not set them.
CELL_FIELDS = ("dataset", "encoder", "generator", "seed", "shard")


@dataclass(frozen=True)
class SuiteTask:
    name: str
    dataset: str
    encoders: tuple[str, ...]
    generators: tuple[str, ...]
    metrics: tuple[str, ...] = ()
    compare: str | None = None
    run: Mapping[str, Any] = field(default_factory=dict)  # this task's run options (over the suite's)


@dataclass(frozen=True)
class Cell:
    """One run of the suite: a task, an encoder, a generator, a seed."""

    task: SuiteTask
    encoder: str
    generator: str
    seed: int

    @property
    def label(self) -> str:
        return f"{self.task.name}/{self.encoder}/{self.generator}/seed{self.seed}"

    def run_values(self, workdir: Path) -> dict[str, Any]:
        """The RunSpec mapping of this cell (the suite's options, the task's over them, the cell's)."""
        values = {**dict(self.task.run), "dataset": self.task.dataset, "encoder": self.encoder,
                  "generator": self.generator, "seed": self.seed, "workdir": workdir,
                  # the cell trains and scores whole: a suite shards over cells, not over slides
                  "shard": "1/1"}
        if self.task.metrics:
            values["metrics"] = list(self.task.metrics)
        return values


@dataclass(frozen=True)
class SuiteConfig:
    name: str
    path: Path
    tasks: tuple[SuiteTask, ...]
    seeds: tuple[int, ...] = (0,)
    correction: str = "holm"
    alpha: float = 0.05
    level: float = 0.95
    resamples: int = 2000
    # published scores shown beside the cells ([[reference_scores]]; docs/comparisons.md)
    reference_scores: tuple[Mapping[str, Any], ...] = ()
    # encoders added as reference rows by `baselines = true` (the report's "Baselines" section):
    # BASELINE_ENCODERS and the random-weight copies (`NAME+random`) of the tasks' foundation models
    baselines: tuple[str, ...] = ()

    def cells(self) -> list[Cell]:
        return [Cell(t, e, g, s) for t in self.tasks for e in t.encoders for g in t.generators for s in self.seeds]


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PathkitError(f"{where} must be a list of names, got {value!r}")
    if len(set(value)) != len(value):
        raise PathkitError(f"{where} names {sorted({v for v in value if value.count(v) > 1})} more than once")
    return tuple(value)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, tables merged one level deep ([run.train] then [tasks.train])."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _resolve(path_value: Any, base: Path) -> str:
    path = Path(str(path_value)).expanduser()
    return str(path if path.is_absolute() else (base / path))


def parse_suite(data: Mapping[str, Any], path: Path, text: str | None = None) -> SuiteConfig:
    """The suite of mapping `data` (read from `path`; `text`, the file's, lets errors name lines),
    checked as a whole against the declared schema (`suite.schema`) before anything else."""
    where = str(path)
    checked = check_suite_schema(data, where, text)
    from pathkit_core.workspace import folder_name_problem

    problem = folder_name_problem(checked.name or path.stem)
    if problem:
        raise PathkitError(f"{where}: the suite's name (its file's stem) {problem}; set name = \"...\"")
    run = data.get("run", {})
    if not isinstance(run, Mapping):
        raise PathkitError(f"{where}: [run] must be a table of run options")
    fixed = sorted(set(run) & set(CELL_FIELDS))
    if fixed:
        raise PathkitError(f"{where}: [run] sets {fixed}, which the suite decides per cell (tasks, encoders, "
                           "generators, seeds; shard with `pathkit bench --shard`)")
    encoders = _names(data.get("encoders"), f"{where}: encoders")
    generators = _names(data.get("generators"), f"{where}: generators")
    metrics = _names(data.get("metrics"), f"{where}: metrics")
    tasks = [_parse_task(entry, f"{where}: task {n}", path, run, encoders, generators, metrics, checked.baselines)
             for n, entry in enumerate(data["tasks"], start=1)]
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise PathkitError(f"{where}: two tasks are named alike ({sorted({x for x in names if names.count(x) > 1})});"
                           " give each a distinct name")
    _refuse_shared_run_folders(tasks, where)
    references = tuple(r.model_dump(exclude_none=True) for r in checked.reference_scores)
    unknown = sorted({r["task"] for r in references} - set(names))
    if unknown:
        raise PathkitError(f"{where}: [[reference_scores]] name task(s) {unknown} the suite does not have "
                           f"(its tasks: {', '.join(names)})")
    added = dict.fromkeys(e for t in tasks for e in t.encoders if e in BASELINE_ENCODERS or random_base(e))
    return SuiteConfig(checked.name or path.stem, path, tuple(tasks), tuple(checked.seeds), checked.correction,
                       checked.alpha, checked.level, checked.resamples, references,
                       tuple(added) if checked.baselines else ())


def random_copies(encoders: tuple[str, ...]) -> list[str]:
    """`NAME+random` for each foundation-model encoder of `encoders` (a registered encoder with
    `is_pathology_model`): its architecture with random weights, a reference row of `baselines =
    true`. A name the registry does not know is left to `check_registered` to refuse."""
    from pathkit_core.plugins import get_plugin_manager
    from pathkit_core.random_copy import RANDOM_SUFFIX

    registry = get_plugin_manager()
    known = set(registry.names("encoder"))
    return [f"{e}{RANDOM_SUFFIX}" for e in encoders
            if e in known and getattr(registry.get("encoder", e), "is_pathology_model", False)]


def _parse_task(entry: Any, at: str, path: Path, run: Mapping[str, Any], encoders: tuple[str, ...],
                generators: tuple[str, ...], metrics: tuple[str, ...], baselines: bool = False) -> SuiteTask:
    """One [[tasks]] table (`at` names it in errors), its lists defaulting to the suite's and its
    run options over the suite's [run]; `baselines` adds the baseline encoders to its encoders."""
    if not isinstance(entry, Mapping) or not entry.get("dataset"):
        raise PathkitError(f"{at}: needs dataset = NAME")
    bad = sorted(set(entry) - set(TASK_KEYS))
    if bad:
        raise PathkitError(f"{at} ({entry['dataset']}): unknown key(s) {bad}; known: {list(TASK_KEYS)}")
    name = str(entry.get("name") or entry["dataset"])
    own = {k: entry[k] for k in ("dataset_options", "hparams", "train", "tiling") if k in entry}
    if "options" in entry:  # any other run option of this task (max_tiles, checkpoints, ...)
        if not isinstance(entry["options"], Mapping) or set(entry["options"]) & set(CELL_FIELDS):
            raise PathkitError(f"{at} ({name}): options must be a table of run options other than "
                               f"{list(CELL_FIELDS)}")
        own.update(entry["options"])
    if entry.get("dataset_root"):
        own["dataset_root"] = _resolve(entry["dataset_root"], path.parent)
    task_encoders = _names(entry.get("encoders"), f"{at}: encoders") or encoders
    if baselines:
        added = (*BASELINE_ENCODERS, *random_copies(task_encoders))
        task_encoders = (*task_encoders, *(b for b in added if b not in task_encoders))
    task_generators = _names(entry.get("generators"), f"{at}: generators") or generators
    if not task_encoders or not task_generators:
        raise PathkitError(f"{at} ({name}): no encoders or no generators (set them for the suite or the task)")
    return SuiteTask(name, str(entry["dataset"]), task_encoders, task_generators,
                     _names(entry.get("metrics"), f"{at}: metrics") or metrics,
                     str(entry["compare"]) if entry.get("compare") else None, _merge(run, own))


def _refuse_shared_run_folders(tasks: list[SuiteTask], where: str) -> None:
    """Two tasks of one dataset with the same options and root would run the same cells (the same run
    folders, each overwriting the other's results under its own task name): refuse them."""
    import json

    seen: dict[str, SuiteTask] = {}
    for task in tasks:
        key = json.dumps([task.dataset, dict(task.run)], sort_keys=True, default=str)
        other = seen.get(key)
        if other is not None and set(other.encoders) & set(task.encoders) and set(other.generators) & set(
                task.generators):
            raise PathkitError(f"{where}: tasks {other.name!r} and {task.name!r} would run the same cells (one "
                               "dataset, the same root and options); keep one")
        seen[key] = task


def declared_scores(metric_cls: Any) -> set[str]:
    """Every summary key a metric class declares (headline, paired, directions, ranges, per-case)."""
    return {*metric_cls.headline_scores, *dict(metric_cls.paired_scores), *metric_cls.lower_is_better,
            *metric_cls.informational, *dict(metric_cls.score_ranges), *metric_cls.case_scores}


def _registered(registry: Any, kind: str, name: str, where: str) -> Any:
    try:
        return registry.get(kind, name)
    except PathkitError as exc:
        raise PathkitError(f"{where}: {exc}") from None


def check_registered(config: SuiteConfig, registry: Any = None) -> None:
    """Every dataset, encoder, generator, metric and compared score the suite names is a
    registered plugin's (or a score its metrics declare): checked before any cell runs, so a
    misspelt name is one error, not a failed cell after hours of others."""
    if registry is None:
        from pathkit_core.plugins import get_plugin_manager

        registry = get_plugin_manager()
    where = str(config.path)
    for task in config.tasks:
        at = f"{where}: task {task.name!r}"
        dataset = _registered(registry, "dataset", task.dataset, at)
        for kind, names in (("encoder", task.encoders), ("generator", task.generators)):
            for name in names:
                _registered(registry, kind, name, at)
        metrics = list(task.metrics) or list(dataset.default_metrics)
        classes = [_registered(registry, "metric", m, at) for m in metrics]
        declared = set().union(*(declared_scores(c) for c in classes)) if classes else set()
        if task.compare and declared and task.compare not in declared:
            raise PathkitError(f"{at}: compare = {task.compare!r} is no score of its metrics "
                               f"({', '.join(metrics)}); they declare {', '.join(sorted(declared))}")


def load_suite(path: str | Path) -> SuiteConfig:
    from pathkit_core.run.spec import read_toml
    from pathkit_core.workspace import check_regular_file

    path = check_regular_file(path, "suite") if Path(path).exists() else Path(path)  # a named pipe would block
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PathkitError(f"{path}: is not a UTF-8 TOML suite file (byte {exc.start} is not text)") from None
    except OSError:
        text = None  # read_toml names the problem (missing, a folder)
    data = read_toml(path, "suite")
    return parse_suite(data.get("suite", data), path, text)


__all__ = ["BASELINE_ENCODERS", "Cell", "SuiteConfig", "SuiteTask", "check_registered", "declared_scores", "load_suite",
           "parse_suite"]
