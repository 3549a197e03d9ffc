"""Training by steps (eva's protocol): periods of steps, validation checks, patience in checks,
best step, exact resume, and a constant learning rate."""

from __future__ import annotations

import json

import pytest
import torch

from pathkit_core.contracts import PathkitError
from pathkit_core.training.trainer import TrainConfig, _step_batches, fit

from ._tiny_task import TinyRegressor, make_items


def test_period_arithmetic():
    cfg = TrainConfig(max_steps=10, batch_size=4)
    assert cfg.period_steps(10) == 3 and cfg.periods(10) == 4  # a pass is ceil(10/4) = 3 steps
    cfg = TrainConfig(max_steps=10, val_every_steps=4, batch_size=4)
    assert cfg.period_steps(10) == 4 and cfg.periods(10) == 3
    assert TrainConfig(max_epochs=5).periods(10) == 5
    for bad in ({"max_steps": 0}, {"val_every_steps": -1}, {"max_steps": True}, {"plateau_on": "x"}):
        with pytest.raises(PathkitError):
            TrainConfig(**bad)


def test_step_batches_run_through_seeded_passes():
    cfg = TrainConfig(max_steps=7, val_every_steps=3, batch_size=4, seed=5)
    periods = [_step_batches(10, cfg, p) for p in (1, 2, 3)]
    assert [len(b) for b in periods] == [3, 3, 1]  # 7 steps: 3 + 3 + the last one
    steps = [batch for period in periods for batch in period]
    first_pass = sorted(i for batch in steps[:3] for i in batch)
    assert first_pass == list(range(10))  # steps 0-2 are one pass: every case once
    assert [len(b) for b in steps[:3]] == [4, 4, 2]
    assert sorted(i for batch in steps[3:6] for i in batch) == list(range(10))  # second pass
    assert steps[:3] != steps[3:6]  # each pass has its own order
    assert _step_batches(10, cfg, 2) == periods[1]  # a period follows from its number alone


def test_fit_by_steps_checks_each_period_and_records_the_best_step(tmp_path):
    train, val = make_items(24, 0), make_items(8, 1)
    cfg = TrainConfig(max_steps=12, val_every_steps=4, batch_size=8, lr=1e-2, plateau_on="none",
                      early_stop_patience=None, progress=False, cpu=True)
    result = fit(TinyRegressor(dropout=0.0), train, val, cfg, tmp_path)
    history = json.loads((tmp_path / "history.json").read_text())
    assert [h["step"] for h in history] == [4, 8, 12] and result.epochs_run == 3
    best = min(history, key=lambda h: h["val_loss"])
    assert result.best_step == best["step"] and result.best_epoch == best["epoch"]
    assert all(h["lr"] == 1e-2 for h in history)  # no plateau scheduler: constant learning rate
    saved = json.loads((tmp_path / "best.json").read_text())["trainer_state"]
    assert saved["best_step"] == result.best_step


def test_patience_counts_checks_and_resume_is_exact(tmp_path):
    train, val = make_items(16, 0), make_items(8, 1)
    # a learning rate of 0 never improves: the first check is best, patience 2 stops after check 3
    cfg = TrainConfig(max_steps=40, val_every_steps=2, batch_size=8, lr=0.0, plateau_on="none",
                      early_stop_patience=2, progress=False, cpu=True)
    result = fit(TinyRegressor(dropout=0.0), train, val, cfg, tmp_path / "a")
    assert result.stopped_early and result.epochs_run == 3 and result.best_step == 2
    # an interrupted run continues with the batches the uninterrupted one would have drawn
    full = TrainConfig(max_steps=6, val_every_steps=2, batch_size=4, lr=1e-2, plateau_on="none",
                       early_stop_patience=None, progress=False, cpu=True)

    def model():
        torch.manual_seed(0)  # the same initial weights (dropout's RNG state is resumed from the checkpoint)
        return TinyRegressor()

    once = fit(model(), train, val, full, tmp_path / "b")
    short = TrainConfig(**{**vars(full), "max_steps": 4})
    fit(model(), train, val, short, tmp_path / "c")
    resumed = fit(TinyRegressor(), train, val, full, tmp_path / "c")
    assert resumed.history[-1]["val_loss"] == pytest.approx(once.history[-1]["val_loss"], rel=1e-6)
