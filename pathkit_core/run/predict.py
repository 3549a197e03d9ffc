"""Stage 4, predict: the test predictions of each evaluated checkpoint, checked against the task's
prediction format, put in its output form and written the task's way (JSON lines, mask files)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pathkit_core.contracts import Case, Dataset, PathkitError
from pathkit_core.run.items import task_predict, task_read_predictions, task_write_predictions
from pathkit_core.run.state import Evaluated, FitPlan, RunState
from pathkit_core.training.trainer import checkpoint_stage_key, load_checkpoint
from pathkit_core.workspace import content_hash


def _checked_outputs(ctx: Any, raw: Mapping[str, Any], cases: Sequence[Case], dataset: Dataset) -> dict[str, Any]:
    task, outputs, bad = ctx.task, {}, []
    for case in cases:
        if case.case_id not in raw:
            continue
        problem = task.check_prediction(raw[case.case_id], case, dataset)
        if problem:
            bad.append(f"{case.case_id}: {problem}")
        else:
            outputs[case.case_id] = task.output(raw[case.case_id], case, dataset)
    if bad:
        raise PathkitError(f"generator {ctx.spec.generator!r} made predictions that do not fit task "
                           f"{task.name!r} ({len(bad)} case(s): {'; '.join(bad[:5])}). Expected: "
                           f"{task.prediction_format}")
    return outputs


def _model_for(plan: FitPlan, name: str) -> Any:
    """The model of checkpoint `name` rebuilt from its saved state (or built ready to predict)."""
    if plan.checkpoint_dir is None:
        return plan.generator.build(plan.gspec)
    weights = plan.checkpoint_dir / f"{name}.safetensors"
    if not weights.exists():
        raise PathkitError(f"no {name!r} checkpoint at {weights}")
    if plan.stage_key is not None and checkpoint_stage_key(weights) != plan.stage_key:
        raise PathkitError(f"checkpoint {weights} was written under fit key {checkpoint_stage_key(weights)}, not this "
                           f"run's {plan.stage_key}: its data, code or settings differ; rerun to train again")
    saved = json.loads(weights.with_suffix(".json").read_text())
    plan.gspec.state = saved["config"]["spec"].get("state", {})
    model = plan.generator.build(plan.gspec)
    load_checkpoint(weights, model)
    return model


def _epoch_of(plan: FitPlan, name: str) -> int | None:
    if plan.checkpoint_dir is None:
        return None
    side = plan.checkpoint_dir / f"{name}.json"
    try:
        return (json.loads(side.read_text()).get("trainer_state") or {}).get("epoch")
    except (OSError, json.JSONDecodeError):
        return None


def stage(state: RunState) -> RunState:
    """Predict the test cases with every evaluated checkpoint (unless done) and read them back."""
    from pathkit_core.run.identity import features_identity

    state.needs("dataset", "items", "plan")
    ctx, ds, plan, test_items = state.ctx, state.dataset, state.plan, state.items["test"]
    names = ["best"]  # a model built ready to predict: one set of predictions, named as the best
    if plan.checkpoint_dir is not None:
        names = list(ctx.spec.checkpoints or ctx.dataset_cls.evaluate_checkpoints)
        if "best" not in names:
            raise PathkitError(f"checkpoints {names} must include \"best\" (the reported one)")
    state.checkpoints = names
    state.keys["predict"] = key = content_hash({"fit": state.keys["fit"],
                                                "test": features_identity(state.inputs_of("test"))})
    task, cfg = ctx.task, plan.train_cfg
    for name in names:
        suffix = "" if name == "best" else f"_{name}"
        path = ctx.run_dir / f"predictions{suffix}.jsonl"
        if not ctx.done(f"predict{suffix}", key) or not path.exists():
            model = _model_for(plan, name)
            raw = task_predict(task, model, test_items, state.facts, batch_size=cfg.eval_batch_size or cfg.batch_size,
                               cfg=cfg)
            outputs = _checked_outputs(ctx, raw, ds.cases["test"], ds.dataset)
            task_write_predictions(task, path, outputs, [i for i in test_items.case_ids if i in outputs], state.facts)
            if ctx.spec.export_attention:
                task.export_evidence(model, test_items, ds.cases["test"], ctx.run_dir / "attention" / name, state.facts)
            ctx.mark(f"predict{suffix}", key, {"n": len(outputs)})
        state.evaluated[name] = Evaluated(task_read_predictions(task, path), _epoch_of(plan, name))
    return state
