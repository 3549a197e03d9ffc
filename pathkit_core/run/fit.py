"""Stage 3, fit: build the generator's model and train it with the core loop, unless the generator
needs no fit (kNN, prototypes, fixed readers) or the run evaluates frozen checkpoints."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core.contracts import Case, Dataset, GeneratorSpec, PathkitError, Task
from pathkit_core.run.state import FitPlan, RunState
from pathkit_core.training.trainer import TrainConfig, fit, seed_everything
from pathkit_core.workspace import content_hash, sha256_file


def plan_fit(ctx: Any, dataset: Dataset, train_items: Sequence[dict[str, Any]], val_items: Sequence[dict[str, Any]],
             train_targets: Sequence[Any]) -> FitPlan:
    """The generator, its spec and training settings; frozen checkpoints are pinned by content."""
    spec = ctx.spec
    generator = ctx.generator_cls()
    feature_dim = _feature_dim(train_items) or _feature_dim(val_items)
    gspec = GeneratorSpec(task=ctx.task.name, feature_dim=feature_dim, hparams=generator.hparams(spec.hparams),
                          train_targets=list(train_targets), dataset=spec.dataset,
                          class_names=tuple(dataset.class_names()),
                          report_cleaning=ctx.dataset_cls.report_cleaning,
                          max_report_tokens=ctx.dataset_cls.max_report_tokens)
    train_cfg = TrainConfig.from_mapping({**generator.default_train, **dataset.train_overrides, **spec.train,
                                          "seed": spec.seed, "cpu": spec.cpu})
    checkpoint_dir: Path | None = ctx.run_dir / "checkpoints"
    facts: dict[str, Any] = {}
    if spec.frozen_from is not None:  # the checkpoints of a finished run, applied frozen to another cohort
        checkpoint_dir = Path(spec.frozen_from) / "checkpoints"
        if not (checkpoint_dir / "best.safetensors").exists():
            raise PathkitError(f"frozen_from: {spec.frozen_from} holds no trained checkpoints "
                               f"({checkpoint_dir}/best.safetensors)")
        facts["frozen"] = {p.name: sha256_file(p) for p in sorted(checkpoint_dir.glob("*.safetensors"))}
    elif not generator.needs_fit:
        checkpoint_dir = None
        gspec.train_items, gspec.val_items = train_items, val_items
    facts.update(generator.key_facts(gspec.hparams))
    return FitPlan(generator, gspec, train_cfg, checkpoint_dir, spec.selection or ctx.dataset_cls.selection_metric,
                   facts)


def _feature_dim(items: Sequence[dict[str, Any]]) -> int:
    return int(items[0]["features"].shape[1]) if len(items) else 0


def make_selection(name: str | None, dataset: Dataset, task: Task, cases: Sequence[Case],
                   options: Mapping[str, Any] | None = None) -> Callable | None:
    """`"metric:key"` -> a function scoring validation predictions with that metric plugin, the
    predictions and references put in the task's output and reference forms, passing `options`
    (the dataset's `selection_options`, e.g. leaving METEOR out per epoch)."""
    if not name:
        return None
    metric_name, _, key = name.partition(":")
    from pathkit_core.evaluation.runner import score

    by_id = {c.case_id: c for c in cases}

    def selection(preds: Mapping[str, Any], refs: Mapping[str, Any]) -> float:
        ids = list(refs)
        outputs = {i: task.output(preds[i], by_id[i], dataset) for i in ids}
        references = {i: task.reference(by_id[i], dataset) for i in ids}
        result = score([metric_name], outputs, references, ids=ids, dataset=dataset.name,
                       context={"options": dict(options or {})})
        values = result.summary[metric_name]
        if key not in values:
            raise PathkitError(f"selection metric {metric_name!r} has no score {key!r} (has: {sorted(values)})")
        return float(values[key])

    return selection


def _train(ctx: Any, plan: FitPlan, fit_key: str, dataset: Dataset, train_items: Sequence[dict[str, Any]],
           val_items: Sequence[dict[str, Any]], val_cases: Sequence[Case]) -> None:
    """Train unless done (or frozen, or not needed)."""
    spec = ctx.spec
    if spec.frozen_from is not None:
        ctx.log(f"frozen weights from {spec.frozen_from}: no training")
        return
    if plan.checkpoint_dir is None:
        ctx.log(f"generator {spec.generator!r} needs no training: straight to prediction")
        return
    done = ctx.done("fit", fit_key)
    if done is None:
        seed_everything(spec.seed)  # the model's initial weights follow the run seed
        model = plan.generator.build(plan.gspec)
        selection = make_selection(plan.selection, dataset, ctx.task, val_cases, ctx.dataset_cls.selection_options)
        # what a checkpoint records to rebuild its model (not the items: those are the run's inputs)
        rebuild = {"task": plan.gspec.task, "feature_dim": plan.gspec.feature_dim, "hparams": plan.gspec.hparams,
                   "dataset": plan.gspec.dataset,
                   "state": model.export_state() if hasattr(model, "export_state") else {}}
        result = fit(model, train_items, val_items, plan.train_cfg, plan.checkpoint_dir, selection=selection,
                     checkpoint_config={"generator": spec.generator, "spec": rebuild}, stage_key=fit_key)
        ctx.mark("fit", fit_key, {"best_epoch": result.best_epoch, "best_score": result.best_score,
                                  "epochs_run": result.epochs_run, "selection": plan.selection or "val_loss",
                                  **({"best_step": result.best_step} if result.best_step is not None else {})})
        done = ctx.marker("fit")
    at = f"step {done['best_step']}" if done.get("best_step") is not None else f"epoch {done.get('best_epoch')}"
    ctx.log(f"best {at} ({plan.selection or 'val_loss'} {done.get('best_score', float('nan')):.4f})")


def stage(state: RunState) -> RunState:
    """Plan the model, key the fit by everything it reads, and train unless done."""
    from pathkit_core.run.identity import code_identity, features_identity, weights_identity

    state.needs("dataset", "features", "items")
    ctx, spec, ds, items = state.ctx, state.spec, state.dataset, state.items
    plan = plan_fit(ctx, ds.dataset, items["train"], items["val"], state.train_targets)
    # the settings as training uses them: the generator's defaults and the dataset's protocol
    # under the user's values, not only what the user typed
    settings = {"hparams": plan.gspec.hparams, "train": plan.train_cfg.result_settings(), "selection": plan.selection}
    key = content_hash({"data": ds.data_key, "split": ds.split_hash, "skipped": sorted(state.features.skipped),
                        "id": spec.identity(), "settings": settings,
                        "code": code_identity(ctx.registry, [*ctx.components([]), *ctx.task.components(ds.dataset)]),
                        "inputs": features_identity(state.inputs_of("train", "val")),
                        "weights": weights_identity(state.features.inputs), **plan.key_facts})
    state.keys["fit"] = key
    if plan.checkpoint_dir is not None and spec.frozen_from is None:
        plan.stage_key = key
    state.plan = plan
    _train(ctx, plan, key, ds.dataset, items["train"], items["val"], ds.cases["val"])
    return state
