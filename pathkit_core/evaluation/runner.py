"""The metric runner: score aligned predictions with several metric plugins and save the results."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core._deprecation import moved_names
from pathkit_core.contracts import DeferredTable, Metric, MetricResult, PathkitError
from pathkit_core.plugins import get_component


@dataclass
class ScoreResult:
    """Summaries per metric and one per-case table joined on `id`. `per_case` is a polars
    DataFrame or a builder of it (`DeferredTable`): `score` gives a builder, so the metrics'
    tables are built and joined only when the table is read (written, shown). `input_flags`: the
    cases whose texts are damaged but scored (`text_flags`), id -> their notes, in case order."""

    summary: dict[str, dict[str, float]]
    per_case: Any = DeferredTable()
    results: dict[str, MetricResult] = field(default_factory=dict)
    input_flags: dict[str, str] = field(default_factory=dict)

    @property
    def details(self) -> dict[str, dict[str, Any]]:
        """Each metric's non-scalar results (`MetricResult.details`), for those that have any."""
        return {name: dict(r.details) for name, r in self.results.items() if r.details}


def metric_context(dataset: str | None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What metrics may use beyond predictions and references: the dataset name, its task and
    the options it hands to each metric (`Dataset.metric_options`, under "dataset_options")."""
    context: dict[str, Any] = {"dataset": dataset, "options": {}}
    if dataset:
        ds_cls = get_component("dataset", dataset)
        context["task"] = ds_cls.task
        context["dataset_options"] = {k: dict(v) for k, v in dict(ds_cls.metric_options).items()}
    context.update(extra or {})
    return context


def context_for(metric: Metric, context: Mapping[str, Any]) -> dict[str, Any]:
    """The context one metric sees: its own dataset options, under the options a run gives that
    metric (`metric_options`, by metric name), under the user's options for every metric."""
    own = {**dict((context.get("dataset_options") or {}).get(metric.name) or {}),
           **dict((context.get("metric_options") or {}).get(metric.name) or {})}
    out = {k: v for k, v in context.items() if k not in ("dataset_options", "metric_options")}
    given = context.get("options") or {}
    if not isinstance(given, Mapping):
        raise PathkitError(f"metric options must be a mapping, got {type(given).__name__}")
    # checked once here for every metric: unknown options warned about, typed ones parsed
    out["options"] = metric.checked_options({**own, **dict(given)})
    return out


def resolve_metrics(names: Sequence[str], task: str | None = None) -> list[Metric]:
    metrics = []
    for name in names:
        cls = get_component("metric", name)
        if task and cls.tasks and task not in cls.tasks:
            raise PathkitError(f"metric {name!r} scores {', '.join(cls.tasks)}, not the {task!r} task of this dataset")
        metrics.append(cls())
    if not metrics:
        raise PathkitError("no metric given: use --metric NAME[,NAME...]")
    return metrics


def prepare_metrics(metric_names: Sequence[str], *, dataset: str | None = None,
                    context: Mapping[str, Any] | None = None) -> list[Metric]:
    """Resolve the metrics and let each start what it will wait for (`Metric.prepare`), e.g.
    METEOR's JVM, before the inputs are read and the other metrics run."""
    return [metric for metric, _ in _prepared(metric_names, dataset, context)]


def _prepared(metric_names: Sequence[str], dataset: str | None,
              context: Mapping[str, Any] | None) -> list[tuple[Metric, dict[str, Any]]]:
    """Each metric, prepared, with the context it sees (`context_for`), built once for both prepare and compute."""
    ctx = metric_context(dataset, context)
    prepared = [(metric, context_for(metric, ctx)) for metric in resolve_metrics(metric_names, ctx.get("task"))]
    for metric, seen in prepared:
        metric.prepare(seen)
    return prepared


INPUT_FLAGS = "input_flags"


_SURROGATE = re.compile("[\ud800-\udfff]")


def text_flags(text: object) -> list[str]:
    """What is wrong with a text that can still be scored: lone surrogates (a JSON
    `"\\ud800"` escape decodes to one; no UTF-8 encoding holds it, so tools that encode the
    text drop or replace it) and U+FFFD replacement characters (bytes lost in decoding)."""
    if not isinstance(text, str):
        return []
    flags = []
    surrogates = [(m.start(), m.group()) for m in _SURROGATE.finditer(text)]
    if surrogates:
        where = ", ".join(f"U+{ord(c):04X} at character {i}" for i, c in surrogates[:3])
        more = f" and {len(surrogates) - 3} more" if len(surrogates) > 3 else ""
        flags.append(f"lone surrogate {where}{more}")
    if "\ufffd" in text:
        flags.append(f"U+FFFD replacement character at character {text.index(chr(0xFFFD))}")
    return flags


def input_flags(predictions: Sequence[Any], references: Sequence[Any]) -> list[str]:
    """Per case, what is wrong with its texts though they can be scored ("" when nothing):
    "prediction: lone surrogate U+D800 at character 15"."""
    out = []
    for pred, ref in zip(predictions, references, strict=True):
        refs = ref if isinstance(ref, list | tuple) else [ref]
        notes = [f"prediction: {f}" for f in text_flags(pred)]
        notes += [f"reference: {f}" for r in refs for f in text_flags(r)]
        out.append("; ".join(notes))
    return out


def score(metric_names: Sequence[str], predictions: Mapping[str, Any], references: Mapping[str, Any], *,
          ids: Sequence[str] | None = None, dataset: str | None = None, context: Mapping[str, Any] | None = None,
          on_metric: Callable[[str], None] | None = None) -> ScoreResult:
    """Run each metric on the predictions/references aligned by `ids` (reference order by default);
    `on_metric(name)` is called before each metric (progress display). The per-case table (ids,
    input flags, each metric's table joined on `id`) is built when `result.per_case` is read."""
    prepared = _prepared(metric_names, dataset, context)
    ids = list(ids) if ids is not None else list(references)
    preds = [predictions[i] for i in ids]
    refs = [references[i] for i in ids]
    summary: dict[str, dict[str, float]] = {}
    results: dict[str, MetricResult] = {}
    computed: list[tuple[str, MetricResult]] = []
    flags = input_flags(preds, refs)
    for metric, seen in prepared:
        if on_metric is not None:
            on_metric(metric.name)
        result = metric.compute(preds, refs, ids=ids, context=seen)
        if not isinstance(result, MetricResult):
            raise PathkitError(f"metric {metric.name!r} returned {type(result).__name__}, not MetricResult")
        summary[metric.name] = {k: float(v) for k, v in result.summary.items()}
        results[metric.name] = result
        computed.append((metric.name, result))
    flagged = {str(i): f for i, f in zip(ids, flags, strict=True) if f}
    return ScoreResult(summary, lambda: _joined_per_case(ids, flags, computed), results, flagged)


def _joined_per_case(ids: Sequence[Any], flags: Sequence[str], results: Sequence[tuple[str, MetricResult]]) -> Any:
    """One per-case table: `id`, `input_flags` when any case has one, then each metric's table
    (built now if it was deferred) joined on `id` in case order; a metric's column whose name is
    already taken is renamed `<metric>:<column>`."""
    import polars as pl

    per_case = pl.DataFrame({"id": list(ids)})
    if any(flags):
        per_case = per_case.with_columns(pl.Series(INPUT_FLAGS, list(flags), dtype=pl.Utf8))
    for name, result in results:
        table = result.per_case
        if table is not None and table.height:
            if "id" not in table.columns:
                if table.height != len(ids):
                    raise PathkitError(f"metric {name!r} returned {table.height} per-case rows for {len(ids)} cases")
                table = table.with_columns(pl.Series("id", list(ids)))
            table = table.with_columns(pl.col("id").cast(pl.Utf8))
            clash = [c for c in table.columns if c != "id" and c in per_case.columns]
            if clash:
                table = table.rename({c: f"{name}:{c}" for c in clash})
            per_case = per_case.join(table, on="id", how="left", maintain_order="left")
    return per_case


def write_results(result: ScoreResult, out_dir: str | Path, *, extra: Mapping[str, Any] | None = None) -> Path:
    """`metrics.json` (summary per metric) and `per_case.parquet`, both written atomically."""
    from pathkit_core.formats import RUN_FOLDER_VERSION
    from pathkit_core.workspace import atomic_write_json, atomic_write_with

    out_dir = Path(out_dir)
    per_case = result.per_case  # built before anything is written: a metric's bad table fails here
    payload = {"format_version": RUN_FOLDER_VERSION, "metrics": result.summary, **dict(extra or {})}
    if result.details:
        payload["details"] = result.details
    atomic_write_json(out_dir / "metrics.json", payload)
    if per_case is not None:
        atomic_write_with(out_dir / "per_case.parquet", lambda tmp: per_case.write_parquet(tmp))
    return out_dir


__all__ = ["ScoreResult", "metric_context", "context_for", "resolve_metrics", "prepare_metrics", "INPUT_FLAGS",
           "text_flags", "input_flags", "score", "write_results"]


# Moved in pathkit 0.2 to the `pathkit score` command, their one caller (docs/plugin-authors.md, "Moved names");
# importable from here with a DeprecationWarning until 0.3.
__getattr__ = moved_names(__name__, dict.fromkeys(("RESULT_FILES", "write_result_folder"), "pathkit_interop.score_cli"))
