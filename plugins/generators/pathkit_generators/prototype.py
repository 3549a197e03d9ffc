"""prototype: SimpleShot nearest class mean over centred, L2-normalised patch features (UNI)."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, TaskModel
from pathkit_tasks import TASK_PATCH_CLASSIFICATION


class NearestPrototype(Generator):
    """Each class's prototype is the mean of its training patches' features (centred by the train
    mean, L2-normalised); a patch takes the class of the nearest prototype by L2 distance.
    SimpleShot gives only that label; the probabilities are a softmax over negative distances
    with `temperature` (they order cases for AUROC; the argmax is the nearest prototype)."""

    name: ClassVar[str] = "prototype"
    description: ClassVar[str] = "SimpleShot nearest class mean on centred, L2-normalised patch features"
    tasks: ClassVar[tuple[str, ...]] = (TASK_PATCH_CLASSIFICATION,)
    default_hparams: ClassVar[dict[str, Any]] = {"centre": True, "temperature": 0.05, "n_classes": None}
    default_train: ClassVar[dict[str, Any]] = {"batch_size": 4096}
    default_max_tiles: ClassVar[int | None] = None
    needs_fit: ClassVar[bool] = False

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch

        from pathkit_generators._patch import PatchHead, centre_normalise, n_classes, training_set

        hp = self.hparams(spec.hparams)
        feats, labels = training_set(spec, self.name)
        k = n_classes(spec, labels, self.name)
        mean = feats.mean(dim=0, keepdim=True) if hp["centre"] else None
        normed = centre_normalise(feats, mean)
        counts = torch.bincount(labels, minlength=k).clamp(min=1).unsqueeze(1).float()
        prototypes = torch.zeros(k, normed.shape[1]).index_add_(0, labels, normed) / counts
        present = torch.bincount(labels, minlength=k) > 0
        temperature = float(hp["temperature"])

        class FittedPrototypes(PatchHead):
            name = "prototype"

            def __init__(self) -> None:
                super().__init__()
                # buffers, so that the prototypes move with the model to the prediction device
                self.register_buffer("mean", mean if mean is not None else torch.zeros(1, normed.shape[1]))
                self.register_buffer("prototypes", prototypes)
                self.register_buffer("present", present)

            def probabilities(self, features: torch.Tensor) -> torch.Tensor:
                dist = torch.cdist(centre_normalise(features, self.mean), self.prototypes)
                dist[:, ~self.present] = torch.inf  # a class without training patches has no prototype
                return (-dist / temperature).softmax(dim=1)

        return FittedPrototypes()


@hookimpl
def register_generators(register):
    register(NearestPrototype)
