"""The core trainer: exact resume after an interruption, selection and early stopping, plateau LR,
gradient clipping, mixed precision, safetensors checkpoints, predictions.jsonl, two-process DDP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pathkit_core.contracts import PathkitError
from pathkit_core.training.trainer import (
    TrainConfig,
    fit,
    load_checkpoint,
    make_accelerator,
    predict,
    seed_everything,
)
from tests.core.training._tiny_task import TinyRegressor, make_items

HERE = Path(__file__).parent


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def new_model() -> TinyRegressor:
    seed_everything(0)
    return TinyRegressor()


def config(**overrides) -> TrainConfig:
    values = {"max_epochs": 4, "lr": 1e-2, "batch_size": 4, "progress": False, "cpu": True,
              "early_stop_patience": None, "checkpoint_every_minutes": 0}
    return TrainConfig(**{**values, **overrides})


TRAIN, VAL = make_items(16, 1), make_items(6, 2)


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_defaults_follow_pathbench_and_unknown_options_fail():
    cfg = TrainConfig()
    assert (cfg.lr, cfg.weight_decay, cfg.batch_size, cfg.max_epochs) == (7e-5, 1e-5, 1, 200)
    plateau = (cfg.plateau_factor, cfg.plateau_patience, cfg.plateau_on, cfg.early_stop_patience)
    assert plateau == (0.5, 7, "val_loss", 20)
    with pytest.raises(PathkitError, match="unknown training option"):
        TrainConfig.from_mapping({"learning_rate": 1.0})


def crashing_in_epoch_three() -> TinyRegressor:
    """A new model whose training is cut (KeyboardInterrupt) at the second step of epoch 3 (4 steps
    per epoch)."""
    model = new_model()
    original = model.training_step
    calls = {"train": 0}

    def crash_in_epoch_three(batch):
        if model.training:
            calls["train"] += 1
            if calls["train"] == 4 * 2 + 2:
                raise KeyboardInterrupt("power cut")
        return original(batch)

    model.training_step = crash_in_epoch_three
    return model


def test_resume_after_an_interruption_continues_exactly(tmp_path):
    straight = new_model()
    fit(straight, TRAIN, VAL, config(), tmp_path / "straight")

    interrupted = crashing_in_epoch_three()
    with pytest.raises(KeyboardInterrupt):
        fit(interrupted, TRAIN, VAL, config(), tmp_path / "resumed")
    assert json.loads((tmp_path / "resumed" / "last.json").read_text())["trainer_state"]["epoch"] == 2

    resumed = new_model()  # a fresh process: new model, state only from the checkpoint
    result = fit(resumed, TRAIN, VAL, config(), tmp_path / "resumed")
    assert result.epochs_run == 4
    for key, value in weights(straight).items():
        torch.testing.assert_close(resumed.state_dict()[key], value, rtol=0, atol=0)
    history = json.loads((tmp_path / "resumed" / "history.json").read_text())
    reference = json.loads((tmp_path / "straight" / "history.json").read_text())
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in history]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in reference]


class _Clock:
    """time.monotonic for the trainer: each call returns the next of `ticks` (seconds)."""

    def __init__(self, ticks):
        import time as real

        self._ticks, self.perf_counter = iter(ticks), real.perf_counter

    def monotonic(self):
        return next(self._ticks)


def test_resume_after_a_skipped_last_write_retrains_from_the_earlier_one(tmp_path, monkeypatch):
    import pathkit_core.training.trainer as trainer

    straight = new_model()
    fit(straight, TRAIN, VAL, config(), tmp_path / "straight")
    # at most one `last` a minute: the clock reads 0 at the start, 61 s after epoch 1 (written),
    # 100 s after epoch 2 (39 s since: skipped); epoch 3 crashes
    monkeypatch.setattr(trainer, "time", _Clock([0.0, 61.0, 61.0, 100.0]))
    interrupted = crashing_in_epoch_three()
    with pytest.raises(KeyboardInterrupt):
        fit(interrupted, TRAIN, VAL, config(checkpoint_every_minutes=1), tmp_path / "resumed")
    assert json.loads((tmp_path / "resumed" / "last.json").read_text())["trainer_state"]["epoch"] == 1
    assert len(json.loads((tmp_path / "resumed" / "history.json").read_text())) == 2
    monkeypatch.undo()

    resumed = new_model()
    result = fit(resumed, TRAIN, VAL, config(checkpoint_every_minutes=1), tmp_path / "resumed")
    assert result.epochs_run == 4 and len(result.history) == 4
    for key, value in weights(straight).items():
        torch.testing.assert_close(resumed.state_dict()[key], value, rtol=0, atol=0)
    history = json.loads((tmp_path / "resumed" / "history.json").read_text())
    reference = json.loads((tmp_path / "straight" / "history.json").read_text())
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in history] == [
        {k: v for k, v in r.items() if k != "seconds"} for r in reference]


def test_last_is_written_at_most_every_n_minutes_and_always_at_the_end(tmp_path, monkeypatch):
    import pathkit_core.training.trainer as trainer

    writes = []
    save = trainer.save_checkpoint
    monkeypatch.setattr(trainer, "save_checkpoint", lambda d, stem, *a, **k: (
        writes.append((stem, k["trainer_state"]["epoch"], k.get("optimizer") is not None)), save(d, stem, *a, **k))[1])
    fit(new_model(), TRAIN, VAL, config(max_epochs=6, checkpoint_every_minutes=1e6), tmp_path / "a")
    assert [w for w in writes if w[0] == "last"] == [("last", 6, True)]  # the final epoch, resumable
    writes.clear()
    fit(new_model(), TRAIN, VAL, config(max_epochs=3), tmp_path / "b")
    assert [w for w in writes if w[0] == "last"] == [("last", 1, True), ("last", 2, True), ("last", 3, True)]


def test_an_early_stopped_last_keeps_no_optimizer_state_and_is_not_continued(tmp_path, capsys):
    scores = iter([0.5, 0.4, 0.3, 0.2])
    cfg = config(max_epochs=6, early_stop_patience=2, progress=True)
    result = fit(new_model(), TRAIN, VAL, cfg, tmp_path, selection=lambda preds, refs: next(scores))
    assert result.stopped_early and result.epochs_run == 3
    assert "early stopping after epoch 3: no better validation score in 2 validation(s) (patience 2); " \
           "the best epoch is 1" in capsys.readouterr().out
    tensors = load_file(str(tmp_path / "last.safetensors"))
    assert all(k.startswith("model.") for k in tensors)  # weights only: a third of a resumable `last`
    assert json.loads((tmp_path / "last.json").read_text())["trainer_state"]["final"] is True
    again = fit(new_model(), TRAIN, VAL, config(max_epochs=6, early_stop_patience=2), tmp_path)
    assert again.epochs_run == 3 and again.stopped_early  # resuming trains nothing more
    with pytest.raises(PathkitError, match="early stopping ended after 3 period"):
        fit(new_model(), TRAIN, VAL, config(max_epochs=6, early_stop_patience=5), tmp_path)


def test_the_estimate_after_the_warm_up_is_an_upper_bound_when_early_stopping_can_end_training(tmp_path, capsys):
    """With patience, the line printed after epoch 2 gives the most the rest can take, the first
    epoch at which early stopping could end it, and says why the total is not known; training
    then does stop early. Without patience it gives one figure and says all epochs run."""
    import re

    scores = iter([0.5, 0.6, 0.4, 0.3, 0.2, 0.1])  # best at epoch 2, then 3 worse validations
    result = fit(new_model(), TRAIN, VAL, config(max_epochs=8, early_stop_patience=3, progress=True), tmp_path / "a",
                 selection=lambda preds, refs: next(scores))
    assert result.stopped_early and result.epochs_run == 5
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("epoch 2/8:"))
    assert re.fullmatch(r"epoch 2/8: \d+ s per epoch \+ \d+ s per validation \(measured after 1 warm-up epoch\(s\)\); "
                        r"at most \d+ s for the 6 epoch\(s\) left\. Early stopping \(patience 3\) may end it from "
                        r"epoch 5 on \(in \d+ s\), so the total cannot be known in advance", line), line
    assert "early stopping after epoch 5: no better validation score in 3 validation(s) (patience 3); " \
           "the best epoch is 2" in out
    fit(new_model(), TRAIN, VAL, config(max_epochs=4, early_stop_patience=None, progress=True), tmp_path / "b")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("epoch 2/4:"))
    assert re.search(r"; about \d+ s for the 2 epoch\(s\) left \(no early stopping in this protocol: all 4 epochs "
                     r"run\)$", line), line


def test_selection_picks_the_best_epoch_and_stops_early(tmp_path):
    scores = iter([0.1, 0.5, 0.3, 0.2, 0.9, 0.9])
    snapshots = {}
    model = new_model()
    result = fit(model, TRAIN, VAL, config(max_epochs=6, early_stop_patience=2), tmp_path,
                 selection=lambda preds, refs: next(scores),
                 on_epoch=lambda record: snapshots.__setitem__(record["epoch"], weights(model)))
    assert (result.best_epoch, result.best_score, result.epochs_run, result.stopped_early) == (2, 0.5, 4, True)
    best = TinyRegressor()
    load_checkpoint(result.best_checkpoint, best)
    for key, value in snapshots[2].items():
        torch.testing.assert_close(best.state_dict()[key], value, rtol=0, atol=0)


def test_reduce_lr_on_plateau_of_validation_loss(tmp_path):
    # a learning rate too small to move the weights: the validation loss plateaus at once
    result = fit(new_model(), TRAIN, VAL, config(max_epochs=5, lr=1e-12, plateau_patience=1), tmp_path)
    assert [r["lr"] for r in result.history] == pytest.approx([1e-12, 1e-12, 5e-13, 5e-13, 2.5e-13])


def test_gradients_are_clipped(tmp_path):
    cfg = config(max_epochs=1, grad_clip=0.01)
    accelerator = make_accelerator(cfg)
    seen = []
    clip = accelerator.clip_grad_norm_

    def spy(parameters, max_norm, *args, **kwargs):
        parameters = list(parameters)
        before = clip(parameters, max_norm, *args, **kwargs)
        after = torch.norm(torch.stack([p.grad.norm() for p in parameters if p.grad is not None]))
        seen.append((float(before), float(after), max_norm))
        return before

    accelerator.clip_grad_norm_ = spy
    fit(new_model(), TRAIN, VAL, cfg, tmp_path, accelerator=accelerator)
    assert len(seen) == 4
    assert all(before > 0.01 and after <= 0.01 * 1.0001 and max_norm == 0.01 for before, after, max_norm in seen)


def test_bf16_autocast_on_cpu(tmp_path):
    result = fit(new_model(), TRAIN, VAL, config(max_epochs=1, mixed_precision="bf16"), tmp_path)
    assert torch.isfinite(torch.tensor(result.history[0]["train_loss"]))


def test_checkpoints_are_safetensors_with_json_side_cars(tmp_path):
    fit(new_model(), TRAIN, VAL, config(max_epochs=2), tmp_path, checkpoint_config={"generator": "tiny"})
    tensors = load_file(str(tmp_path / "last.safetensors"))
    assert any(k.startswith("model.") for k in tensors) and any(k.startswith("optim.") for k in tensors)
    assert "rng.torch" in tensors
    best_tensors = load_file(str(tmp_path / "best.safetensors"))
    assert all(k.startswith("model.") for k in best_tensors)  # the best checkpoint holds weights only
    side = json.loads((tmp_path / "best.json").read_text())
    assert side["config"]["generator"] == "tiny" and side["config"]["train"]["lr"] == 1e-2
    with pytest.raises(PathkitError, match="does not fit the model"):
        load_checkpoint(tmp_path / "best.safetensors", TinyRegressor(dim=6))
    (tmp_path / "broken.safetensors").write_bytes(b"not a checkpoint")
    (tmp_path / "broken.json").write_text("{}")
    with pytest.raises(PathkitError, match="cannot read checkpoint"):
        load_checkpoint(tmp_path / "broken.safetensors", TinyRegressor())


def test_predict_writes_predictions_jsonl_in_item_order(tmp_path):
    model = new_model().eval()
    preds = predict(model, VAL, batch_size=4, out_path=tmp_path / "predictions.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in lines] == [it["case_id"] for it in VAL]
    assert all(r["prediction"] == preds[r["id"]] for r in lines)


GOLDMARK_VALIDATION_EPOCHS = (2, 5, 10, 20, 50, 80, 120)


def test_goldmark_schedule_validates_and_steps_the_plateau_only_at_its_epochs(tmp_path, monkeypatch):
    steps = []
    original = torch.optim.lr_scheduler.ReduceLROnPlateau.step
    monkeypatch.setattr(torch.optim.lr_scheduler.ReduceLROnPlateau, "step",
                        lambda self, metric, *a, **k: (steps.append(metric), original(self, metric, *a, **k))[1])
    calls = []

    def flat_auroc(preds, refs):  # validation AUROC that never improves after the first validation
        calls.append(len(preds))
        return 0.7

    cfg = config(max_epochs=120, lr=1e-4, plateau_on="selection", plateau_patience=2, selection_mode="max",
                 validation_epochs=GOLDMARK_VALIDATION_EPOCHS)
    result = fit(new_model(), TRAIN, VAL, cfg, tmp_path, selection=flat_auroc)
    assert len(steps) == 7 and len(calls) == 7  # not 120
    validated = [r["epoch"] for r in result.history if "selection" in r]
    assert validated == list(GOLDMARK_VALIDATION_EPOCHS)
    assert result.best_epoch == 2 and result.epochs_run == 120
    # patience 2 counts validations: the rate halves at the 4th (epoch 20) and the 7th (epoch 120),
    # where stepping every epoch would halve it every third epoch from epoch 5 on
    lr = {r["epoch"]: r["lr"] for r in result.history}
    assert lr[19] == pytest.approx(1e-4) and lr[20] == pytest.approx(5e-5) and lr[119] == pytest.approx(5e-5)
    assert lr[120] == pytest.approx(2.5e-5)


def test_validation_epochs_are_checked(tmp_path):
    assert TrainConfig.from_mapping({"validation_epochs": [10, 2, 2]}).validation_epochs == (2, 10)
    for bad in ("2,5", [0, 2], [2.5]):
        with pytest.raises(PathkitError, match="validation_epochs"):
            TrainConfig(validation_epochs=bad)
    # the last epoch is always validated, so "best" and early stopping see it
    result = fit(new_model(), TRAIN, VAL, config(max_epochs=3, validation_epochs=(1,)), tmp_path)
    assert [r["epoch"] for r in result.history if "val_loss" in r] == [1, 3]


def test_without_model_selection_best_is_the_last_epoch_and_needs_no_validation(tmp_path):
    model = new_model()
    result = fit(model, TRAIN, [], config(max_epochs=3, model_selection=False), tmp_path)
    assert (result.best_epoch, result.epochs_run) == (3, 3)
    assert all("val_loss" not in r for r in result.history)
    assert [r["lr"] for r in result.history] == pytest.approx([1e-2] * 3)  # nothing steps the plateau
    best, last = TinyRegressor(), TinyRegressor()
    load_checkpoint(result.best_checkpoint, best)
    load_checkpoint(result.last_checkpoint, last)
    for key, value in last.state_dict().items():
        torch.testing.assert_close(best.state_dict()[key], value, rtol=0, atol=0)
    # with validation cases it still reports them, but keeps the last epoch
    scores = iter([0.9, 0.1, 0.2])
    result = fit(new_model(), TRAIN, VAL, config(max_epochs=3, model_selection=False), tmp_path / "with-val",
                 selection=lambda preds, refs: next(scores))
    assert result.best_epoch == 3 and [r["selection"] for r in result.history] == [0.9, 0.1, 0.2]


def test_training_order_is_shuffled_unless_turned_off(tmp_path):
    for shuffle in (True, False):
        model = new_model()
        fit(model, TRAIN, VAL, config(max_epochs=2, batch_size=1, shuffle=shuffle), tmp_path / str(shuffle))
        first, second = model.trained_on[:16], model.trained_on[16:32]
        assert sorted(first) == sorted(second) == sorted(it["case_id"] for it in TRAIN)
        assert (first == second) is (not shuffle)
        assert (first == [it["case_id"] for it in TRAIN]) is (not shuffle)


def test_fit_needs_train_and_validation_cases(tmp_path):
    with pytest.raises(PathkitError, match="no training cases"):
        fit(new_model(), [], VAL, config(), tmp_path)
    with pytest.raises(PathkitError, match="no validation cases"):
        fit(new_model(), TRAIN, [], config(), tmp_path)


@pytest.mark.slow  # multi-process: `make test-suite`, which CI runs after `make test`
def test_two_cpu_processes_train_one_synchronised_model(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [str(HERE.parents[2]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(HERE / "_ddp_script.py"), str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["world"] == 2 and r["type"].endswith("MULTI_CPU") for r in ranks)
    # each process trained on its own half of the cases, yet the weights are identical: DDP synced them
    for mine, theirs in zip(ranks[0]["trained_on"], ranks[1]["trained_on"], strict=True):
        assert not set(mine) & set(theirs) and len(mine) + len(theirs) == 16
    assert ranks[0]["digest"] == ranks[1]["digest"]
    # validation and prediction were sharded and gathered on every process
    all_val = sorted(it["case_id"] for it in make_items(7, 2))
    assert ranks[0]["validated"] == ranks[1]["validated"] == all_val
    assert ranks[0]["predicted"] == all_val
    assert len((tmp_path / "predictions.jsonl").read_text().splitlines()) == 7
    assert (tmp_path / "ckpt" / "best.safetensors").exists() and (tmp_path / "ckpt" / "last.safetensors").exists()
