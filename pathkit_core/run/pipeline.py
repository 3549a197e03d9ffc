"""`pathkit run`: dataset -> features -> fit -> predict -> score -> report, resumably (DESIGN.md section 5)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.evaluation.provenance import run_provenance
from pathkit_core.run.context import RunContext
from pathkit_core.run.dataset import DatasetStage, dataset_stage
from pathkit_core.run.features import FeatureStage, feature_stage, shard_stage, write_features_qc
from pathkit_core.run.fit import FitPlan, fit_stage, plan_fit
from pathkit_core.run.identity import code_identity, features_identity, weights_identity
from pathkit_core.run.items import task_items
from pathkit_core.run.predict import checkpoint_names, predict_stage
from pathkit_core.run.report import report_stage
from pathkit_core.run.score import score_stage
from pathkit_core.run.spec import RunSpec
from pathkit_core.workspace import FileLock, content_hash


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, dict[str, float]]
    # scores of each of the task's baselines ("most-frequent-report", "majority-class", ...)
    baselines: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    skipped_cases: dict[str, str] = field(default_factory=dict)
    resumed_stages: list[str] = field(default_factory=list)
    # summaries of every evaluated checkpoint ({"best": {...}, "last": {...}}), with their epochs
    checkpoints: dict[str, Any] = field(default_factory=dict)
    excluded_cases: dict[str, str] = field(default_factory=dict)


@dataclass
class StageKeys:
    """Cache keys: each covers the settings, code versions and input contents its stage reads."""

    dataset: str
    features: str
    fit: str
    predict: str
    score: str


def stage_keys(ctx: RunContext, ds: DatasetStage, feats: FeatureStage, plan: FitPlan, metrics: list[str],
               checkpoints: list[str], metric_options: Any = None) -> StageKeys:
    """Each stage's key; `metric_options`: everything the metrics are handed beyond predictions
    (the task's metric context, the dataset's and the user's metric options)."""
    def inputs_of(*splits: str) -> dict[str, Any]:
        return {c.case_id: feats.inputs[c.case_id] for s in splits for c in ds.cases[s] if c.case_id in feats.inputs}

    fitting = inputs_of("train", "val")
    features = content_hash({"data": ds.data_key, "encoder": ctx.spec.encoder,
                             "inputs": features_identity(inputs_of("train", "val", "test"))})
    # the settings as training uses them: the generator's defaults and the dataset's protocol
    # under the user's values, not only what the user typed
    settings = {"hparams": plan.gspec.hparams, "train": plan.train_cfg.result_settings(),
                "selection": plan.selection}
    fit = content_hash({"data": ds.data_key, "split": ds.split_hash, "skipped": sorted(feats.skipped),
                        "id": ctx.spec.identity(), "settings": settings,
                        "code": code_identity(ctx.registry, [*ctx.components([]), *ctx.task.components(ds.dataset)]),
                        "inputs": features_identity(fitting),
                        "weights": weights_identity(feats.inputs), **plan.key_facts})
    predict = content_hash({"fit": fit, "test": features_identity(inputs_of("test"))})
    score = content_hash({"predict": predict, "metrics": metrics, "options": metric_options,
                          "code": code_identity(ctx.registry, [("metric", m) for m in metrics]),
                          **({"checkpoints": checkpoints} if checkpoints != ["best"] else {})})
    return StageKeys(ds.data_key, features, fit, predict, score)


def finished_result(ctx: RunContext) -> RunResult:
    saved = json.loads((ctx.run_dir / "metrics.json").read_text())
    ctx.log("this cell is finished; reusing its results")
    return RunResult(ctx.run_dir, saved["metrics"], saved.get("baselines", {}), saved.get("skipped_cases", {}),
                     ctx.resumed, saved.get("checkpoints", {}), saved.get("excluded_cases", {}))


def sharded_features(ctx: RunContext, shard: Any, ds: DatasetStage) -> RunResult:
    """`pathkit run --shard i/N` (or a Slurm array task): this shard's tiling and extraction only.
    Shards share the workspace's stores; a last run without a shard finds every slide done."""
    spec = ctx.spec
    mine, failed = shard_stage(spec, ctx.encoder_cls, ctx.workdir, ds.cases, ctx.task.tiling(ds.dataset, spec.tiling),
                               shard, ctx.log, ds.dataset)
    ctx.log(f"{shard.outer().label()}: features of {mine - len(failed)} of {mine} slide(s) ready"
            + (f", {len(failed)} failed" if failed else "") + "; run without --shard to train and score")
    return RunResult(ctx.run_dir, {}, skipped_cases={s: f"failed: {why}" for s, why in failed.items()})


def run_pipeline(spec: RunSpec, *, log: Callable[[str], None] = print) -> RunResult:
    """Run (or resume) one dataset x encoder x generator cell and return its scores."""
    from pathkit_core.shard import current_shard

    ctx = RunContext(spec, log)
    shard = current_shard(spec.shard)
    started = time.perf_counter()
    needs_fit = ctx.generator_cls.needs_fit and spec.frozen_from is None
    # The dataset comes first: its content names the run folder, and a dataset that does not
    # open leaves no folder behind.
    ds = dataset_stage(spec, ctx.dataset_cls, ctx.task, ctx.workdir,
                       needs_fit=needs_fit or (shard.count > 1 and ctx.generator_cls.needs_fit))
    ctx.open_folder(ds.data_key)
    if shard.count > 1:
        return sharded_features(ctx, shard, ds)
    with FileLock(ctx.run_dir / "run.lock", timeout=0):
        log(f"run folder: {ctx.run_dir}")
        if ctx.marker("dataset") is not None and ctx.done("dataset", ds.data_key) is None:
            log("the dataset's content changed since this folder's last run: every stage is redone")
        ctx.mark("dataset", ds.data_key, {"n_cases": {k: len(v) for k, v in ds.ids.items()},
                                          "root": str(ds.dataset.root), "n_excluded": len(ds.excluded)})
        log(ds.split_line())
        if ds.excluded:
            log(f"the dataset excluded {len(ds.excluded)} case(s) (filters and QC; reasons in metrics.json)")
        for warning in ds.summary.get("warnings", []):
            log(f"WARNING: {warning}")

        tiling = ctx.task.tiling(ds.dataset, spec.tiling)
        facts = ctx.facts(tiling)
        feats = feature_stage(spec, ctx.encoder_cls, ctx.workdir, ds.cases, tiling, spec.dataset, log, ds.dataset)
        if feats.skipped:
            log(f"skipping {len(feats.skipped)} case(s) without usable features (recorded in results)")
        write_features_qc(ctx.run_dir / "features_qc.csv", ds.cases, feats)
        items = {name: task_items(ctx.task, cases, feats.inputs, ds.dataset, facts, targets=name != "test")
                 for name, cases in ds.cases.items()}
        if len(items["test"]) == 0:
            raise PathkitError("the test split has no case with usable features")
        train_targets = [ctx.task.model_target(c, ds.dataset) for c in ds.cases["train"] if c.case_id in feats.inputs]
        plan = plan_fit(ctx, ds.dataset, items["train"], items["val"], train_targets)
        metrics = list(spec.metrics) or list(ctx.dataset_cls.default_metrics)
        if not metrics:
            raise PathkitError(f"no metric given and dataset {spec.dataset!r} declares no default; use --metric")
        names = checkpoint_names(spec.checkpoints, ctx.dataset_cls.evaluate_checkpoints,
                                 trained=plan.checkpoint_dir is not None)
        metric_context = {**ctx.task.metric_context(ds.dataset, facts),
                          "dataset_options": {m: dict(o) for m, o in ctx.dataset_cls.metric_options.items()},
                          "metric_options": spec.metric_options}
        keys = stage_keys(ctx, ds, feats, plan, metrics, names, metric_context)
        ctx.mark("features", keys.features, {"skipped": feats.skipped})
        if plan.checkpoint_dir is not None and spec.frozen_from is None:
            plan.stage_key = keys.fit
        if ctx.done("score", keys.score) and (ctx.run_dir / "metrics.json").exists():
            return finished_result(ctx)

        fit_stage(ctx, plan, keys.fit, ds.dataset, items["train"], items["val"], ds.cases["val"])
        evaluated = predict_stage(ctx, plan, keys.predict, names, items["test"], ds.cases["test"], ds.dataset, facts)
        extra = {"run": spec.identity(), "task": ctx.task.name, "skipped_cases": feats.skipped,
                 "dataset_root": str(ds.dataset.root), "data_key": ds.data_key,
                 **({"split": ds.split} if ds.split else {}),
                 **({"excluded_cases": ds.excluded, "n_excluded_cases": len(ds.excluded)} if ds.excluded else {}),
                 **({"dataset": ds.summary} if ds.summary else {}),
                 "provenance": run_provenance(ds.dataset, spec.encoder, weights_identity(feats.inputs), ds.summary)}
        scores = score_stage(ctx, metrics, evaluated, ds.cases["test"], train_targets, ds.dataset, facts, extra)
        ctx.mark("score", keys.score, {})
        report_stage(ctx, spec, {"dataset_root": str(ds.dataset.root), "split_hash": ds.split_hash,
                                 "data_key": ds.data_key,
                                 "feature_files": len(feats.inputs), "stage_keys": vars(keys),
                                 **({"dataset": ds.summary} if ds.summary else {})},
                     time.perf_counter() - started)
        return RunResult(ctx.run_dir, scores["summary"], scores["baselines"], feats.skipped, ctx.resumed,
                         scores["checkpoints"], ds.excluded)
