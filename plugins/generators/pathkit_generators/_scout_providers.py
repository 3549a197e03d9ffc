"""SCOUT's slide and concept inputs: providers chosen by name, computed from a case's tile features.

The paper feeds SCOUT a slide embedding from a slide encoder (TITAN in PathBench) and concept
scores from a vision-language model (GECKO concept priors from CONCH in PathBench). Neither is
available offline, so the defaults are computed from the tile features themselves
(docs/report-generation.md, "SCOUT", deviations):

- slide providers: `"mean"` (default) the mean tile feature, a fixed, parameter-free slide
  descriptor standing in for a frozen slide encoder; `"attention"` gated-attention pooling
  (Ilse et al. 2018), learned with the report loss;
- concept providers: `"prototypes"` (default) `num_concepts` learned unit directions in tile
  space, each tile scored by cosine similarity, the slide's concept vector the mean and the max
  of those scores over tiles (how common, and whether present at all); `"file"` the same scores
  against fixed concept directions read from a safetensors file (`concepts`, C x D), e.g. text
  tower embeddings of concept prompts when the tile features live in that model's image-text
  space (CONCH), which is the paper's setting.

Providers are chosen by registered name only: a configuration never names a module to import
(code comes in through installed plugins). A provider is an `nn.Module` with an integer
`out_dim` whose `forward(features (N, D), coords (N, 2) or None)` returns one (out_dim,) vector
per case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from pathkit_core.contracts import PathkitError


class MeanSlide(nn.Module):
    """The mean tile feature (no parameters)."""

    def __init__(self, feature_dim: int) -> None:
        super().__init__()
        self.out_dim = feature_dim

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        return features.mean(0)


class AttentionSlide(nn.Module):
    """Gated-attention pooling of the tiles (Ilse et al. 2018), trained end to end."""

    def __init__(self, feature_dim: int, hidden: int = 128) -> None:
        super().__init__()
        self.out_dim = feature_dim
        self.value = nn.Linear(feature_dim, hidden)
        self.gate = nn.Linear(feature_dim, hidden)
        self.score = nn.Linear(hidden, 1)

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        scores = self.score(torch.tanh(self.value(features)) * torch.sigmoid(self.gate(features)))
        return (torch.softmax(scores.float(), dim=0).to(features.dtype) * features).sum(0)


class ConceptScores(nn.Module):
    """Cosine scores of every tile against C concept directions, pooled to [mean, max] over tiles."""

    def __init__(self, directions: torch.Tensor, *, learned: bool) -> None:
        super().__init__()
        if learned:
            self.directions = nn.Parameter(directions)
        else:
            self.register_buffer("directions", directions)
        self.out_dim = 2 * int(directions.shape[0])

    def tile_scores(self, features: torch.Tensor) -> torch.Tensor:
        """(N, C) cosine similarity of each tile to each concept direction."""
        return F.normalize(features, dim=-1) @ F.normalize(self.directions.to(features.dtype), dim=-1).T

    def forward(self, features: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        scores = self.tile_scores(features)
        return torch.cat([scores.mean(0), scores.max(0).values])


def _prototypes(feature_dim: int, hp: Mapping[str, Any], state: Mapping[str, Any]) -> nn.Module:
    count = int(hp.get("num_concepts", 66))
    if count < 1:
        raise PathkitError(f"num_concepts must be at least 1, not {count}")
    return ConceptScores(F.normalize(torch.randn(count, feature_dim), dim=-1), learned=True)


def _concept_file(feature_dim: int, hp: Mapping[str, Any], state: Mapping[str, Any]) -> nn.Module:
    shape = state.get("shape")
    path = hp.get("concept_file")
    if shape:
        # rebuilding a checkpoint: the directions come back with its weights
        return ConceptScores(torch.zeros(*shape), learned=False)
    if not path:
        raise PathkitError("concept_provider 'file' needs concept_file: a safetensors file with a "
                           "`concepts` tensor (C x tile feature dim)")
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        directions = load_file(str(Path(path).expanduser()))["concepts"].float()
    except (OSError, SafetensorError, KeyError) as exc:
        raise PathkitError(f"concept file {path}: cannot read a `concepts` tensor ({exc})") from exc
    if directions.ndim != 2 or directions.shape[1] != feature_dim:
        raise PathkitError(f"concept file {path}: `concepts` is {tuple(directions.shape)}, expected "
                           f"(C, {feature_dim}) to match the tile features")
    return ConceptScores(directions, learned=False)


ProviderFactory = Callable[[int, Mapping[str, Any], Mapping[str, Any]], nn.Module]

SLIDE_PROVIDERS: dict[str, ProviderFactory] = {
    "mean": lambda d, hp, state: MeanSlide(d),
    "attention": lambda d, hp, state: AttentionSlide(d),
}
CONCEPT_PROVIDERS: dict[str, ProviderFactory] = {
    "prototypes": _prototypes,
    "file": _concept_file,
}


def make_provider(kind: str, name: str, feature_dim: int, hp: Mapping[str, Any],
                  state: Mapping[str, Any] | None = None) -> nn.Module:
    """The `kind` ("slide" or "concept") provider registered as `name`; nothing is ever imported
    from a name (a configuration names registered components only)."""
    table = SLIDE_PROVIDERS if kind == "slide" else CONCEPT_PROVIDERS
    if name not in table:
        raise PathkitError(f"unknown {kind} provider {name!r}; choose one of {', '.join(table)}")
    provider = table[name](feature_dim, hp, state or {})
    out_dim = getattr(provider, "out_dim", None)
    if not isinstance(provider, nn.Module) or not isinstance(out_dim, int) or out_dim < 1:
        raise PathkitError(f"{kind} provider {name!r} must be an nn.Module with a positive integer `out_dim`")
    return provider


def provider_state(provider: nn.Module) -> dict[str, Any]:
    """What a rebuild needs to recreate a provider before its weights are loaded."""
    if isinstance(provider, ConceptScores):
        return {"shape": list(provider.directions.shape)}
    return {}
