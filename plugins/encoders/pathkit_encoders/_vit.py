"""The one builder of the ViT tile encoders: a row of `pathkit_encoders.table` made an `Encoder`.

`ViTTileEncoder` reads everything from its `spec` (an `EncoderSpec`): the timm architecture, the
module built around the trunk, the pooling, the preprocessing and the `PretrainedWeights` record.
`encoder_class(spec, module, class_name)` makes the registered class of a row. Finding, reading
and fitting the checkpoint is done once, by `pathkit_core.features.weights` and `pathkit_sdk.checkpoints`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Encoder, PathkitError
from pathkit_encoders.table import WRAPPERS, EncoderSpec

if TYPE_CHECKING:
    import numpy as np
    import torch
    from torch import nn


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Deterministic parameter initialisation without disturbing the caller's RNG state."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def resolve_reference(value: Any) -> Any:
    """"@torch.nn.SiLU" -> the class torch.nn.SiLU; anything else unchanged."""
    if not (isinstance(value, str) and value.startswith("@")):
        return value
    import importlib

    module, _, attr = value[1:].rpartition(".")
    return getattr(importlib.import_module(module), attr)


def magnification(mpp: float) -> str:
    """The objective magnification a resolution is conventionally called (10 / mpp: 0.5 um/px is
    20x, 0.25 is 40x), as the papers state their tile settings."""
    return f"{10.0 / mpp:g}x"


def build_on(device: str) -> contextlib.AbstractContextManager[Any]:
    """Build a module on `device`; "meta" allocates nothing (shapes only)."""
    import torch

    return torch.device(device)


# The `Encoder` contract attributes a row states (EncoderSpec fields of the same names).
_CONTRACT_FIELDS = ("name", "description", "embed_dim", "tile_spec", "precision", "weights", "interpolation",
                    "resize_px", "crop_px", "joint_space", "is_pathology_model", "random_init_seed")


def row_class(spec: Any, base: type, fields: tuple[str, ...], table: str, module: str, class_name: str) -> type:
    """The registered class of one row of `table` (a subclass of `base` with the row's `fields` as
    its contract attributes), defined as `module.class_name` so that it pickles and reads like a
    written class."""
    attrs: dict[str, Any] = {field: getattr(spec, field) for field in fields}
    attrs.update(spec=spec, __module__=module, __qualname__=class_name,
                 __doc__=f"{spec.description} (row {spec.name!r} of {table}).")
    return type(class_name, (base,), attrs)


def encoder_class(spec: EncoderSpec, module: str, class_name: str) -> type[ViTTileEncoder]:
    """The registered `Encoder` class of one row of `pathkit_encoders.table`."""
    return row_class(spec, ViTTileEncoder, _CONTRACT_FIELDS, "pathkit_encoders.table", module, class_name)


def hook_registrar(hook: str, classes: tuple[type, ...]) -> Callable[..., None]:
    """A plugin module's registration hook `hook` (assigned to that name) registering `classes`."""

    def register_classes(register: Callable[[type], Any]) -> None:
        for cls in classes:
            register(cls)

    register_classes.__name__ = register_classes.__qualname__ = hook
    return hookimpl(register_classes)


def registrar(*classes: type[Encoder]) -> Callable[..., None]:
    """A plugin module's `register_encoders` hook registering `classes`."""
    return hook_registrar("register_encoders", classes)


