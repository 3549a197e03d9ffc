"""Stage 5, score: the model's test predictions, every other evaluated checkpoint and the task's
baselines, scored with the same metrics and written to metrics.json and per_case.parquet."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core.contracts import Case, PathkitError
from pathkit_core.progress import ProgressBar
from pathkit_core.run.state import RunResult, RunState
from pathkit_core.workspace import atomic_write_text, atomic_write_with, content_hash, json_default


def _score(state: RunState, extra: Mapping[str, Any]) -> dict[str, Any]:
    """Scores of the best checkpoint, the other checkpoints and each baseline; writes the results."""
    from pathkit_core.evaluation.runner import score, write_results

    ctx, metrics, evaluated, dataset = state.ctx, state.metrics, state.evaluated, state.dataset.dataset
    task = ctx.task
    predictions = evaluated["best"].predictions
    cases = [c for c in state.dataset.cases["test"] if c.case_id in predictions]
    ids = [c.case_id for c in cases]
    references = {c.case_id: task.reference(c, dataset) for c in cases}
    write_test_cases(ctx.run_dir / "test_cases.jsonl", cases, references)
    context = {**task.metric_context(dataset, state.facts), "metric_options": dict(ctx.spec.metric_options)}

    runs = len(evaluated) + len(task.baselines)
    progress = bool(ctx.spec.train.get("progress", True))
    with ProgressBar("score", runs * len(metrics), "metric runs", enabled=progress) as bar:

        def run(preds: Mapping[str, Any], what: str) -> Any:
            def step(metric: str) -> None:
                bar.describe(f"score {what}: {metric}")
                bar.advance(0)

            result = score(list(metrics), preds, references, ids=ids, dataset=ctx.spec.dataset, context=context,
                           on_metric=step)
            bar.advance(len(metrics))
            return result

        scored = run(predictions, "model")
        checkpoints: dict[str, Any] = {}
        for name, entry in evaluated.items():
            if name == "best":
                continue
            other = run(entry.predictions, f"{name} checkpoint")
            checkpoints[name] = {"epoch": entry.epoch, "metrics": other.summary}
            if other.per_case is not None:
                atomic_write_with(ctx.run_dir / f"per_case_{name}.parquet", other.per_case.write_parquet)
        if checkpoints:
            checkpoints = {"best": {"epoch": evaluated["best"].epoch, "metrics": scored.summary}, **checkpoints}
        baselines: dict[str, Any] = {}
        for name in task.baselines:
            made = task.baseline_predictions(name, state.train_targets, cases, dataset)
            if made:
                baselines[name] = run(made, f"baseline {name}").summary
    payload: dict[str, Any] = {**extra, "n_test_cases": len(ids), "baselines": baselines,
                               **task.run_summary(predictions, references)}
    if checkpoints:
        payload["checkpoints"] = checkpoints
    write_results(scored, ctx.run_dir, extra=payload)
    return {"summary": scored.summary, "baselines": baselines, "checkpoints": checkpoints}


def write_test_cases(path: Path, cases: Sequence[Case], references: Mapping[str, Any]) -> Path:
    """`test_cases.jsonl`: per scored test case its id, patient, reference (as metrics got it), inputs
    (slides, images, feature files) and the small JSON facts of its meta (question, choices,
    capability), so that a report can show each case's evidence without reopening the dataset."""
    lines = []
    for case in cases:
        row: dict[str, Any] = {"id": case.case_id, "patient_id": case.patient_id,
                               "reference": references.get(case.case_id)}
        for name in ("slides", "images", "features"):
            if getattr(case, name):
                row[name] = [str(p) for p in getattr(case, name)]
        meta = {}
        for key, value in dict(case.meta).items():
            try:
                text = json.dumps(value, default=json_default)
            except (TypeError, ValueError):
                continue
            if len(text) <= 4000:
                meta[key] = json.loads(text)
        if meta:
            row["meta"] = meta
        lines.append(json.dumps(row, default=json_default))
    return atomic_write_text(path, "\n".join(lines) + ("\n" if lines else ""))


