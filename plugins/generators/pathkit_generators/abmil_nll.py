"""abmil-nll: attention MIL over tile features with the discrete-time negative log-likelihood over
quantile bins of the train event times (Zadeh & Schmid 2021; PORPOISE/MCAT's loss;
docs/survival.md). Predicts the risk (-sum of the survival curve) and the curve itself."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec, PathkitError, TaskModel
from pathkit_generators._abmil_survival import AttentionSurvivalHead


class AttentionNLL(AttentionSurvivalHead):
    """The gated-attention MIL network (`abmil`) with `n_bins` hazard outputs, trained with the
    discrete-time NLL (`alpha` weighs the event terms up, as PORPOISE's `alpha_surv`). The bin
    edges come from the train split's event times and are saved with the checkpoint."""

    name: ClassVar[str] = "abmil-nll"
    description: ClassVar[str] = "gated-attention MIL with the discrete-time survival NLL over quantile time bins"
    default_hparams: ClassVar[dict[str, Any]] = {"size": "small", "dropout": 0.25, "n_bins": 4, "alpha": 0.0,
                                                 "max_tiles": 4096}

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._survival_nll import DiscreteTimeMIL, quantile_edges
        from pathkit_tasks.survival.target import parse_target

        hp = self.checked_hparams(spec)
        n_bins = int(hp["n_bins"])
        if n_bins < 2:
            raise PathkitError(f"{self.name}: n_bins={n_bins}; at least 2 time bins")
        if not 0.0 <= float(hp["alpha"]) <= 1.0:
            raise PathkitError(f"{self.name}: alpha={hp['alpha']!r} must lie in [0, 1]")
        saved = (spec.state or {}).get("edges")
        if saved:
            edges = [float(v) for v in saved]
        else:
            pairs = [parse_target(t) for t in spec.train_targets if t is not None]
            if not pairs:
                raise PathkitError(f"{self.name}: no train survival targets to set the time bins from")
            edges = quantile_edges([p[0] for p in pairs], [p[1] for p in pairs], n_bins)
        return DiscreteTimeMIL(spec.feature_dim, edges=edges, size=str(hp["size"]), dropout=float(hp["dropout"]),
                               alpha=float(hp["alpha"]), max_tiles=hp["max_tiles"])


@hookimpl
def register_generators(register):
    register(AttentionNLL)