class ViTTileEncoder(Encoder):
    """A tile encoder whose backbone is a timm VisionTransformer, described by one table row.

    `arch_overrides` replaces architecture keyword arguments, of the trunk or of the tower's
    `pooler` (e.g. depth=2, embed_dim=64 in tests): the model is then of the same family but not
    the published one, and cannot load the published checkpoint.
    """

    spec: ClassVar[EncoderSpec]
    # `transform` is plain torch on the batch's device: on a GPU the extraction runner sends
    # uint8 tiles there and resamples and normalises them on the device.
    transform_on_device: ClassVar[bool] = True

    def __init__(self, arch_overrides: Mapping[str, Any] | None = None) -> None:
        self.arch_overrides: dict[str, Any] = dict(arch_overrides or {})
        self.weights_path: Path | None = None
        self.weights_sha256: str = ""

    # ------------------------------------------------------------------ architecture
    def split_architecture(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(timm trunk keyword arguments, tower keyword arguments), overrides applied, "@module.Name"
        references resolved to the objects."""
        trunk = {k: resolve_reference(v) for k, v in self.spec.arch.items()}
        pooler: dict[str, Any] = dict(self.spec.pooler)
        for key, value in self.arch_overrides.items():
            (pooler if key in pooler else trunk)[key] = value
        return self.sized_for_input(trunk), pooler

    def architecture(self) -> dict[str, Any]:
        trunk, pooler = self.split_architecture()
        return {**trunk, **pooler}

    def sized_for_input(self, arch: dict[str, Any]) -> dict[str, Any]:
        """`arch` with timm's `dynamic_img_size` on only where the model input is not the size
        its position grid was built for (CONCH v1.5: 448 px on a 224 px grid).

        The public loaders build most of these encoders with `dynamic_img_size=True`; at the
        native input size that changes no number (tested per encoder) but costs a layout change
        and a position-embedding check per forward pass, so pathkit builds the fixed-size model.
        An explicit `dynamic_img_size` (an override) is kept; a backbone that is not a timm
        VisionTransformer (ResNet, Swin) takes no such argument and gets none.
        """
        if "dynamic_img_size" not in arch and self.spec.timm_name.startswith("vit_"):
            img_size = arch.get("img_size", 224)
            native = tuple(img_size) if isinstance(img_size, (tuple, list)) else (img_size, img_size)
            arch = {**arch, "dynamic_img_size": native != (self.input_px, self.input_px)}
        return arch

    def architecture_label(self) -> str:
        label = f"{self.name} ({self.spec.timm_name})"
        if self.arch_overrides:
            label += " with overrides " + ", ".join(f"{k}={v}" for k, v in sorted(self.arch_overrides.items()))
        return label

    def build_backbone(self, device: str = "cpu") -> nn.Module:
        """The module whose state dict is the checkpoint, randomly initialised (or on meta): the
        timm trunk, or the row's tower built around it."""
        import timm

        trunk_args, pooler = self.split_architecture()
        with build_on(device):
            trunk = timm.create_model(self.spec.timm_name, pretrained=False, **trunk_args)
            return resolve_reference(self.spec.tower)(trunk, **pooler) if self.spec.tower else trunk

    def wrap(self, backbone: nn.Module) -> nn.Module:
        """The module mapping a normalised batch (B, 3, H, W) to embeddings (B, D)."""
        wrapper = None if self.spec.tower else WRAPPERS[self.spec.pooling]
        return resolve_reference(wrapper)(backbone) if wrapper else backbone

    def adapt_state_dict(
        self, state_dict: dict[str, torch.Tensor], backbone: nn.Module
    ) -> dict[str, torch.Tensor]:
        """Map a published checkpoint's key layout onto the backbone's (the row's adapter; identity
        without one)."""
        adapt = self.spec.adapt_state_dict
        return adapt(state_dict, backbone) if adapt else state_dict

    @property
    def feature_dim(self) -> int:
        """Output dimension of this instance (differs from `embed_dim` when an override sets the
        row's feature width)."""
        if self.spec.feature_key not in self.arch_overrides:
            return self.embed_dim
        width = int(self.arch_overrides[self.spec.feature_key])
        return 2 * width if self.spec.pooling == "cls+patch-mean" else width

    def parameter_count(self) -> int:
        """Parameters of the full model, counted on the meta device (no memory, no weights)."""
        model = self.wrap(self.build_backbone("meta"))
        return sum(p.numel() for p in model.parameters())

    # ------------------------------------------------------------------ weights
    def ships_checkpoint(self) -> bool:
        w = self.weights
        return w is not None and bool(w.hf_hub_id or w.filename)

    def load(
        self,
        device: str = "cpu",
        weights_path: str | Path | None = None,
        *,
        allow_download: bool | None = None,
    ) -> nn.Module:
        """The eval-mode encoder with its checkpoint loaded (resolution order: docs/encoders.md).

        An encoder without a published checkpoint (tiny-vit) is built from its fixed seed
        unless a checkpoint path is given.
        """
        from pathkit_core.features import weights as W
        from pathkit_sdk.checkpoints import load_state_dict_checked, read_state_dict, verify_sha256

        if weights_path is None and not self.ships_checkpoint():
            with seeded(self.random_init_seed):
                backbone = self.build_backbone("cpu")
            self.weights_path, self.weights_sha256 = None, f"random-init:seed={self.random_init_seed}"
        else:
            if self.arch_overrides and weights_path is None:
                raise PathkitError(
                    f"{self.architecture_label()} is not the published architecture; give an explicit "
                    "checkpoint path for it"
                )
            path = W.resolve_weights(type(self), weights_path, allow_download=allow_download)
            expected = self.weights.sha256 if (self.weights and not self.arch_overrides) else None
            sha = verify_sha256(path, expected, self.name)
            state = read_state_dict(path, wrappers=self.spec.checkpoint_wrappers)
            backbone = self.build_backbone(self.spec.load_on)
            state = self.adapt_state_dict(state, backbone)
            load_state_dict_checked(backbone, state, source=path, architecture=self.architecture_label())
            self.weights_path, self.weights_sha256 = path, sha
        model = self.wrap(backbone)
        model.requires_grad_(False)
        return model.to(device).eval()

    def random_checkpoint(self, path: str | Path, *, seed: int = 0, dtype: str = "float32") -> Path:
        """Save a randomly initialised checkpoint of this architecture as safetensors (for tests).

        It is laid out exactly like the published checkpoint, so it loads through `load`.
        """
        import torch
        from safetensors.torch import save_file

        from pathkit_core.workspace import atomic_path

        with seeded(seed):
            backbone = self.build_backbone("cpu")
        state = {
            k: v.detach().to(getattr(torch, dtype)).contiguous().clone() if v.is_floating_point()
            else v.detach().contiguous().clone()
            for k, v in self.export_state_dict(backbone).items()
        }
        del backbone
        with atomic_path(path) as tmp:
            save_file(state, str(tmp), metadata={"format": "pt", "architecture": self.architecture_label()})
        return Path(path)

    def export_state_dict(self, backbone: nn.Module) -> dict[str, torch.Tensor]:
        """The backbone's state dict in the published checkpoint's key layout."""
        return backbone.state_dict()

    # ------------------------------------------------------------------ preprocessing
    @property
    def mean(self) -> tuple[float, float, float]:
        return self.weights.mean

    @property
    def std(self) -> tuple[float, float, float]:
        return self.weights.std

    def transform(self, tiles: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 tiles (B, H, W, 3) or one tile (H, W, 3) -> normalised float batch (B, 3, S, S).

        Resize the shorter side to `resize_px` (antialiased, like torchvision's Resize on PIL
        images), centre-crop to `crop_px` when set, scale to [0, 1], normalise by mean/std.
        """
        import torch
        from torchvision.transforms.v2 import InterpolationMode
        from torchvision.transforms.v2 import functional as TF

        batch = torch.as_tensor(tiles)
        if batch.ndim == 3:
            batch = batch.unsqueeze(0)
        if batch.ndim != 4 or batch.shape[-1] != 3:
            raise PathkitError(f"{self.name}: tiles must be (B, H, W, 3) RGB, got shape {tuple(batch.shape)}")
        if batch.dtype != torch.uint8:
            raise PathkitError(f"{self.name}: tiles must be uint8, got {batch.dtype}")
        batch = batch.permute(0, 3, 1, 2)
        if min(batch.shape[-2:]) != self.resize_px:
            mode = InterpolationMode.BICUBIC if self.interpolation == "bicubic" else InterpolationMode.BILINEAR
            batch = TF.resize(batch, [self.resize_px], interpolation=mode, antialias=True)
        if self.crop_px is not None and tuple(batch.shape[-2:]) != (self.crop_px, self.crop_px):
            batch = TF.center_crop(batch, [self.crop_px, self.crop_px])
        out = batch.to(torch.float32).div_(255.0)
        mean = torch.tensor(self.mean, dtype=torch.float32, device=out.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32, device=out.device).view(1, 3, 1, 1)
        return out.sub_(mean).div_(std).contiguous()

    @property
    def input_px(self) -> int:
        return self.crop_px if self.crop_px is not None else self.resize_px

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        spec = cls.spec
        out.update(
            timm_model=spec.timm_name,
            architecture={k: v.lstrip("@") if isinstance(v, str) else v for k, v in spec.arch.items()},
            pooling=spec.pooling,
            parameters=spec.parameters,
            magnification=magnification(cls.tile_spec.mpp),
            preprocessing={
                "resize": cls.resize_px,
                "center_crop": cls.crop_px,
                "interpolation": cls.interpolation,
            },
        )
        return out
