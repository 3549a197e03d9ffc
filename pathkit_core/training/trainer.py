"""Accelerate-driven fit/predict loop: model selection on validation, early stopping, checkpoints."""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core.contracts import ItemsWithTargets, PathkitError, TaskModel
from pathkit_core.distributed import close_process_group_at_exit
from pathkit_core.progress import ProgressBar, TrainingEstimate, early_stop_line
from pathkit_core.workspace import atomic_write_json, atomic_write_text, atomic_write_with, json_default

# A selection function scores validation predictions: (predictions, references) -> float.
SelectionFn = Callable[[Mapping[str, Any], Mapping[str, Any]], float]


@dataclass
class TrainConfig:
    """Each option, its default and its source (PathBench, GOLDMARK, eva): docs/training.md, "Options"."""

    max_epochs: int = 200
    lr: float = 7e-5
    weight_decay: float = 1e-5
    batch_size: int = 1
    eval_batch_size: int | None = None  # cases decoded at once on validation/test (None: batch_size)
    grad_clip: float | None = None
    plateau_factor: float = 0.5
    plateau_patience: int = 7
    plateau_on: str = "val_loss"  # or "selection", or "none" (a constant learning rate)
    early_stop_patience: int | None = 20
    selection_mode: str = "max"  # direction of the selection score
    max_steps: int | None = None  # train by optimizer steps, in periods of val_every_steps
    val_every_steps: int | None = None
    validation_epochs: tuple[int, ...] | None = None  # None: every epoch; the last one always
    model_selection: bool = True  # False: "best" is the last epoch, no validation cases needed
    shuffle: bool = True
    mixed_precision: str = "no"  # "no", "bf16", "fp16"
    seed: int = 0
    cpu: bool = False
    num_workers: int = 0
    progress: bool = True
    checkpoint_every_minutes: float = 10.0  # docs/training.md, "How often `last` is written"

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> TrainConfig:
        values = dict(values or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise PathkitError(f"unknown training option(s) {unknown}; known: {sorted(known)}")
        return cls(**values)

    def __post_init__(self) -> None:
        for name in ("max_steps", "val_every_steps"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise PathkitError(f"{name} must be a positive number of steps (or None), got {value!r}")
        if not isinstance(self.checkpoint_every_minutes, int | float) or self.checkpoint_every_minutes < 0:
            raise PathkitError(f"checkpoint_every_minutes must be >= 0 (0: after every period), got "
                               f"{self.checkpoint_every_minutes!r}")
        if self.plateau_on not in ("val_loss", "selection", "none"):
            raise PathkitError(f"plateau_on must be 'val_loss', 'selection' or 'none', got {self.plateau_on!r}")
        epochs = self.validation_epochs
        if epochs is not None:
            if isinstance(epochs, str | bytes) or not all(
                    isinstance(e, int) and not isinstance(e, bool) and e >= 1 for e in epochs):
                raise PathkitError(f"validation_epochs must be epoch numbers >= 1 (or None), got {epochs!r}")
            self.validation_epochs = tuple(sorted(set(epochs)))

    # Fields that change how the run looks, not what it computes: left out of the fit key.
    NOT_RESULTS: ClassVar[tuple[str, ...]] = ("progress", "num_workers", "cpu", "checkpoint_every_minutes")

    def result_settings(self) -> dict[str, Any]:
        """The settings a trained model depends on (every field but `NOT_RESULTS`), for the fit key."""
        return {k: v for k, v in asdict(self).items() if k not in self.NOT_RESULTS}

    def validates_at(self, epoch: int) -> bool:
        """Whether `epoch` is a validation epoch (`validation_epochs`, always the last one). Training
        by steps validates at the end of every period."""
        if self.max_steps is not None:
            return True
        return self.validation_epochs is None or epoch in self.validation_epochs or epoch >= self.max_epochs

    def period_steps(self, n_train: int) -> int:
        """Optimizer steps between two validation checks: one pass over `n_train` cases, or
        `val_every_steps` when training by steps."""
        per_pass = max(1, math.ceil(n_train / max(self.batch_size, 1)))
        return per_pass if self.max_steps is None or self.val_every_steps is None else self.val_every_steps

    def periods(self, n_train: int) -> int:
        """How many training periods (epochs, or validation periods when training by steps)."""
        if self.max_steps is None:
            return self.max_epochs
        return math.ceil(self.max_steps / self.period_steps(n_train))


@dataclass
class FitResult:
    best_epoch: int
    best_score: float
    epochs_run: int
    history: list[dict[str, float]] = field(default_factory=list)
    best_checkpoint: Path | None = None
    last_checkpoint: Path | None = None
    stopped_early: bool = False
    best_step: int | None = None  # training by steps: the optimizer step of the best checkpoint


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def _step_module(model: Any) -> Any:
    """`model` in a module whose forward is its `training_step`, so DDP synchronises the gradients."""
    import torch

    class StepModule(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, batch: Any) -> Any:
            return self.inner.training_step(batch)

    return StepModule(model)


# --------------------------------------------------------------------------- checkpoints


def save_checkpoint(directory: Path, stem: str, model: Any, *, config: Mapping[str, Any], optimizer: Any = None,
                    scheduler: Any = None, trainer_state: Mapping[str, Any] | None = None) -> Path:
    """Write `<stem>.safetensors` (weights, and optimizer/RNG state when given) and `<stem>.json`."""
    import torch
    from safetensors.torch import save_file

    tensors = {f"model.{k}": v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    extra: dict[str, Any] = {}
    if optimizer is not None:
        opt_state = optimizer.state_dict()
        for pid, state in opt_state["state"].items():
            for key, value in state.items():
                if torch.is_tensor(value):
                    tensors[f"optim.{pid}.{key}"] = value.detach().cpu().contiguous().clone()
                else:
                    extra.setdefault("optim_scalars", {}).setdefault(str(pid), {})[key] = value
        extra["optim_param_groups"] = opt_state["param_groups"]
        tensors["rng.torch"] = torch.get_rng_state()
    if scheduler is not None:
        extra["scheduler"] = {k: v for k, v in scheduler.state_dict().items() if k != "optimizer"}
    weights = directory / f"{stem}.safetensors"
    atomic_write_with(weights, lambda tmp: save_file(tensors, str(tmp), metadata={"format": "pt"}))
    meta = {"config": dict(config), "trainer_state": dict(trainer_state or {}), **extra}
    atomic_write_json(directory / f"{stem}.json", meta)
    return weights


def checkpoint_stage_key(weights: Path) -> str | None:
    """The fit key a checkpoint was written under (its side-car's config), None when it has none."""
    try:
        meta = json.loads(Path(weights).with_suffix(".json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    config = meta.get("config") if isinstance(meta, dict) else None
    key = config.get("stage_key") if isinstance(config, dict) else None
    return key if isinstance(key, str) else None


def discard_checkpoints(directory: Path) -> None:
    """Remove the checkpoints and history of a training that is not to be continued."""
    for stem in ("last", "best"):
        for suffix in (".safetensors", ".json"):
            (directory / f"{stem}{suffix}").unlink(missing_ok=True)
    (directory / "history.json").unlink(missing_ok=True)


def load_checkpoint(weights: Path, model: Any, *, optimizer: Any = None, scheduler: Any = None) -> dict[str, Any]:
    """Load what `save_checkpoint` wrote; returns the JSON side-car."""
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights = Path(weights)
    side = weights.with_suffix(".json")
    try:
        tensors = load_file(str(weights))
        meta = json.loads(side.read_text())
    except (OSError, SafetensorError, json.JSONDecodeError) as exc:
        raise PathkitError(f"cannot read checkpoint {weights}: {exc}") from exc
    state = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    try:
        missing, unexpected = model.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # shape mismatches
        raise PathkitError(f"checkpoint {weights} does not fit the model: {exc}") from exc
    if missing or unexpected:
        raise PathkitError(f"checkpoint {weights} does not fit the model: missing {sorted(missing)[:10]}, "
                           f"unexpected {sorted(unexpected)[:10]}")
    if optimizer is not None and "optim_param_groups" in meta:
        opt_state: dict[str, Any] = {"state": {}, "param_groups": meta["optim_param_groups"]}
        for key, value in tensors.items():
            if key.startswith("optim."):
                _, pid, name = key.split(".", 2)
                opt_state["state"].setdefault(int(pid), {})[name] = value
        for pid, scalars in meta.get("optim_scalars", {}).items():
            opt_state["state"].setdefault(int(pid), {}).update(scalars)
        optimizer.load_state_dict(opt_state)
        if "rng.torch" in tensors:
            torch.set_rng_state(tensors["rng.torch"])
    if scheduler is not None and "scheduler" in meta:
        scheduler.load_state_dict(meta["scheduler"])
    return meta


# --------------------------------------------------------------------------- loops


def _targets(items: Sequence[Any]) -> dict[str, Any]:
    if isinstance(items, ItemsWithTargets):
        return dict(items.targets)
    return {i["case_id"]: i["target"] for i in items}


def _step_batches(n: int, cfg: TrainConfig, period: int) -> list[list[int]]:
    """The index batches of training period `period` (1-based) when training by steps.

    Steps run through consecutive passes over the cases, each pass in its own seeded order
    (seed + pass + 1), so that a period's batches follow from its number alone: a resumed run
    draws exactly the batches the uninterrupted one would have."""
    import torch

    length, per_pass = cfg.period_steps(n), max(1, math.ceil(n / cfg.batch_size))
    first, last = (period - 1) * length, min(period * length, int(cfg.max_steps or 0))
    orders: dict[int, list[int]] = {}
    batches = []
    for step in range(first, last):
        epoch, position = divmod(step, per_pass)
        if epoch not in orders:
            generator = torch.Generator().manual_seed(cfg.seed + epoch + 1)
            orders[epoch] = torch.randperm(n, generator=generator).tolist() if cfg.shuffle else list(range(n))
        batches.append(orders[epoch][position * cfg.batch_size:(position + 1) * cfg.batch_size])
    return batches


def _period_loader(items: Sequence[dict[str, Any]], model: Any, cfg: TrainConfig, period: int, accelerator: Any):
    """The training batches of one period: a pass shuffled by seed + period (by epochs) or its steps."""
    import torch

    if cfg.max_steps is None:
        loader = torch.utils.data.DataLoader(items, batch_size=cfg.batch_size, shuffle=cfg.shuffle,
                                             collate_fn=model.collate, num_workers=cfg.num_workers,
                                             generator=torch.Generator().manual_seed(cfg.seed + period))
    else:
        loader = torch.utils.data.DataLoader(items, batch_sampler=_step_batches(len(items), cfg, period),
                                             collate_fn=model.collate, num_workers=cfg.num_workers)
    return accelerator.prepare_data_loader(loader) if accelerator.num_processes > 1 else loader


def _shard_batches(accelerator: Any, model: Any, items: Sequence[dict[str, Any]], batch_size: int):
    """(cases, batch on the device) of this process's shard of `items`, the model in eval mode."""
    shard = range(accelerator.process_index, len(items), accelerator.num_processes)
    model.eval()
    for start in range(0, len(shard), batch_size):
        chunk = [items[i] for i in shard[start : start + batch_size]]
        yield chunk, _to_device(model.collate(chunk), accelerator.device)


def _predict_items(accelerator: Any, model: Any, items: Sequence[dict[str, Any]], batch_size: int,
                   bar: Any = None) -> dict[str, Any]:
    """Predictions for `items`, sharded over processes and gathered on every process; `bar`
    (a pathkit_core.progress.ProgressBar) counts this process's cases."""
    import torch
    from accelerate.utils import gather_object

    out: list[tuple[str, Any]] = []
    with torch.no_grad(), accelerator.autocast():
        for chunk, batch in _shard_batches(accelerator, model, items, batch_size):
            preds = model.predict(batch)
            if len(preds) != len(chunk):
                raise PathkitError(f"{type(model).__name__}.predict returned {len(preds)} predictions for "
                                   f"{len(chunk)} cases")
            out.extend((item["case_id"], pred) for item, pred in zip(chunk, preds, strict=True))
            if bar is not None:
                bar.advance(len(chunk) * accelerator.num_processes)
    if accelerator.num_processes > 1:
        out = gather_object(out)
    return dict(out)


def _val_loss(accelerator: Any, model: Any, items: Sequence[dict[str, Any]], batch_size: int) -> float:
    import torch

    total, count = 0.0, 0
    with torch.no_grad(), accelerator.autocast():
        for _, batch in _shard_batches(accelerator, model, items, batch_size):
            total += float(model.training_step(batch).detach().float())
            count += 1
    stats = torch.tensor([total, count], dtype=torch.float64, device=accelerator.device)
    stats = accelerator.reduce(stats, reduction="sum")
    return float(stats[0] / max(stats[1], 1))


def _to_device(batch: Any, device: Any) -> Any:
    import torch

    if torch.is_tensor(batch):
        return batch.to(device)
    if isinstance(batch, Mapping):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


def make_accelerator(cfg: TrainConfig):
    """An Accelerator for `cfg`; a fresh Accelerate state where a single-process run asks for another
    precision or device (docs/training.md, "Several processes")."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, PartialState

    try:
        accelerator = Accelerator(cpu=cfg.cpu, mixed_precision=cfg.mixed_precision)
    except ValueError as exc:
        if "already been initialized" not in str(exc) or PartialState().num_processes > 1:
            raise PathkitError(f"cannot change the training setup inside one distributed run: {exc}") from exc
        AcceleratorState._reset_state(reset_partial_state=True)
        accelerator = Accelerator(cpu=cfg.cpu, mixed_precision=cfg.mixed_precision)
    close_process_group_at_exit()
    return accelerator


@dataclass
class TrainingSchedule:
    """A benchmark's training protocol as one policy read from its `TrainConfig`: when to validate, which
    validation is better, how the plateau scheduler steps, when early stopping ends the run (docs/training.md,
    "The loop")."""

    cfg: TrainConfig
    maximize: bool  # a selection score to maximise (else: lower is better)

    @classmethod
    def of(cls, cfg: TrainConfig, selection: SelectionFn | None) -> TrainingSchedule:
        return cls(cfg, selection is not None and cfg.selection_mode == "max")

    @property
    def unit(self) -> str:
        return "epoch" if self.cfg.max_steps is None else "period"

    def start_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"epoch": 0, "best_epoch": 0, "best_score": -math.inf if self.maximize else math.inf,
                                 "bad_epochs": 0, "history": []}
        if self.cfg.max_steps is not None:
            state.update(step=0, best_step=0)
        return state

    def scheduler(self, optimizer: Any) -> Any:
        """ReduceLROnPlateau on the validation loss or the selection score; None: a constant rate."""
        import torch

        cfg = self.cfg
        if cfg.plateau_on == "none":
            return None
        mode = "min" if cfg.plateau_on == "val_loss" else ("max" if self.maximize else "min")
        return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode=mode, factor=cfg.plateau_factor,
                                                          patience=cfg.plateau_patience)

    def step_scheduler(self, scheduler: Any, val_loss: float, score: float) -> None:
        # stepped at validations only, so its patience counts validations, not epochs
        if scheduler is not None:
            scheduler.step(val_loss if self.cfg.plateau_on == "val_loss" else score)

    def validates(self, epoch: int, n_val: int) -> bool:
        return self.cfg.validates_at(epoch) and n_val > 0

    def becomes_best(self, validated: bool, score: float, best_score: float) -> bool:
        """Whether this period's model is the new best (without model selection: every period's)."""
        if not self.cfg.model_selection:
            return True  # the last epoch is the model
        if not validated:
            return False
        return score > best_score if self.maximize else score < best_score

    def stopped(self, state: Mapping[str, Any]) -> bool:
        """Early stopping: `early_stop_patience` validations in a row without a better model."""
        patience = self.cfg.early_stop_patience
        return patience is not None and state["bad_epochs"] >= patience


@dataclass
class _Fit:
    """What one `fit` call works with (the loop's helpers share it)."""

    schedule: TrainingSchedule
    accelerator: Any
    module: Any
    optimizer: Any
    scheduler: Any
    out_dir: Path
    config: dict[str, Any]
    state: dict[str, Any]
    n_periods: int
    last_written: float = 0.0  # when `last` was last written (time.monotonic)

    @property
    def cfg(self) -> TrainConfig:
        return self.schedule.cfg


def _check_splits(train_items: Sequence[Any], val_items: Sequence[Any], cfg: TrainConfig) -> None:
    if len(train_items) == 0:
        raise PathkitError("no training cases: the train split is empty after filtering")
    if len(val_items) == 0 and cfg.model_selection:
        raise PathkitError("no validation cases: model selection needs a validation split "
                           "(or train without selection: model_selection=False, best = last epoch)")


def _resume(run: _Fit, stage_key: str | None) -> None:
    """Continue from `last` in the output folder when it was written under `stage_key` (one
    written under another key is discarded, and training starts fresh)."""
    accelerator, last = run.accelerator, run.out_dir / "last.safetensors"
    if last.exists() and stage_key is not None:
        written_under = checkpoint_stage_key(last)
        if written_under != stage_key:
            accelerator.print(f"not resuming {last}: it was written under fit key {written_under or 'unknown'}, "
                              f"this run's is {stage_key} (its data, code or settings differ); training from scratch")
            if accelerator.is_main_process:
                discard_checkpoints(run.out_dir)
            accelerator.wait_for_everyone()
    if not last.exists():
        return
    state = run.state
    meta = load_checkpoint(last, run.module, optimizer=run.optimizer, scheduler=run.scheduler)
    state.update(meta.get("trainer_state", {}))
    if state.pop("final", False) and state["epoch"] < run.n_periods and not run.schedule.stopped(state):
        raise PathkitError(
            f"{last} is the checkpoint of a training that early stopping ended after {state['epoch']} "
            f"period(s) (it keeps no optimizer state); with early_stop_patience {run.cfg.early_stop_patience} "
            "it would train on, which cannot continue exactly: train in a new folder")
    accelerator.print(f"resuming from {last} after epoch {state['epoch']}")


def _train_period(run: _Fit, stepper: Any, train_items: Sequence[dict[str, Any]], epoch: int) -> float:
    """One period's optimizer steps; the mean training loss."""
    accelerator, cfg = run.accelerator, run.cfg
    stepper.train()
    losses = []
    for batch in _period_loader(train_items, run.module, cfg, epoch, accelerator):
        batch = _to_device(batch, accelerator.device)
        with accelerator.autocast():
            loss = stepper(batch)
        accelerator.backward(loss)
        if cfg.grad_clip:
            accelerator.clip_grad_norm_(stepper.parameters(), cfg.grad_clip)
        run.optimizer.step()
        run.optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach().float()))
    return sum(losses) / max(len(losses), 1)


def _validate(run: _Fit, inner: Any, val_items: Sequence[dict[str, Any]], selection: SelectionFn | None,
              references: Mapping[str, Any]) -> tuple[float, float]:
    """(validation loss, selection score: the loss when no selection function is given)."""
    cfg = run.cfg
    val_loss = _val_loss(run.accelerator, inner, val_items, cfg.batch_size)
    if selection is None:
        return val_loss, val_loss
    preds = _predict_items(run.accelerator, inner, val_items, cfg.eval_batch_size or cfg.batch_size)
    return val_loss, float(selection(preds, references))


def _keep(run: _Fit, inner: Any, epoch: int, validated: bool, score: float) -> bool:
    """Record a finished period: the best model, the early-stopping count, `last` and the
    history; whether training ends here."""
    state, cfg, accelerator = run.state, run.cfg, run.accelerator
    if run.schedule.becomes_best(validated, score, state["best_score"]):
        state.update(best_epoch=epoch, best_score=score, bad_epochs=0)
        if cfg.max_steps is not None:
            state["best_step"] = state["step"]
        if accelerator.is_main_process:
            save_checkpoint(run.out_dir, "best", inner, config=run.config, trainer_state=state)
    elif validated:
        state["bad_epochs"] += 1
    stopping = run.schedule.stopped(state)
    final = stopping or epoch >= run.n_periods
    if accelerator.is_main_process:
        if stopping:
            # early stopping has ended training for good (a resumed run stops at once, whatever
            # its max_epochs): the AdamW moments, two thirds of the file, are not needed
            save_checkpoint(run.out_dir, "last", inner, config=run.config, trainer_state={**state, "final": True})
        elif final or time.monotonic() - run.last_written >= 60.0 * cfg.checkpoint_every_minutes:
            # after the last epoch the optimizer state stays: a run given more epochs continues
            save_checkpoint(run.out_dir, "last", inner, config=run.config, optimizer=run.optimizer,
                            scheduler=run.scheduler, trainer_state=state)
            run.last_written = time.monotonic()
        atomic_write_json(run.out_dir / "history.json", state["history"])
    accelerator.wait_for_everyone()
    return final


def fit(model: TaskModel, train_items: Sequence[dict[str, Any]], val_items: Sequence[dict[str, Any]], cfg: TrainConfig,
        out_dir: Path, *, selection: SelectionFn | None = None, checkpoint_config: Mapping[str, Any] | None = None,
        accelerator: Any = None, on_epoch: Callable[[dict[str, float]], None] | None = None,
        stage_key: str | None = None) -> FitResult:
    """Train `model` under the `TrainingSchedule` of `cfg`, selecting the best epoch on `val_items` with
    `selection` (validation loss when None; docs/training.md, "The loop"). A `last` checkpoint in `out_dir`
    written under `stage_key` (the run's fit key) is continued exactly; one written under another key is
    discarded, saying why in one line (docs/user-guide.md)."""
    import torch

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _check_splits(train_items, val_items, cfg)
    seed_everything(cfg.seed)
    accelerator = accelerator or make_accelerator(cfg)
    schedule = TrainingSchedule.of(cfg, selection)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    config = {**(checkpoint_config or {}), "train": asdict(cfg)}
    if stage_key is not None:
        config["stage_key"] = stage_key
    run = _Fit(schedule, accelerator, model, optimizer, schedule.scheduler(optimizer), out_dir, config,
               schedule.start_state(), cfg.periods(len(train_items)))
    _resume(run, stage_key)
    state, unit = run.state, schedule.unit
    stepper, run.optimizer = accelerator.prepare(_step_module(model), optimizer)
    references = _targets(val_items)
    stopped_early = False
    estimate = TrainingEstimate(run.n_periods, cfg.validates_at, cfg.early_stop_patience, unit=unit)
    run.last_written = time.monotonic()
    with _progress(accelerator, cfg, unit) as progress:
        task = progress.add_task("training", total=run.n_periods, completed=state["epoch"], left="")
        while state["epoch"] < run.n_periods:
            # checked before an epoch, so that resuming a run that already stopped early (its
            # stage markers lost, say) trains nothing more
            if schedule.stopped(state):
                stopped_early = True
                if cfg.progress:
                    accelerator.print(early_stop_line(state["epoch"], cfg.early_stop_patience,
                                                      state["best_epoch"], unit))
                break
            epoch = state["epoch"] + 1
            t0 = time.perf_counter()
            record: dict[str, Any] = {"epoch": epoch, "train_loss": _train_period(run, stepper, train_items, epoch)}
            inner = accelerator.unwrap_model(stepper).inner
            validated, score = schedule.validates(epoch, len(val_items)), math.nan
            t_train = time.perf_counter() - t0
            if validated:
                val_loss, score = _validate(run, inner, val_items, selection, references)
                schedule.step_scheduler(run.scheduler, val_loss, score)
                record.update(val_loss=val_loss, selection=score)
            record.update(lr=run.optimizer.param_groups[0]["lr"], seconds=time.perf_counter() - t0)
            if cfg.max_steps is not None:
                state["step"] = record["step"] = min(epoch * cfg.period_steps(len(train_items)), cfg.max_steps)
            state["history"].append(record)
            state["epoch"] = epoch
            estimate.record(t_train, record["seconds"] - t_train if validated else None)
            final = _keep(run, inner, epoch, validated, score)
            if on_epoch is not None:
                on_epoch(record)
            if cfg.progress and estimate.measured == estimate.warmup + 1 and not final:
                accelerator.print(estimate.line(epoch, state["bad_epochs"]))
            shown = f" sel {score:.4f}" if validated else ""
            progress.update(task, completed=epoch, left=estimate.left(epoch, state["bad_epochs"]),
                            description=f"{unit} {epoch} loss {record['train_loss']:.3f}{shown}")
    return FitResult(best_epoch=int(state["best_epoch"]), best_score=float(state["best_score"]),
                     epochs_run=int(state["epoch"]), history=list(state["history"]),
                     best_checkpoint=out_dir / "best.safetensors", last_checkpoint=out_dir / "last.safetensors",
                     stopped_early=stopped_early, best_step=state.get("best_step"))


def predict(model: TaskModel, items: Sequence[dict[str, Any]], *, batch_size: int = 1, accelerator: Any = None,
            cfg: TrainConfig | None = None, out_path: str | Path | None = None) -> dict[str, Any]:
    """Predictions keyed by case id (gathered across processes); with `out_path`, also written
    there as JSON lines `{"id", "prediction"}` in the order of `items` (by the main process)."""
    cfg = cfg or TrainConfig()
    accelerator = accelerator or make_accelerator(cfg)
    model = model.to(accelerator.device)
    with ProgressBar("predict", len(items), "cases", enabled=cfg.progress and accelerator.is_main_process) as bar:
        preds = _predict_items(accelerator, model, items, batch_size, bar)
    if out_path is not None and accelerator.is_main_process:
        write_predictions(out_path, preds, [item["case_id"] for item in items])
    return preds


def write_predictions(path: str | Path, predictions: Mapping[str, Any], ids: Sequence[str]) -> Path:
    """Write `predictions.jsonl`: one `{"id", "prediction"}` object per line, in `ids` order, atomically."""
    lines = [json.dumps({"id": cid, "prediction": predictions[cid]}, default=json_default) for cid in ids]
    return atomic_write_text(Path(path), "\n".join(lines) + "\n")


def read_predictions(path: str | Path) -> dict[str, Any]:
    """What `write_predictions` wrote, by case id."""
    out: dict[str, Any] = {}
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            out[record["id"]] = record["prediction"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise PathkitError(f"{path}: line {lineno} is not a {{\"id\", \"prediction\"}} record ({exc})") from None
    return out


def task_read_predictions(task: Any, path: Path) -> dict[str, Any]:
    """Predictions as the task (a `Task`) wrote them, else as JSON lines (`read_predictions`)."""
    read = task.read_predictions(path)
    return read if read is not None else read_predictions(path)


def _progress(accelerator: Any, cfg: TrainConfig, unit: str = "epoch"):
    """The training bar; its time left is `TrainingEstimate.left` (rich's own extrapolates the
    bar's rate, which counts the warm-up and cannot see validation-only periods or early stopping)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from pathkit_core.console import err_console

    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn(f"{{task.completed}}/{{task.total}} {unit}s"),
               TimeElapsedColumn(), TextColumn("{task.fields[left]}"))
    return Progress(*columns, console=err_console, disable=not (cfg.progress and accelerator.is_main_process))
