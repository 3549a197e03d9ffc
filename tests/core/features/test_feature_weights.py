"""Weights resolution order, the errors naming every place looked, and strict checkpoint fitting."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from pathkit_core.contracts import Encoder, PathkitError, PretrainedWeights
from pathkit_core.features import weights as W


class GatedEncoder(Encoder):
    name: ClassVar[str] = "gated-test"
    embed_dim: ClassVar[int] = 4
    weights: ClassVar[PretrainedWeights] = PretrainedWeights(
        hf_hub_id="someone/gated-model", filename="pytorch_model.bin", license="CC-BY-NC-ND-4.0", gated=True,
    )


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """No PATHKIT_WEIGHTS_DIR, an empty HF cache, and a hub that must not be called."""
    from huggingface_hub import constants

    monkeypatch.delenv(W.WEIGHTS_DIR_ENV, raising=False)
    monkeypatch.delenv(W.ALLOW_DOWNLOAD_ENV, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))

    def no_network(*args, **kwargs):
        raise AssertionError("the hub must not be contacted")

    monkeypatch.setattr("huggingface_hub.hf_hub_download", no_network)


def _fake_hf_cache(root: Path, repo: str, filename: str, payload: bytes = b"x") -> Path:
    folder = root / f"models--{repo.replace('/', '--')}"
    commit = "0" * 40
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / filename).write_bytes(payload)
    return snap / filename


def test_missing_checkpoint_names_every_place_and_the_licence(tmp_path):
    with pytest.raises(PathkitError) as err:
        W.resolve_weights(GatedEncoder)
    text = str(err.value)
    assert "no checkpoint found for encoder 'gated-test'" in text and "downloads are not allowed" in text
    assert "$PATHKIT_WEIGHTS_DIR/gated-test/ ($PATHKIT_WEIGHTS_DIR is not set)" in text
    assert "Hugging Face cache" in text and "someone/gated-model" in text
    assert "--weights" in text and "huggingface-cli login" in text and "--download" in text
    assert "gated model" in text and "CC-BY-NC-ND-4.0" in text


def test_explicit_path_wins_and_a_wrong_one_never_falls_back(tmp_path, monkeypatch):
    env_dir = tmp_path / "weights"
    (env_dir / "gated-test").mkdir(parents=True)
    (env_dir / "gated-test" / "pytorch_model.bin").write_bytes(b"env")
    monkeypatch.setenv(W.WEIGHTS_DIR_ENV, str(env_dir))
    mine = tmp_path / "mine.safetensors"
    mine.write_bytes(b"mine")
    assert W.resolve_weights(GatedEncoder, mine) == mine
    with pytest.raises(PathkitError, match=r"--weights .*nope\.bin \(does not exist\)"):
        W.resolve_weights(GatedEncoder, tmp_path / "nope.bin")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"s")
    (folder / "pytorch_model.bin").write_bytes(b"b")
    assert W.resolve_weights(GatedEncoder, folder) == folder / "model.safetensors"  # safetensors first


def test_weights_dir_then_hf_cache_order(tmp_path, monkeypatch):
    from huggingface_hub import constants

    cached = _fake_hf_cache(Path(constants.HF_HUB_CACHE), "someone/gated-model", "pytorch_model.bin")
    path, looked = W.find_weights(GatedEncoder)
    assert path == cached and "Hugging Face cache" in looked[-1]
    env_dir = tmp_path / "weights"
    (env_dir / "gated-test").mkdir(parents=True)
    (env_dir / "gated-test" / "model.safetensors").write_bytes(b"env")
    monkeypatch.setenv(W.WEIGHTS_DIR_ENV, str(env_dir))
    path, looked = W.find_weights(GatedEncoder)
    assert path == env_dir / "gated-test" / "model.safetensors" and len(looked) == 1


def test_download_only_when_allowed(tmp_path, monkeypatch):
    got = tmp_path / "downloaded.bin"
    got.write_bytes(b"d")
    calls = []

    def fake_download(repo_id, filename, **kwargs):
        calls.append((repo_id, filename))
        if filename != "pytorch_model.bin":
            from huggingface_hub.errors import EntryNotFoundError

            raise EntryNotFoundError("no such file")
        return str(got)

    monkeypatch.setattr("huggingface_hub.hf_hub_download", fake_download)
    with pytest.raises(PathkitError, match="downloads are not allowed"):
        W.resolve_weights(GatedEncoder)
    assert calls == []
    assert W.resolve_weights(GatedEncoder, allow_download=True) == got
    assert calls == [("someone/gated-model", "model.safetensors"), ("someone/gated-model", "pytorch_model.bin")]
    monkeypatch.setenv(W.ALLOW_DOWNLOAD_ENV, "1")
    assert W.resolve_weights(GatedEncoder) == got


def test_gated_download_refusal_shows_the_terms(monkeypatch):
    from huggingface_hub.errors import GatedRepoError

    def gated(repo_id, filename, **kwargs):
        # Built without an HTTP response object: its type differs between hub versions.
        exc = GatedRepoError.__new__(GatedRepoError)
        Exception.__init__(exc, "access to model someone/gated-model is restricted")
        raise exc

    monkeypatch.setattr("huggingface_hub.hf_hub_download", gated)
    with pytest.raises(PathkitError, match=r"gated model and this machine has no access.*CC-BY-NC-ND-4.0"):
        W.resolve_weights(GatedEncoder, allow_download=True)


def test_sha256_pin_is_enforced(tmp_path):
    from pathkit_sdk.checkpoints import verify_sha256

    f = tmp_path / "w.bin"
    f.write_bytes(b"abc")
    good = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert verify_sha256(f, good, "e") == good
    with pytest.raises(PathkitError, match="corrupt, truncated or another model"):
        verify_sha256(f, "0" * 64, "e")


def test_import_touches_no_network_and_no_torch():
    from tests._imports import imported_by

    code = (
        "import socket\n"
        "def refuse(*a, **k): raise RuntimeError('network')\n"
        "socket.socket.connect = refuse\n"
        "import pathkit_core.features.weights, pathkit_core.features.store, pathkit_core.features.extract\n"
        "import pathkit_core.features.qc, pathkit_interop.feature_exchange\n"
    )
    assert imported_by(code, ("torch",)) == []
