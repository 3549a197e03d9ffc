"""Batching of variable-length tile bags, shared by the report generators and the MIL heads."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from pathkit_core.contracts import PathkitError


def pad_bags(bags: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack (N_i, ...) bags into a zero-padded (B, N_max, ...) tensor and a (B, N_max) mask that
    is True on real rows. Bags must agree on their trailing shape (the feature width)."""
    if not bags:
        raise PathkitError("cannot batch zero cases")
    trailing = {tuple(b.shape[1:]) for b in bags}
    if len(trailing) > 1:
        raise PathkitError(f"bags of different feature widths in one batch: {sorted(trailing)}")
    width = max(int(b.size(0)) for b in bags)
    out = bags[0].new_zeros(len(bags), width, *bags[0].shape[1:])
    mask = torch.zeros(len(bags), width, dtype=torch.bool, device=bags[0].device)
    for i, bag in enumerate(bags):
        out[i, : bag.size(0)] = bag
        mask[i, : bag.size(0)] = True
    return out, mask
