"""The builder of the slide encoders: a row of `pathkit_encoders.slide_table` made a `SlideEncoder`.

`TableSlideEncoder` builds the row's module (random from its seed, or with the checkpoint found
through the same resolution order as the patch encoders' weights, sha256-checked), checks that
given patch features fit it, and embeds one slide. `slide_encoder_class(spec, ...)` makes the
registered class of a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import PathkitError, SlideEncoder
from pathkit_encoders._vit import build_on, hook_registrar, resolve_reference, row_class, seeded
from pathkit_encoders.slide_table import SlideSpec

if TYPE_CHECKING:
    import torch
    from torch import nn

_CONTRACT_FIELDS = ("name", "description", "patch_encoder", "patch_dim", "embed_dim", "tile_spec", "weights",
                    "parameters", "precision")


def slide_encoder_class(spec: SlideSpec, module: str, class_name: str) -> type[TableSlideEncoder]:
    return row_class(spec, TableSlideEncoder, _CONTRACT_FIELDS, "pathkit_encoders.slide_table", module, class_name)


def slide_registrar(*classes: type[SlideEncoder]) -> Callable[..., None]:
    return hook_registrar("register_slide_encoders", classes)


class TableSlideEncoder(SlideEncoder):
    """A slide encoder described by one `SlideSpec`. `arch_overrides` change the module's keyword
    arguments (a smaller model of the same family in tests); such a model needs an explicit
    checkpoint."""

    spec: ClassVar[SlideSpec]

    def __init__(self, arch_overrides: Mapping[str, Any] | None = None) -> None:
        self.arch_overrides = dict(arch_overrides or {})
        self.weights_sha256 = ""

    def architecture(self) -> dict[str, Any]:
        return {**self.spec.arch, **self.arch_overrides}

    def architecture_label(self) -> str:
        label = f"{self.name} ({self.spec.module.lstrip('@').rpartition('.')[2]})"
        if self.arch_overrides:
            label += " with overrides " + ", ".join(f"{k}={v}" for k, v in sorted(self.arch_overrides.items()))
        return label

    @property
    def input_dim(self) -> int | None:
        return self.arch_overrides.get("in_dim", self.patch_dim)

    @property
    def output_dim(self) -> int:
        key = self.spec.feature_key
        return int(self.arch_overrides.get(key, self.embed_dim)) if key else self.embed_dim

    def build(self, device: str = "cpu") -> nn.Module:
        with build_on(device):
            return resolve_reference(self.spec.module)(**self.architecture())

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.build("meta").parameters())

    def feature_problem(self, encoder: str, feature_dim: int, tile_px: int | None = None,
                        mpp: float | None = None) -> str | None:
        if self.arch_overrides and "in_dim" in self.arch_overrides:  # a test-sized model: width only
            return None if feature_dim == self.input_dim else (
                f"slide encoder {self.name!r} reads {self.input_dim}-d patch features, these are {feature_dim}-d")
        return super().feature_problem(encoder, feature_dim, tile_px, mpp)

    def load(self, device: str = "cpu", weights_path: str | Path | None = None, *,
             allow_download: bool | None = None) -> nn.Module:
        """The eval-mode module: from the checkpoint when one is given or found, else (a row
        without weights, the mean baseline, or a test) from the row's seed."""
        if weights_path is None and (self.weights is None or self.arch_overrides):
            with seeded(self.spec.random_init_seed):
                module = self.build("cpu")
            self.weights_sha256 = f"random-init:seed={self.spec.random_init_seed}"
        else:
            module = self._from_checkpoint(weights_path, allow_download)
        module.requires_grad_(False)
        return module.to(device).eval()

    def _from_checkpoint(self, weights_path: str | Path | None, allow_download: bool | None) -> nn.Module:
        from pathkit_core.features import weights as W
        from pathkit_sdk.checkpoints import load_state_dict_checked, read_state_dict, verify_sha256

        path = W.resolve_weights(type(self), weights_path, allow_download=allow_download)
        expected = self.weights.sha256 if (self.weights and not self.arch_overrides) else None
        sha = verify_sha256(path, expected, self.name)
        state = read_state_dict(path, wrappers=self.spec.checkpoint_wrappers)
        module = self.build("cpu")
        if self.spec.adapt_state_dict:
            state = self.spec.adapt_state_dict(state, module)
        load_state_dict_checked(module, state, source=path, architecture=self.architecture_label())
        self.weights_sha256 = sha
        return module

    def identity(self) -> str:
        """Name, architecture and weights: call after `load` (the weights' sha256 is read there)."""
        if not self.weights_sha256:
            raise PathkitError(f"slide encoder {self.name!r}: its identity is known once it is loaded")
        return f"{self.architecture_label()}|weights={self.weights_sha256}"

    def embed(self, model: nn.Module, features: torch.Tensor, coords: torch.Tensor | None,
              tile_px_level0: float | None = None) -> torch.Tensor:
        """One slide's embedding (embed_dim,) in float32. `tile_px_level0` (the feature file's
        record) reaches the modules that place tiles on a grid by it (TITAN)."""
        import torch

        x = features.to(torch.float32).unsqueeze(0)
        c = None if coords is None else coords.to(torch.float32).unsqueeze(0)
        extra = {"tile_px_level0": tile_px_level0} if self.spec.reads_tile_size else {}
        with torch.inference_mode():
            return model(x, c, **extra)[0].float()

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        out.update(module=cls.spec.module.lstrip("@"), architecture=dict(cls.spec.arch))
        return out
