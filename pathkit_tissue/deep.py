"""Learned tissue segmenters: one runner over a table of published models (`SPECS`), each a
record of its architecture, resolution, normalisation and tissue rule (docs/wsi.md, "Deep tissue
segmenters", has every fact and its source).

- `hest`: HEST's DeepLabV3 over ResNet-50 (torchvision's `deeplabv3_resnet50`, head of 2 classes,
  no auxiliary head), 512-px patches at 1 um/px, ImageNet normalisation, tissue where the softmax
  of class 1 exceeds 0.5;
- `grandqc`: GrandQC's tissue detector, UNet++ over `timm-efficientnet-b0`
  (`segmentation-models-pytorch`), 512-px patches at 10 um/px, JPEG quality 80 before ImageNet
  normalisation, tissue where class 0 wins.

Weights are found like an encoder's (`--segmenter-weights`, `$PATHKIT_WEIGHTS_DIR/<name>/`, the local
Hugging Face cache), never downloaded; their sha256 is the segmenter's identity in each manifest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pathkit_core.contracts import PathkitError, PretrainedWeights, TissueSegmenter

if TYPE_CHECKING:
    import numpy as np
    import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# Options a user may give (`--segmenter-option KEY=VALUE`, a run's [tiling.segmenter_options]).
OPTIONS = ("weights", "batch_size", "device", "threshold", "max_px")


@dataclass(frozen=True)
class DeepSegmenterSpec:
    """A published tissue model: how it is built, what it reads and how its output is tissue.

    `tissue_rule` is "softmax-class-1" (tissue where P(class 1) > threshold) or "argmax-class-0"
    (tissue where class 0 has the highest probability and at least the threshold).
    """

    architecture: str
    build: Callable[[], Any]
    input_mpp: float
    patch_px: int
    weights: PretrainedWeights
    tissue_rule: str
    jpeg_quality: int | None = None
    # checkpoint keys: this prefix removed, keys containing `drop_keys_with` left out
    strip_prefix: str = ""
    drop_keys_with: str | None = None
    requires: tuple[str, str] | None = None  # (module, pip extra) beyond torch and torchvision
    half_on_gpu: bool = False


def build_hest_deeplabv3() -> Any:
    """DeepLabV3-ResNet50 as HEST builds it: torchvision's model with its last classifier conv
    replaced by a 256 -> 2 1x1 conv and no auxiliary head (39,633,986 parameters)."""
    from torchvision.models.segmentation import deeplabv3_resnet50

    return deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=2, aux_loss=False)


def build_grandqc_unetpp() -> Any:
    """GrandQC's tissue detector: UNet++ over timm-efficientnet-b0, 2 classes, no activation
    (6,569,726 parameters); the encoder's ImageNet weights are replaced by the checkpoint, so none
    is fetched."""
    import warnings

    import segmentation_models_pytorch as smp

    with warnings.catch_warnings():
        # smp deprecates its `timm-` encoders for `tu-` ones, whose keys differ from GrandQC's checkpoint
        warnings.simplefilter("ignore", DeprecationWarning)
        return smp.UnetPlusPlus(encoder_name="timm-efficientnet-b0", encoder_weights=None, classes=2,
                                activation=None)


SPECS: dict[str, DeepSegmenterSpec] = {
    "hest": DeepSegmenterSpec(
        architecture="DeepLabV3-ResNet50, 2 classes (HEST)",
        build=build_hest_deeplabv3,
        input_mpp=1.0,
        patch_px=512,
        weights=PretrainedWeights(
            hf_hub_id="MahmoodLab/hest-tissue-seg", filename="deeplabv3_seg_v4.ckpt",
            license="CC-BY-NC-SA-4.0 (model card of MahmoodLab/hest-tissue-seg)",
            citation="Jaume et al., HEST-1k, NeurIPS 2024 Datasets and Benchmarks",
            mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=512,
        ),
        tissue_rule="softmax-class-1",
        strip_prefix="model.",
        drop_keys_with="aux",
        half_on_gpu=True,
    ),
    "grandqc": DeepSegmenterSpec(
        architecture="UNet++ over timm-efficientnet-b0, 2 classes (GrandQC)",
        build=build_grandqc_unetpp,
        input_mpp=10.0,
        patch_px=512,
        weights=PretrainedWeights(
            hf_hub_id="MahmoodLab/hest-tissue-seg", filename="Tissue_Detection_MPP10.pth",
            license="CC-BY-NC-SA-4.0 (GrandQC repository)",
            citation="Weng et al., GrandQC, Nature Communications 2024",
            mean=IMAGENET_MEAN, std=IMAGENET_STD, input_size=512,
        ),
        tissue_rule="argmax-class-0",
        jpeg_quality=80,
        requires=("segmentation_models_pytorch", "grandqc"),
    ),
}


def check_requirements(name: str, spec: DeepSegmenterSpec) -> None:
    """A PathkitError naming the extra to install when the model's library is missing."""
    import importlib.util

    if spec.requires is None:
        return
    module, extra = spec.requires
    if importlib.util.find_spec(module) is None:
        raise PathkitError(
            f"segmenter {name!r} needs {module.replace('_', '-')}, which is not installed: "
            f'pip install "pathkit[{extra}]"'
        )


