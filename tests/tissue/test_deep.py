"""The learned tissue segmenters (`hest`, `grandqc`): the published architectures (parameter counts
on the meta device), weights by path and sha256 never downloaded, the identity in each manifest,
and a tiny model of the same family trained here on synthetic slides of known tissue (Dice >= 0.9)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from pathkit_core.contracts import PathkitError
from pathkit_tissue import deep

pytestmark = pytest.mark.filterwarnings("ignore::pathkit_core.wsi.tiling.TilingWarning")

FAST = dict(target_mpp=2.0, tile_px=64, min_tissue_area_mm2=0.0, thumbnail_px=1024)


@pytest.fixture(scope="module")
def slide(tmp_path_factory):
    """A 1.5 x 1 mm synthetic slide at 0.5 um/px with two pieces of tissue."""
    from pathkit_sdk.synthetic import write_synthetic_slide
    from tests.core.wsi.conftest import HEIGHT, MPP, WIDTH, tissue_blobs

    return write_synthetic_slide(tmp_path_factory.mktemp("deep") / "tissue.tiff", width=WIDTH, height=HEIGHT,
                                 mpp=MPP, tissue=tissue_blobs(), seed=1)


def _needs_smp():
    pytest.importorskip("segmentation_models_pytorch",
                        reason='segmentation-models-pytorch is not installed: pip install "pathkit[grandqc]"')


def _count(name):
    import torch

    with torch.device("meta"):
        model = deep.SPECS[name].build()
    return model, sum(p.numel() for p in model.parameters())


def test_hest_is_torchvision_deeplabv3_resnet50_with_a_two_class_head():
    model, n = _count("hest")
    # 39.6 M (HEST's tissue model as LazySlide's registry gives it), i.e. torchvision's 21-class
    # DeepLabV3-ResNet50 (39,633,986 + 19 * 257 for the 19 extra classes of its head) without aux head
    assert n == 39_633_986
    assert (model.classifier[4].in_channels, model.classifier[4].out_channels) == (256, 2)
    assert model.aux_classifier is None


def test_grandqc_is_unetplusplus_over_efficientnet_b0_with_two_classes():
    _needs_smp()
    model, n = _count("grandqc")
    assert type(model).__name__ == "UnetPlusPlus" and n == 6_569_726
    assert model.segmentation_head[0].out_channels == 2


def test_hest_checkpoint_keys_are_mapped_as_hest_loads_them(tmp_path):
    import torch

    path = tmp_path / "deeplabv3_seg_v4.ckpt"
    torch.save({"state_dict": {"model.backbone.conv1.weight": torch.zeros(1), "model.aux_classifier.0.weight":
                               torch.zeros(1)}, "epoch": 3}, path)
    assert list(deep.checkpoint_state_dict(path, deep.SPECS["hest"])) == ["backbone.conv1.weight"]


def test_patches_cover_the_image_and_the_rules_read_the_published_classes():
    import torch

    assert deep.patch_origins(1100, 512) == [0, 512, 588] and deep.patch_origins(512, 512) == [0]
    logits = torch.tensor([[[[2.0, -1.0]]], [[[0.0, 1.0]]]]).permute(1, 0, 2, 3)  # (1, 2, 1, 2)
    assert deep.tissue_from_logits(logits, "softmax-class-1", 0.5).tolist() == [[[False, True]]]
    assert deep.tissue_from_logits(logits, "argmax-class-0", 0.5).tolist() == [[[True, False]]]


def test_absent_weights_are_refused_never_downloaded(slide, tmp_path, monkeypatch):
    from pathkit_core.wsi.tiling import TilingParams, tile_slides

    monkeypatch.delenv("PATHKIT_WEIGHTS_DIR", raising=False)
    results = tile_slides([slide], tmp_path / "o",
                          TilingParams(**FAST, segmenter="hest", segmenter_options={"weights": str(tmp_path / "no")}),
                          progress=False)
    assert results[0].status == "failed"
    assert "no checkpoint for segmenter 'hest'" in results[0].reason and "never downloads" in results[0].reason
    assert "--segmenter-weights" in results[0].reason


def test_a_missing_library_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "segmentation_models_pytorch" else real(name, *a))
    with pytest.raises(PathkitError, match=r'pip install "pathkit\[grandqc\]"'):
        deep.check_requirements("grandqc", deep.SPECS["grandqc"])


def _save(model, path):
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    return path


@pytest.mark.slow  # builds, saves and runs the full GrandQC model twice (about 5 s)
def test_grandqc_tiles_a_slide_with_random_weights_and_its_weights_are_its_identity(
        slide, tmp_path, one_torch_thread):
    _needs_smp()
    import torch

    from pathkit_core.features.weights import file_sha256
    from pathkit_core.wsi.manifest import read_manifest_meta
    from pathkit_core.wsi.tiling import TilingParams, tile_slide

    files = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        files.append(_save(deep.build_grandqc_unetpp(), tmp_path / f"w{seed}.safetensors"))
    params = TilingParams(**FAST, segmenter="grandqc", segmenter_options={"weights": str(files[0]), "batch_size": 2})
    result = tile_slide(slide, tmp_path / "o", params)
    meta = read_manifest_meta(result.manifest_path)
    assert meta["segmentation"]["segmenter_identity"] == {"weights_sha256": file_sha256(files[0])}
    assert meta["segmentation"]["model_mpp"] == 10.0
    assert meta["mask"]["mpp"] == pytest.approx(10.0, rel=0.05)  # run at GrandQC's 10 um/px
    assert (tmp_path / "o" / "tissue.tissue.geojson").is_file()
    # the same file elsewhere: resumed (by content); other weights: a stale manifest
    moved = tmp_path / "elsewhere.safetensors"
    moved.write_bytes(files[0].read_bytes())
    same = dataclasses.replace(params, segmenter_options={"weights": str(moved), "batch_size": 2})
    assert tile_slide(slide, tmp_path / "o", same).status == "skipped"
    other = dataclasses.replace(params, segmenter_options={"weights": str(files[1]), "batch_size": 2})
    with pytest.raises(PathkitError, match="segmenter with another identity"):
        tile_slide(slide, tmp_path / "o", other)


# --------------------------------------------------------------------------- learnability

TINY_MPP, TINY_PATCH = 8.0, 32


def _tiny_unetpp():
    """The GrandQC family (UNet++ over EfficientNet-B0) cut to three encoder stages and a small decoder."""
    import warnings

    import segmentation_models_pytorch as smp

    warnings.simplefilter("ignore", DeprecationWarning)
    return smp.UnetPlusPlus(encoder_name="timm-efficientnet-b0", encoder_weights=None, encoder_depth=3,
                            decoder_channels=(16, 8, 4), classes=2, activation=None)


def _slide_with_truth(path, seed):
    """A 1024 x 768 slide at 2 um/px with two random ellipses of tissue, and the ellipses."""
    from pathkit_sdk.synthetic import Blob, write_synthetic_slide

    rng = np.random.default_rng(seed)
    blobs = [Blob(float(cx), float(rng.uniform(0.3, 0.7)), float(rng.uniform(0.1, 0.18)),
                  float(rng.uniform(0.15, 0.25)), colour=tuple(int(c) for c in colour), texture="noise",
                  angle_deg=float(rng.uniform(0, 90)))
             for cx, colour in ((rng.uniform(0.2, 0.35), (230, 150, 200)), (rng.uniform(0.65, 0.8), (170, 100, 170)))]
    write_synthetic_slide(path, width=1024, height=768, mpp=2.0, tissue=blobs, seed=seed)
    return blobs


def _truth(blobs, shape, ds_x, ds_y, width=1024, height=768):
    h, w = shape
    x = (np.arange(w) + 0.5)[None, :] * ds_x
    y = (np.arange(h) + 0.5)[:, None] * ds_y
    out = np.zeros(shape, dtype=bool)
    for b in blobs:
        t = math.radians(b.angle_deg)
        dx, dy = x - b.cx * width, y - b.cy * height
        u, v = dx * math.cos(t) + dy * math.sin(t), dy * math.cos(t) - dx * math.sin(t)
        out |= (u / (b.rx * width)) ** 2 + (v / (b.ry * height)) ** 2 <= 1.0
    return out


@pytest.mark.slow  # trains a model: about 15 s on two cores
def test_a_tiny_unetplusplus_trained_here_segments_a_new_slide_with_dice_above_0_9(
        tmp_path, monkeypatch, one_torch_thread, fresh_registry):
    _needs_smp()
    import torch

    from pathkit_core.wsi.segmentation import read_thumbnail, segment_slide
    from pathkit_core.wsi.slide import open_slide
    from pathkit_core.wsi.tiling import TilingParams

    spec = dataclasses.replace(deep.SPECS["grandqc"], build=_tiny_unetpp, input_mpp=TINY_MPP, patch_px=TINY_PATCH,
                               architecture="tiny UNet++ (test)")
    monkeypatch.setitem(deep.SPECS, "tiny-grandqc", spec)
    tiny = deep._segmenter_class("tiny-grandqc", "test model")

    class Plugin:
        from pathkit_core import hookimpl

        @hookimpl
        def register_segmenters(self, register):
            register(tiny)

    fresh_registry({"tiny": Plugin()})
    # training data: three slides read at the model's resolution through the slide reader
    images, labels = [], []
    for seed in range(3):
        blobs = _slide_with_truth(tmp_path / f"train{seed}.tiff", seed)
        with open_slide(tmp_path / f"train{seed}.tiff") as slide:
            thumb = read_thumbnail(slide, downsample=TINY_MPP / slide.mpp)
        images.append(deep.jpeg_roundtrip(thumb.rgb, 80))
        labels.append(~_truth(blobs, thumb.shape, thumb.downsample_x, thumb.downsample_y))  # class 0 = tissue
    torch.manual_seed(0)
    model = _tiny_unetpp()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    mean = torch.tensor(spec.weights.mean).view(1, 3, 1, 1)
    std = torch.tensor(spec.weights.std).view(1, 3, 1, 1)
    for _ in range(80):
        xs, ys = [], []
        for _ in range(8):
            k = int(rng.integers(len(images)))
            h, w = labels[k].shape
            y0, x0 = int(rng.integers(h - TINY_PATCH + 1)), int(rng.integers(w - TINY_PATCH + 1))
            xs.append(images[k][y0:y0 + TINY_PATCH, x0:x0 + TINY_PATCH])
            ys.append(labels[k][y0:y0 + TINY_PATCH, x0:x0 + TINY_PATCH])
        x = (torch.from_numpy(np.stack(xs)).permute(0, 3, 1, 2).float() / 255.0 - mean) / std
        loss = torch.nn.functional.cross_entropy(model(x), torch.from_numpy(np.stack(ys)).long())
        opt.zero_grad()
        loss.backward()
        opt.step()
    weights = _save(model.eval(), tmp_path / "tiny.safetensors")

    # a new slide through the segmenter as tiling runs it
    blobs = _slide_with_truth(tmp_path / "test.tiff", 99)
    params = TilingParams(**FAST, segmenter="tiny-grandqc", segmenter_options={"weights": str(weights)})
    with open_slide(tmp_path / "test.tiff") as slide:
        _, mask, mds_x, mds_y = segment_slide(slide, params)
    assert mask.mpp == pytest.approx(TINY_MPP, rel=0.05)
    truth = _truth(blobs, mask.tissue.shape, mds_x, mds_y)
    dice = 2 * (mask.tissue & truth).sum() / (mask.tissue.sum() + truth.sum())
    print(f"tiny UNet++ trained in the test: Dice {dice:.3f} on an unseen slide")
    assert dice >= 0.9, dice


@pytest.mark.slow  # one DeepLabV3-ResNet50 forward pass on the CPU
def test_hest_runs_batched_on_an_image_with_random_weights(one_torch_thread):
    import torch

    torch.manual_seed(0)
    model = deep.build_hest_deeplabv3().eval()
    rgb = np.full((300, 500, 3), 230, dtype=np.uint8)  # padded with glass to one 512-px patch
    mask = deep.segment_image(model, rgb, deep.SPECS["hest"], batch_size=4)
    assert mask.shape == (300, 500) and mask.dtype == bool