def saved_scores(ctx: Any) -> dict[str, Any] | None:
    """metrics.json of a finished score stage and the result files beside it, read back by the one
    reader of result files; None (and a line saying why) when one of them is damaged or gone, so
    the stage scores again instead of trusting it."""
    from pathkit_core.readers import DamagedFile, read_json_file, read_jsonl_file, read_parquet_file
    from pathkit_core.report.run_folder import TEST_CASES_FILE, check_metrics_record

    try:
        saved = read_json_file(ctx.run_dir / "metrics.json", "metrics record")
        check_metrics_record(saved, ctx.run_dir / "metrics.json")
        if not isinstance(saved.get("metrics"), dict):
            raise DamagedFile(ctx.run_dir / "metrics.json", "holds no scores")
        for path in sorted(ctx.run_dir.glob("per_case*.parquet")):
            read_parquet_file(path, "per-case table")
        if (ctx.run_dir / TEST_CASES_FILE).exists():
            read_jsonl_file(ctx.run_dir / TEST_CASES_FILE, "test-case list")
    except PathkitError as exc:
        from rich.markup import escape

        ctx.log(f"[yellow]the finished score stage's results are damaged ({escape(str(exc))}); scoring again[/]")
        return None
    return saved


def stage(state: RunState) -> RunState:
    """Score every evaluated checkpoint and the baselines (unless done: then the saved results are
    the run's result) and write metrics.json and per_case.parquet."""
    from pathkit_core.evaluation.provenance import run_provenance
    from pathkit_core.run.identity import code_identity, weights_identity

    state.needs("dataset", "features", "evaluated", "metrics")
    ctx, spec, ds, feats, metrics = state.ctx, state.spec, state.dataset, state.features, state.metrics
    # everything the metrics are handed beyond predictions: the task's metric context, the
    # dataset's and the user's metric options
    handed = {**ctx.task.metric_context(ds.dataset, state.facts),
              "dataset_options": {m: dict(o) for m, o in ctx.dataset_cls.metric_options.items()},
              "metric_options": spec.metric_options}
    names = state.checkpoints
    state.keys["score"] = key = content_hash({"predict": state.keys["predict"], "metrics": metrics, "options": handed,
                                              "code": code_identity(ctx.registry, [("metric", m) for m in metrics]),
                                              **({"checkpoints": names} if names != ["best"] else {})})
    marker = ctx.marker("score")
    saved = saved_scores(ctx) if marker is not None and marker.get("key") == key else None
    if saved is not None and ctx.done("score", key):
        if not (ctx.run_dir / "report.html").is_file():  # killed after scoring, before its report
            ctx.log("this cell is scored; writing the report it lacks")
            state.scores = {"summary": saved["metrics"], "baselines": saved.get("baselines", {}),
                            "checkpoints": saved.get("checkpoints", {})}
            return state
        ctx.log("this cell is finished; reusing its results")
        state.result = RunResult(ctx.run_dir, saved["metrics"], saved.get("baselines", {}),
                                 saved.get("skipped_cases", {}), ctx.resumed, saved.get("checkpoints", {}),
                                 saved.get("excluded_cases", {}))
        return state
    extra = {"run": spec.identity(), "task": ctx.task.name, "skipped_cases": feats.skipped,
             "dataset_root": str(ds.dataset.root), "data_key": ds.data_key,
             **({"split": ds.split} if ds.split else {}),
             **({"excluded_cases": ds.excluded, "n_excluded_cases": len(ds.excluded)} if ds.excluded else {}),
             **({"dataset": ds.summary} if ds.summary else {}),
             "provenance": run_provenance(ds.dataset, spec.encoder, weights_identity(feats.inputs), ds.summary)}
    state.scores = _score(state, extra)
    ctx.mark("score", key, {})
    return state
