"""Reading a checkpoint safely and fitting it to a model strictly (`pathkit_sdk.checkpoints`)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pathkit_core.contracts import PathkitError
from pathkit_sdk import checkpoints as W


def test_read_state_dict_formats(tmp_path):
    from safetensors.torch import save_file

    sd = {"a.weight": torch.randn(2, 3), "a.bias": torch.zeros(2)}
    save_file(sd, str(tmp_path / "m.safetensors"))
    torch.save({"state_dict": sd}, tmp_path / "wrapped.pth")
    torch.save(sd, tmp_path / "plain.bin")
    for name in ("m.safetensors", "wrapped.pth", "plain.bin"):
        got = W.read_state_dict(tmp_path / name)
        assert set(got) == set(sd) and torch.equal(got["a.weight"], sd["a.weight"])
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(PathkitError, match="not a readable safetensors"):
        W.read_state_dict(tmp_path / "bad.safetensors")


class _Evil:
    def __reduce__(self):
        return (print, ("pickled code ran",))


def test_pickled_code_in_a_checkpoint_is_refused(tmp_path):
    torch.save({"a.weight": torch.zeros(1), "x": _Evil()}, tmp_path / "evil.bin")
    with pytest.raises(PathkitError, match="weights-only"):
        W.read_state_dict(tmp_path / "evil.bin")


def test_mismatched_checkpoint_names_missing_unexpected_and_shapes():
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    sd = {"0.weight": torch.zeros(5, 3), "0.bias": torch.zeros(4), "extra.weight": torch.zeros(1)}
    with pytest.raises(PathkitError) as err:
        W.load_state_dict_checked(model, sd, source="ckpt.bin", architecture="toy")
    text = str(err.value)
    assert "ckpt.bin does not fit the toy architecture" in text
    assert "2 missing key(s): 1.weight, 1.bias" in text
    assert "1 unexpected key(s): extra.weight" in text
    assert "0.weight: checkpoint (5, 3) vs model (4, 3)" in text


def test_meta_model_adopts_the_checkpoint_tensors():
    with torch.device("meta"):
        model = nn.Linear(3, 2)
    sd = {"weight": torch.arange(6.0).reshape(2, 3).half(), "bias": torch.ones(2).half()}
    loaded = W.load_state_dict_checked(model, sd, source="x", architecture="toy")
    assert loaded.weight.dtype == torch.float32 and not loaded.weight.is_meta
    assert torch.equal(loaded(torch.ones(1, 3)), torch.tensor([[4.0, 13.0]]))
