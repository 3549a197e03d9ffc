"""abmil-cox: attention MIL over tile features trained with the Cox partial likelihood (Breslow
ties, torchsurv's loss); its single output is the log relative hazard, the risk (docs/survival.md)."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec, PathkitError, TaskModel
from pathkit_generators._abmil_survival import AttentionSurvivalHead


class AttentionCox(AttentionSurvivalHead):
    """The CLAM-style gated-attention MIL network (`abmil`, one output) with the negative Cox
    partial log-likelihood over each batch of bags (Breslow's handling of tied event times). The
    partial likelihood compares cases within a batch, so a batch holds many bags (`batch_size`);
    a batch without an event, or of one bag, contributes no gradient (`batch_size` 1 trains nothing)."""

    name: ClassVar[str] = "abmil-cox"
    description: ClassVar[str] = "gated-attention MIL with the Cox partial likelihood (Breslow ties; torchsurv)"
    default_hparams: ClassVar[dict[str, Any]] = {"size": "small", "dropout": 0.25, "ties": "breslow",
                                                 "max_tiles": 4096}

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._survival_mil import CoxMIL

        hp = self.checked_hparams(spec)
        if hp["ties"] not in ("breslow", "efron"):
            raise PathkitError(f"{self.name}: hparam ties={hp['ties']!r}: choose breslow or efron")
        return CoxMIL(spec.feature_dim, size=str(hp["size"]), dropout=float(hp["dropout"]), ties=str(hp["ties"]),
                      max_tiles=hp["max_tiles"])


@hookimpl
def register_generators(register):
    register(AttentionCox)
