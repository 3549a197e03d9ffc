"""A few optimiser steps of a generator's task model on one collated batch, for the heads' tests."""

from __future__ import annotations


def fit_batch(model, batch, optimiser, steps: int) -> list[float]:
    """`steps` steps of `model.training_step(batch)` with `optimiser`; returns the loss before each
    step and leaves the model in eval mode."""
    losses = []
    model.train()
    for _ in range(steps):
        loss = model.training_step(batch)
        losses.append(float(loss.detach()))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    return losses
