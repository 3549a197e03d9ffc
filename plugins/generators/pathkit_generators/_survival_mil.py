"""The attention-MIL Cox model (`abmil-cox`): bags in, Cox partial-likelihood loss / risk out."""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from pathkit_core.contracts import PathkitError
from pathkit_generators._bags import pad_bags
from pathkit_generators._mil import AttentionMIL, _case_seed


class CoxMIL(nn.Module):
    """`AttentionMIL` (abmil variant, one output: the log relative hazard) trained with torchsurv's
    negative partial log-likelihood. `max_tiles` caps a bag (a random subset while training, a
    subset seeded by the case id while predicting)."""

    def __init__(self, feature_dim: int, *, size: str, dropout: float, ties: str, max_tiles: int | None) -> None:
        super().__init__()
        self.net = AttentionMIL(feature_dim, 1, variant="abmil", size=size, dropout=dropout)
        self.feature_dim = feature_dim
        self.ties = ties
        self.max_tiles = None if max_tiles is None else int(max_tiles)
        self.config = {"size": size, "dropout": dropout, "ties": ties, "max_tiles": max_tiles}

    def _keep(self, case_id: str, n: int) -> torch.Tensor:
        if self.max_tiles is None or n <= self.max_tiles:
            return torch.arange(n)
        g = None if self.training else torch.Generator().manual_seed(_case_seed(case_id))
        return torch.randperm(n, generator=g)[: self.max_tiles].sort().values

    def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        from pathkit_tasks.survival.target import parse_target

        bags, times, events, known = [], [], [], []
        for item in items:
            feats = torch.as_tensor(item["features"])
            if feats.ndim != 2 or feats.shape[0] == 0 or feats.shape[1] != self.feature_dim:
                raise PathkitError(f"abmil-cox: case {item['case_id']!r} has features of shape "
                                   f"{tuple(feats.shape)}; the model takes (tiles, {self.feature_dim})")
            bags.append(feats[self._keep(str(item["case_id"]), int(feats.shape[0]))].float())
            target = item.get("target")
            time, event = parse_target(target) if target is not None else (0.0, 0)
            times.append(time)
            events.append(event)
            known.append(target is not None)
        features, mask = pad_bags(bags)
        return {"case_ids": [str(i["case_id"]) for i in items], "features": features, "mask": mask,
                "time": torch.tensor(times, dtype=torch.float32), "event": torch.tensor(events, dtype=torch.bool),
                "known": all(known)}

    def log_hazard(self, batch: dict[str, Any]) -> torch.Tensor:
        logits, _, _ = self.net(batch["features"], batch["mask"])
        return logits[:, 0].float()

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        from torchsurv.loss.cox import neg_partial_log_likelihood  # imports torchmetrics: ~7 s, once

        log_hz = self.log_hazard(batch)
        event = batch["event"].to(log_hz.device)
        if not batch["known"]:
            raise PathkitError("abmil-cox: a training batch holds a case without its survival target")
        if not bool(event.any()) or log_hz.numel() < 2:
            # no event, or one bag (its risk set is itself): the partial likelihood is identically 0
            return (log_hz * 0.0).sum()
        # summed over the events, then divided by their number (torchsurv's "mean" divides by the
        # number of distinct event times instead)
        with warnings.catch_warnings():  # "ties detected": the tie method is chosen, not a surprise
            warnings.simplefilter("ignore", UserWarning)
            total = neg_partial_log_likelihood(log_hz, event, batch["time"].to(log_hz.device),
                                               ties_method=self.ties, reduction="sum")
        return total / event.sum()

    def predict(self, batch: dict[str, Any]) -> list[dict[str, float]]:
        return [{"risk": float(r)} for r in self.log_hazard(batch).detach().cpu()]

    def export_state(self) -> dict[str, Any]:
        return dict(self.config)
