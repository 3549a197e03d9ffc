"""The discrete-time survival model (`abmil-nll`): bags in, one hazard logit per time bin out,
trained with the negative log-likelihood of Zadeh & Schmid (2021), the loss of PORPOISE and MCAT.

Bins: the quantiles of the train split's event times (censored cases do not set them), the first
edge at 0 and the last at infinity; a case's bin is the one its time falls in. With hazards
h_j = sigmoid(logit_j) and S_j = prod_{i <= j} (1 - h_i) (S_{-1} = 1), a case in bin y contributes
  event:    -log S_{y-1} - log h_y
  censored: -log S_y
and the loss is (1 - alpha) * (all terms) + alpha * (the event terms), averaged over the batch. The
risk is -sum_j S_j (PORPOISE's), higher = earlier event; the survival curve S_j at each bin's end
is predicted beside it (the integrated Brier score reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from pathkit_core.contracts import PathkitError
from pathkit_generators._mil import AttentionMIL
from pathkit_generators._survival_mil import CoxMIL

EPS = 1e-7


def quantile_edges(times: Sequence[float], events: Sequence[int], n_bins: int) -> list[float]:
    """n_bins + 1 bin edges: 0, the inner quantiles of the event times, infinity."""
    import numpy as np

    observed = np.asarray([t for t, e in zip(times, events, strict=True) if e], dtype=np.float64)
    if observed.size < n_bins:
        raise PathkitError(f"abmil-nll: {observed.size} event(s) in the train split for {n_bins} time bins; "
                           "lower n_bins or add cases with events")
    inner = np.quantile(observed, np.linspace(0, 1, n_bins + 1)[1:-1])
    if len(set(inner.tolist())) < len(inner):
        raise PathkitError(f"abmil-nll: the train event times have fewer than {n_bins} distinct quantiles "
                           f"({sorted(set(inner.tolist()))}); lower n_bins")
    return [0.0, *[float(v) for v in inner], float("inf")]


def time_bins(time: torch.Tensor, edges: Sequence[float]) -> torch.Tensor:
    """The bin index of each time: j with edges[j] <= t < edges[j + 1]."""
    inner = torch.as_tensor(list(edges[1:-1]), dtype=time.dtype, device=time.device)
    return torch.bucketize(time, inner, right=True)


def discrete_nll(logits: torch.Tensor, bins: torch.Tensor, event: torch.Tensor, alpha: float) -> torch.Tensor:
    """The mean negative log-likelihood of the discrete-time model (module docstring)."""
    hazards = torch.sigmoid(logits)
    survival = torch.cumprod(1 - hazards, dim=1)
    padded = torch.cat([torch.ones_like(survival[:, :1]), survival], dim=1)  # S_{-1} = 1
    y = bins.long().unsqueeze(1)
    e = event.float().unsqueeze(1)
    before = torch.gather(padded, 1, y).clamp(min=EPS)
    at = torch.gather(hazards, 1, y).clamp(min=EPS)
    after = torch.gather(padded, 1, y + 1).clamp(min=EPS)
    uncensored = -e * (torch.log(before) + torch.log(at))
    censored = -(1 - e) * torch.log(after)
    return ((1 - alpha) * (censored + uncensored) + alpha * uncensored).mean()


class DiscreteTimeMIL(CoxMIL):
    """`AttentionMIL` (abmil variant) with one hazard logit per bin; `CoxMIL`'s bags and tile cap."""

    def __init__(self, feature_dim: int, *, edges: Sequence[float], size: str, dropout: float, alpha: float,
                 max_tiles: int | None) -> None:
        super().__init__(feature_dim, size=size, dropout=dropout, ties="breslow", max_tiles=max_tiles)
        self.edges = [float(v) for v in edges]
        self.alpha = float(alpha)
        self.net = AttentionMIL(feature_dim, len(self.edges) - 1, variant="abmil", size=size, dropout=dropout)
        self.config = {"size": size, "dropout": dropout, "alpha": alpha, "max_tiles": max_tiles,
                       "edges": [v if v != float("inf") else "inf" for v in self.edges]}

    def logits(self, batch: dict[str, Any]) -> torch.Tensor:
        out, _, _ = self.net(batch["features"], batch["mask"])
        return out.float()

    def training_step(self, batch: dict[str, Any]) -> torch.Tensor:
        if not batch["known"]:
            raise PathkitError("abmil-nll: a training batch holds a case without its survival target")
        logits = self.logits(batch)
        bins = time_bins(batch["time"].to(logits.device), self.edges)
        return discrete_nll(logits, bins, batch["event"].to(logits.device), self.alpha)

    def predict(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        survival = torch.cumprod(1 - torch.sigmoid(self.logits(batch)), dim=1).detach().cpu()
        risk = -survival.sum(dim=1)
        ends = [*self.edges[1:-1], None]  # the last bin has no end
        return [{"risk": float(r), "survival": [round(float(s), 6) for s in row], "bin_ends": ends}
                for r, row in zip(risk, survival, strict=True)]
