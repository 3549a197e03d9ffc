"""Every registered encoder, pinned: its record, its preprocessing and its features.

`encoder_table_fixture.json` was written from the encoder classes as they were before the
encoders became rows of one table (`pathkit_encoders.table`), and the table must reproduce it:
for each encoder, `describe()`, the whole-image preprocessing key, the contract attributes the
core reads, the sha256 of `transform` on fixed uint8 tiles, the sha256 of the features of a small
seeded configuration (tiny-vit at its own size), the checkpoint a seeded small configuration
exports and what loading it back returns, and the state-dict key names and shapes of the FULL
published architecture (checkpoint layout and embedding module, built on the meta device).
Deliberate differences from that record are listed, each with its reason, in `CORRECTIONS`.

The feature hashes are of float32 bytes computed on one torch thread on the CPU: they hold for
one machine and torch build (the project's), which is what "bit-identical" means here. To write
the fixture again on purpose (a new row, a deliberate change): `python
tests/plugins/encoders/test_encoder_table.py --write`, and say why in the commit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pathkit_encoders")

FIXTURE = Path(__file__).with_name("encoder_table_fixture.json")

# A small configuration of each published architecture (as the other encoder tests build them).
TINY = {"depth": 1, "embed_dim": 32, "num_heads": 2}
SMALL = {"conch15": {**TINY, "pooler_dim": 16, "pooler_heads": 2},
         "conch": {**TINY, "contrast_dim": 16, "pooler_heads": 2},
         "plip": {**TINY, "proj_dim": 16}, "quilt": {**TINY, "proj_dim": 16},
         "ctranspath": {"depths": (1, 1, 1, 1)}, "resnet50-trunc": {"layers": (1, 1, 1, 1)}}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tensor_sha(t: Any) -> str:
    return _sha(t.detach().cpu().contiguous().numpy().tobytes())


def _state_sha(state: dict[str, Any]) -> str:
    """Key names, shapes, dtypes and bytes of a state dict, in key order."""
    h = hashlib.sha256()
    for key in sorted(state):
        value = state[key]
        h.update(f"{key}:{tuple(value.shape)}:{value.dtype};".encode())
        if value.device.type != "meta":
            h.update(value.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _layout(state: dict[str, Any]) -> dict[str, Any]:
    """Key names and shapes of a state dict (meta tensors: no values)."""
    lines = [f"{k}:{tuple(v.shape)}" for k, v in sorted(state.items())]
    return {"keys": len(lines), "numel": int(sum(v.numel() for v in state.values())),
            "sha256": _sha("\n".join(lines).encode())}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def _tiles(px: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, px, px, 3), dtype=np.uint8)


def snapshot(name: str, tmp: Path) -> dict[str, Any]:
    """What the fixture pins for encoder `name`."""
    import torch
    from pathkit_encoders._vit import seeded

    from pathkit_core.features.images import Preprocessing
    from pathkit_core.plugins import get_component

    cls = get_component("encoder", name)
    full = cls()
    small = cls(arch_overrides=None if name.startswith("tiny-vit") else SMALL.get(name, TINY))
    out: dict[str, Any] = {
        "describe": cls.describe(),
        "preprocessing_key": Preprocessing.of(full).key(),
        "contract": {
            "interpolation": full.interpolation, "resize_px": full.resize_px, "crop_px": full.crop_px,
            "transform_on_device": full.transform_on_device, "random_init_seed": full.random_init_seed,
            "feature_dim": full.feature_dim, "small_feature_dim": small.feature_dim,
            "architecture_label": full.architecture_label(), "small_label": small.architecture_label(),
            "ships_checkpoint": full.ships_checkpoint(), "input_px": full.input_px,
            "mean": full.mean, "std": full.std,
            "architecture": repr(sorted(full.architecture().items())),
            "small_architecture": repr(sorted(small.architecture().items())),
        },
    }
    # transform: tiles at the tile spec, and a non-square tile of another size (resize + crop)
    spec_tiles = _tiles(cls.tile_spec.tile_px, 2, 0)
    odd_tile = np.random.default_rng(1).integers(0, 256, (301, 263, 3), dtype=np.uint8)
    x = small.transform(spec_tiles)
    out["transform"] = {"tile_spec": _tensor_sha(x), "odd": _tensor_sha(full.transform(odd_tile)),
                        "shape": list(x.shape)}
    # features of the small seeded configuration
    with seeded(3):
        model = small.wrap(small.build_backbone("cpu")).eval()
    with torch.inference_mode():
        feats = model(x)
    out["features"] = {"shape": list(feats.shape), "sha256": _tensor_sha(feats)}
    # checkpoint export and loading back through the real path
    path = small.random_checkpoint(tmp / f"{name}.safetensors", seed=5)
    from safetensors.torch import load_file

    out["checkpoint"] = _state_sha(load_file(str(path)))
    loaded_enc = cls(arch_overrides=small.arch_overrides or None)
    loaded = loaded_enc.load("cpu", weights_path=path)
    with torch.inference_mode():
        out["loaded_features"] = _tensor_sha(loaded(x))
    if not full.ships_checkpoint():  # built from its seed without a path
        built = cls()
        with torch.inference_mode():
            out["seeded_load_features"] = _tensor_sha(built.load("cpu")(x))
        out["seeded_load_sha"] = built.weights_sha256
    # the full published architecture on the meta device
    backbone = full.build_backbone("meta")
    out["meta_backbone"] = _layout(full.export_state_dict(backbone))
    out["meta_model"] = _layout(full.wrap(backbone).state_dict())
    return _jsonable(out)


# Deliberate differences from the pinned record, each one named. tiny-vit-wide's class widened the
# architecture it built (width 96, 3 heads) but `describe()` listed the unwidened keyword arguments
# (64, 2); its row states what it builds, so `pathkit info tiny-vit-wide` now shows 96 and 3.
CORRECTIONS: dict[str, dict[str, Any]] = {
    "tiny-vit-wide": {"describe": {"architecture": {"embed_dim": 96, "num_heads": 3}}},
}


def _corrected(want: Any, fix: Any) -> Any:
    if isinstance(fix, dict) and isinstance(want, dict):
        return {**want, **{k: _corrected(want.get(k), v) for k, v in fix.items()}}
    return fix


def _registered() -> list[str]:
    from pathkit_core.plugins import get_plugin_manager

    return sorted(get_plugin_manager().names("encoder"))


def test_every_registered_encoder_is_pinned():
    pinned = set(json.loads(FIXTURE.read_text()))
    assert set(_registered()) == pinned, "a new encoder row needs its snapshot (see the module docstring)"


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", sorted(json.loads(FIXTURE.read_text())) if FIXTURE.exists() else [])
def test_encoder_matches_its_pinned_snapshot(name, tmp_path):
    pinned = json.loads(FIXTURE.read_text())[name]
    want = _corrected(pinned, CORRECTIONS.get(name, {}))
    got = snapshot(name, tmp_path)
    for part in want:
        assert got.get(part) == want[part], f"{name}: {part} changed"
    assert set(got) == set(want)


def test_each_correction_changes_a_pinned_value():
    """A correction that restates the pinned value hides nothing and is removed instead."""
    table = json.loads(FIXTURE.read_text())
    for name, fix in CORRECTIONS.items():
        assert _corrected(table[name], fix) != table[name], name



# --------------------------------------------------------------------------- the table itself


def test_every_row_is_registered_under_its_name_and_states_its_preprocessing():
    from pathkit_encoders.table import ROWS

    from pathkit_core.plugins import get_component

    assert sorted(ROWS) == _registered()
    for name, spec in ROWS.items():
        cls = get_component("encoder", name)
        assert cls.spec is spec and cls.name == name
        assert (cls.interpolation, cls.resize_px, cls.crop_px) == (spec.interpolation, spec.resize_px, spec.crop_px)


def test_a_variant_is_a_row_registered_like_any_plugin():
    """A row written outside the table (as a third-party plugin would) registers and builds."""
    import torch
    from pathkit_encoders import encoder_class, registrar
    from pathkit_encoders.table import TINY_VIT

    from pathkit_core.plugins import Registry

    spec = TINY_VIT.replace(name="tiny-vit-deep", description="deeper tiny ViT",
                            arch={**TINY_VIT.arch, "depth": 3}, random_init_seed=7)
    cls = encoder_class(spec, __name__, "TinyDeep")
    plugin = type(sys)("tiny_deep_plugin")
    plugin.register_encoders = registrar(cls)
    registry = Registry()
    registry.add_plugin("tiny-deep", plugin)
    registry.check()
    registry.collect()
    assert registry.components["encoder"]["tiny-vit-deep"] is cls
    enc = cls()
    model = enc.load()
    assert len(model.blocks) == 3 and enc.weights_sha256 == "random-init:seed=7"
    with torch.inference_mode():
        assert tuple(model(enc.transform(_tiles(128, 2, 0))).shape) == (2, 64)
    assert cls.describe()["architecture"]["depth"] == 3 and TINY_VIT.arch["depth"] == 2


def test_rows_are_read_only():
    from pathkit_encoders.table import UNI

    with pytest.raises(TypeError):
        UNI.arch["depth"] = 1  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        UNI.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("changes", "message"), [
    ({"pooling": "mean"},
     "pooling 'mean' is not one of model, cls+patch-mean, feature-map-mean and no tower builds it"),
    ({"interpolation": "nearest"}, "interpolation 'nearest' is not bicubic or bilinear"),
])
def test_a_row_with_an_unknown_pooling_or_interpolation_is_refused(changes, message):
    from pathkit_encoders.table import UNI

    from pathkit_core.contracts import PathkitError

    with pytest.raises(PathkitError, match=re.escape(f"encoder row 'uni': {message}")):
        UNI.replace(**changes)


def test_feature_dim_follows_an_override_of_the_feature_width_only():
    """Virchow's embedding is twice the trunk width: an override of the width doubles, one of the
    depth leaves the published 2560 (the class-per-encoder code answered 5120 there)."""
    import torch

    from pathkit_core.plugins import get_component

    virchow = get_component("encoder", "virchow")
    for overrides, dim in (({"depth": 1}, 2560), ({"depth": 1, "embed_dim": 32, "num_heads": 2}, 64)):
        enc = virchow(arch_overrides=overrides)
        model = enc.wrap(enc.build_backbone("meta"))
        with torch.no_grad():
            out = model(torch.empty(1, 3, enc.input_px, enc.input_px, device="meta"))
        assert enc.feature_dim == dim == out.shape[-1]


def test_encoders_pickle_by_their_module_and_class_name():
    import pickle

    from pathkit_core.plugins import get_component

    for name in ("uni", "tiny-vit-wide"):
        cls = get_component("encoder", name)
        enc = pickle.loads(pickle.dumps(cls(arch_overrides={"depth": 1})))
        assert type(enc) is cls and enc.arch_overrides == {"depth": 1}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/plugins/encoders/test_encoder_table.py --write")
    import tempfile

    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        table = {name: snapshot(name, Path(tmp)) for name in _registered()}
    FIXTURE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE} ({len(table)} encoders)")
