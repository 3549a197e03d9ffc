"""`NAME+random`: a foundation model's architecture with random weights (the `baselines = true`
reference row of docs/comparisons.md), answered by the registry without a row of its own."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from pathkit_core.contracts import PathkitError
from pathkit_core.features.extract import _weights_identity
from pathkit_core.features.store import check_encoder_name
from pathkit_core.plugins import get_plugin_manager
from pathkit_core.run.spec import RunSpec

SMALL = {"depth": 1, "embed_dim": 48, "num_heads": 2}  # kaiko-vits16 cut down: the same family, fast


@pytest.fixture(scope="module")
def classes():
    registry = get_plugin_manager()
    return registry.get("encoder", "kaiko-vits16"), registry.get("encoder", "kaiko-vits16+random")


def test_the_copy_is_the_same_architecture_under_its_own_name(classes):
    base, copy = classes
    assert copy is get_plugin_manager().get("encoder", "kaiko-vits16+random") and issubclass(copy, base)
    assert copy.name == "kaiko-vits16+random" == check_encoder_name(copy.name)  # a feature-store folder
    assert copy.tile_spec == base.tile_spec and copy.embed_dim == base.embed_dim and copy.weights == base.weights
    assert base.is_pathology_model and not copy.is_pathology_model
    assert base().ships_checkpoint() and not copy().ships_checkpoint()
    assert "kaiko-vits16+random" not in get_plugin_manager().names("encoder")  # no registered row
    with pytest.raises(PathkitError, match="unknown encoder 'nope'"):
        get_plugin_manager().get("encoder", "nope+random")


def test_random_features_differ_from_the_pretrained_ones_and_so_does_the_identity(classes, tmp_path):
    base, copy = classes
    checkpoint = base(SMALL).random_checkpoint(tmp_path / "pretrained.safetensors", seed=3)
    pretrained, random = base(SMALL), copy(SMALL)
    tiles = np.random.default_rng(0).integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
    batch = random.transform(torch.from_numpy(tiles))
    with torch.no_grad():
        ours = random.load("cpu")(batch)
        theirs = pretrained.load("cpu", checkpoint)(batch)
        again = copy(SMALL).load("cpu")(batch)
    assert ours.shape == theirs.shape == (2, random.feature_dim)
    assert not torch.allclose(ours, theirs, atol=1e-3)
    torch.testing.assert_close(again, ours)  # the row's random_init_seed: the same copy every time
    assert random.weights_sha256 == f"random-init:seed={base.random_init_seed}" != pretrained.weights_sha256
    assert _weights_identity(random, None, False) == (None, f"random-init:seed={base.random_init_seed}")
    cell = {"dataset": "bach", "generator": "linear-probe"}
    assert RunSpec(encoder="kaiko-vits16+random", **cell).identity() != RunSpec(encoder="kaiko-vits16",
                                                                               **cell).identity()
    with pytest.raises(PathkitError, match="with random weights: it loads no checkpoint"):
        copy(SMALL).load("cpu", checkpoint)
    restored = pickle.loads(pickle.dumps(random))  # extraction workers receive it pickled
    assert type(restored) is copy and restored.arch_overrides == SMALL


def test_pathkit_info_describes_a_random_copy_and_refuses_one_of_nothing(cli):
    shown = cli("info", "uni+random", "--json")
    assert shown.exit_code == 0, shown.output
    assert "uni's architecture with random weights" in shown.output
    missing = cli("info", "nothing+random")
    assert missing.exit_code != 0 and "no component named 'nothing+random'" in missing.output