def patch_origins(length: int, patch: int) -> list[int]:
    """Patch starts covering [0, length): every `patch` px, the last one moved back to end at the
    edge (GrandQC's scheme: no padding inside the slide); `length` >= `patch`."""
    starts = list(range(0, max(length - patch, 0) + 1, patch))
    if starts[-1] + patch < length:
        starts.append(length - patch)
    return starts


def _normalised(patches: np.ndarray, spec: DeepSegmenterSpec, device: torch.device) -> torch.Tensor:
    import numpy as np
    import torch

    if spec.jpeg_quality is not None:
        patches = np.stack([jpeg_roundtrip(p, spec.jpeg_quality) for p in patches])
    x = torch.from_numpy(np.ascontiguousarray(patches)).to(device).permute(0, 3, 1, 2).float().div_(255.0)
    mean = torch.tensor(spec.weights.mean, device=device).view(1, 3, 1, 1)
    std = torch.tensor(spec.weights.std, device=device).view(1, 3, 1, 1)
    return (x - mean) / std


def jpeg_roundtrip(rgb: np.ndarray, quality: int) -> np.ndarray:
    """The image after JPEG compression at `quality` (the artefacts GrandQC's detector was trained on)."""
    import io

    import numpy as np
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    with Image.open(buffer) as image:
        return np.asarray(image.convert("RGB"))


def tissue_from_logits(logits: torch.Tensor, rule: str, threshold: float) -> torch.Tensor:
    """Boolean tissue (B, H, W) from class logits (B, 2, H, W) by the model's rule."""
    import torch

    probs = torch.softmax(logits.float(), dim=1)
    if rule == "softmax-class-1":
        return probs[:, 1] > threshold
    if rule == "argmax-class-0":
        best, cls = probs.max(dim=1)
        return (cls == 0) & (best >= threshold)
    raise PathkitError(f"unknown tissue rule {rule!r}")


def _forward(model: Any, x: torch.Tensor) -> torch.Tensor:
    out = model(x)
    return out["out"] if isinstance(out, dict) else out


def segment_image(model: Any, rgb: np.ndarray, spec: DeepSegmenterSpec, *, threshold: float = 0.5,
                  batch_size: int = 8, device: str = "cpu") -> np.ndarray:
    """The boolean tissue mask of an RGB image at the model's resolution: 512-px patches (the
    image padded with white glass to at least one patch), run `batch_size` at a time."""
    import numpy as np
    import torch

    h, w = rgb.shape[:2]
    p = spec.patch_px
    ph, pw = max(h, p), max(w, p)
    canvas = np.full((ph, pw, 3), 255, dtype=np.uint8)
    canvas[:h, :w] = rgb[..., :3]
    origins = [(y, x) for y in patch_origins(ph, p) for x in patch_origins(pw, p)]
    out = np.zeros((ph, pw), dtype=bool)
    dev = torch.device(device)
    half = spec.half_on_gpu and dev.type == "cuda"
    with torch.inference_mode(), torch.autocast(dev.type, dtype=torch.float16, enabled=half):
        for start in range(0, len(origins), max(1, batch_size)):
            chunk = origins[start:start + max(1, batch_size)]
            patches = np.stack([canvas[y:y + p, x:x + p] for y, x in chunk])
            tissue = tissue_from_logits(_forward(model, _normalised(patches, spec, dev)), spec.tissue_rule, threshold)
            for (y, x), t in zip(chunk, tissue.cpu().numpy(), strict=True):
                out[y:y + p, x:x + p] = t
    return out[:h, :w]


def checkpoint_state_dict(path: Path, spec: DeepSegmenterSpec) -> dict[str, Any]:
    """The checkpoint's tensors under the model's own key names (HEST's Lightning checkpoint:
    `model.` prefix removed, auxiliary-head keys left out, as HEST's loader does)."""
    from pathkit_sdk.checkpoints import read_state_dict

    state = read_state_dict(path)
    out = {}
    for key, value in state.items():
        if spec.drop_keys_with and spec.drop_keys_with in key:
            continue
        out[key.removeprefix(spec.strip_prefix) if spec.strip_prefix else key] = value
    return out


