"""One vector per case for the heads over slide embeddings (coxnet, feature-retrieval): the mean of
its tile features, or with the `slide_encoder` hparam that slide encoder's embedding, computed once
per bag and kept in the feature store (pathkit_generators/slide_probe.py; docs/encoders.md,
"Slide embeddings in slide tasks").

torch is imported when vectors are made, not with the heads' modules."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import Generator

if TYPE_CHECKING:
    import torch

# the hparams that name the slide encoder (None: the mean of the tile features) and its checkpoint
SLIDE_ENCODER_HPARAMS: Mapping[str, Any] = {"slide_encoder": None, "slide_encoder_weights": None}


class SlideVectorHead(Generator):
    """A head fitted when built on one vector per case (`slide_vectors`), no training loop."""

    default_train: ClassVar[dict[str, Any]] = {"batch_size": 256}
    default_max_tiles: ClassVar[int | None] = None
    needs_fit: ClassVar[bool] = False

    def key_facts(self, hparams: dict[str, Any]) -> dict[str, Any]:
        return slide_key_facts(hparams)


def mean_vectors(items: Sequence[dict[str, Any]]) -> torch.Tensor:
    """(cases, D) float32 mean of each item's tile features."""
    import torch

    return torch.stack([torch.as_tensor(i["features"]).float().mean(dim=0) for i in items])


def slide_vectors(hp: Mapping[str, Any], train_items: Sequence[Any]) -> Callable[[Sequence[Any]], torch.Tensor]:
    """The function of items to their (cases, E) float32 vectors the hparams ask for; the slide
    encoder (when named) is checked against the training bags' feature files and loaded once."""
    name = hp.get("slide_encoder")
    if not name:
        return mean_vectors
    from pathkit_encoders.slide_store import embed_items

    from pathkit_core.plugins import get_component
    from pathkit_generators.slide_probe import check_items, store_folder

    encoder = get_component("slide-encoder", str(name))()
    check_items(encoder, train_items)
    store = store_folder(train_items)
    model = encoder.load("cpu", hp.get("slide_encoder_weights"))

    def vectors(items: Sequence[Any]) -> torch.Tensor:
        check_items(encoder, items)
        return embed_items(encoder, model, items, store)[0]

    return vectors


def slide_key_facts(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The slide encoder's part of the fit identity (its architecture and weights file), if any."""
    name = hp.get("slide_encoder")
    if not name:
        return {}
    from pathkit_generators.slide_probe import encoder_facts

    return encoder_facts(str(name), hp.get("slide_encoder_weights"))