@functools.lru_cache(maxsize=2)
def load_model(name: str, path: str, sha256: str, device: str) -> Any:
    """The model `name` with the checkpoint at `path` (of `sha256`: the cache key), eval mode."""
    import torch

    from pathkit_sdk.checkpoints import load_state_dict_checked

    spec = SPECS[name]
    with torch.device("meta"):
        model = spec.build()
    load_state_dict_checked(model, checkpoint_state_dict(Path(path), spec), source=path,
                            architecture=spec.architecture)
    return model.to(device).eval()


class DeepTissueSegmenter(TissueSegmenter):
    """A learned segmenter from `SPECS[name]`; a variant is its spec, not code."""

    spec_name: ClassVar[str] = ""

    @classmethod
    def spec(cls) -> DeepSegmenterSpec:
        return SPECS[cls.spec_name]

    @classmethod
    def options(cls, params: Any) -> dict[str, Any]:
        given = dict(getattr(params, "segmenter_options", None) or {})
        unknown = sorted(set(given) - set(OPTIONS))
        if unknown:
            raise PathkitError(f"segmenter {cls.name!r}: unknown option(s) {unknown}; it takes {list(OPTIONS)}")
        return given

    @classmethod
    def weights_file(cls, params: Any) -> Path:
        """The checkpoint on this machine, or a PathkitError saying where it was looked for."""
        from pathkit_core.features.weights import WEIGHTS_DIR_ENV, find_weights

        check_requirements(cls.name, cls.spec())
        path, looked = find_weights(cls, cls.options(params).get("weights"))  # never downloads
        if path is None:
            record = cls.spec().weights
            places = "; ".join(looked).replace("--weights", "--segmenter-weights")
            raise PathkitError(
                f"no checkpoint for segmenter {cls.name!r} (looked in: {places}); pathkit never downloads it: "
                f"pass --segmenter-weights /path/to/{record.filename} or put the file in "
                f"${WEIGHTS_DIR_ENV}/{cls.name}/ "
                f"(published at https://huggingface.co/{record.hf_hub_id}; licence {record.license})"
            )
        return path

    @classmethod
    def identity(cls, params: Any) -> dict[str, Any]:
        from pathkit_sdk.checkpoints import verify_sha256

        path = cls.weights_file(params)
        return {"weights_sha256": verify_sha256(path, cls.spec().weights.sha256, cls.name)}

    def segment(self, rgb: np.ndarray, mpp: float) -> Any:
        from pathkit_core.wsi.segmentation import TissueMask

        spec = self.spec()
        options = self.options(self.params)
        path = self.weights_file(self.params)
        sha = self.identity(self.params)["weights_sha256"]
        device = str(options.get("device", "cpu"))
        model = load_model(self.spec_name, str(path), sha, device)
        threshold = float(options.get("threshold", 0.5))
        tissue = segment_image(model, rgb, spec, threshold=threshold,
                               batch_size=int(options.get("batch_size", 8)), device=device)
        info = {"model": spec.architecture, "weights_sha256": sha, "threshold": threshold,
                "run_at_mpp": round(mpp, 4), "model_mpp": spec.input_mpp}
        return TissueMask(tissue, mpp, info=info)


def _segmenter_class(name: str, description: str) -> type[DeepTissueSegmenter]:
    spec = SPECS[name]
    attrs = {"name": name, "description": description, "spec_name": name, "input_mpp": spec.input_mpp,
             "weights": spec.weights, "__module__": __name__, "__doc__": f"{spec.architecture}: {description}"}
    return type(f"{name.capitalize()}TissueSegmenter", (DeepTissueSegmenter,), attrs)


HestTissueSegmenter = _segmenter_class("hest", "HEST's DeepLabV3-ResNet50 tissue model, 1 um/px (docs/wsi.md)")
GrandQCTissueSegmenter = _segmenter_class(
    "grandqc", "GrandQC's UNet++ / EfficientNet-B0 tissue detector, 10 um/px (docs/wsi.md)")

__all__ = [
    "DeepSegmenterSpec", "SPECS", "build_hest_deeplabv3", "build_grandqc_unetpp", "check_requirements",
    "patch_origins", "jpeg_roundtrip", "tissue_from_logits", "segment_image", "checkpoint_state_dict", "load_model",
    "DeepTissueSegmenter", "HestTissueSegmenter", "GrandQCTissueSegmenter",
]
