"""The encoder runner: the same features as a plain forward pass, in order, whatever the prefetch;
errors and early stops reach the caller and stop the background thread; compile falls back."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from pathkit_core.contracts import PathkitError
from pathkit_core.features.inference import EncoderRunner, Preprocess, autocast, default_threads
from pathkit_core.wsi.resample import resize_tiles
from tests.core.features.conftest import PixelStatsEncoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _batches(n=5, size=70, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (3 + i % 2, size, size, 3), dtype=np.uint8) for i in range(n)]


def _reference(enc, model, batch, tile_px=None):
    tiles = resize_tiles(batch, tile_px) if tile_px else batch
    with torch.inference_mode():
        return model(enc.transform(tiles)).float()


@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_stream_gives_the_plain_forward_features_in_order(prefetch):
    enc = PixelStatsEncoder()
    model = enc.load()
    batches = _batches()
    items = [{"id": i, "pixels": b} for i, b in enumerate(batches)]
    runner = EncoderRunner(enc, model, "cpu")
    out = list(runner.stream(items, pixels=lambda b: b["pixels"], tile_px=lambda b: 64, prefetch=prefetch))
    assert [item["id"] for item, _ in out] == list(range(len(batches)))
    for (_, feats), batch in zip(out, batches, strict=True):
        assert feats.dtype == torch.float32 and feats.device.type == "cpu"
        torch.testing.assert_close(feats, _reference(enc, model, batch, 64), rtol=0, atol=0)
    # one batch at a time gives the same
    torch.testing.assert_close(runner.encode(batches[0], 64), out[0][1], rtol=0, atol=0)


def test_float_batches_go_to_the_model_as_they_are_and_failed_items_pass_through():
    enc = PixelStatsEncoder()
    model = enc.load()
    ready = enc.transform(_batches(1, size=64)[0])
    items = [ready, None, ready[:2]]
    out = list(EncoderRunner(enc, model).stream(items))
    assert out[1] == (None, None)
    with torch.inference_mode():
        torch.testing.assert_close(out[0][1], model(ready), rtol=0, atol=0)
    assert out[2][1].shape == (2, enc.embed_dim)


def test_the_model_runs_in_inference_mode_and_preprocessing_in_the_background():
    seen = {}

    class Spy(PixelStatsEncoder):
        def transform(self, tiles):
            seen["transform thread"] = threading.current_thread().name
            return super().transform(tiles)

    enc = Spy()
    base = enc.load()

    def model(x):
        seen["inference mode"] = torch.is_inference_mode_enabled()
        seen["model threads"] = torch.get_num_threads()
        return base(x)

    runner = EncoderRunner(enc, model, "cpu", threads=2)
    list(runner.stream(_batches(2, size=64), prefetch=2))
    assert seen == {"transform thread": "pathkit-prefetch", "inference mode": True, "model threads": 2}
    assert torch.get_num_threads() == 1  # restored after the stream
    list(runner.stream(_batches(1, size=64), prefetch=0))
    assert seen["transform thread"] == threading.current_thread().name


def test_an_error_while_reading_reaches_the_caller_and_stops_the_thread():
    enc = PixelStatsEncoder()
    runner = EncoderRunner(enc, enc.load())

    def broken():
        yield _batches(1, size=64)[0]
        raise PathkitError("tile 3 cannot be decoded")

    before = threading.active_count()
    got = []
    with pytest.raises(PathkitError, match="tile 3 cannot be decoded"):
        for _, feats in runner.stream(broken(), prefetch=2):
            got.append(feats)
    assert len(got) == 1
    assert threading.active_count() == before


def test_stopping_early_stops_the_background_thread():
    enc = PixelStatsEncoder()
    runner = EncoderRunner(enc, enc.load())
    read = []

    def endless():
        i = 0
        while True:
            read.append(i)
            i += 1
            yield np.zeros((2, 64, 64, 3), dtype=np.uint8)

    before = threading.active_count()
    stream = runner.stream(endless(), prefetch=2)
    for k, _ in enumerate(stream):
        if k == 2:
            break
    stream.close()
    assert threading.active_count() == before
    # consumed (3) + the queue (2) + the slot freed by the last get (1) + one being made: bounded
    assert len(read) <= 3 + 2 + 1 + 1


def test_a_wrong_output_shape_is_an_error_naming_the_encoder():
    enc = PixelStatsEncoder()
    runner = EncoderRunner(enc, lambda x: x.flatten())
    with pytest.raises(PathkitError, match="pixel-stats.*returned shape"):
        runner.encode(_batches(1, size=64)[0])


def test_compile_failures_fall_back_to_the_eager_model(monkeypatch):
    enc = PixelStatsEncoder()
    model = enc.load()
    batch = _batches(1, size=64)[0]
    want = _reference(enc, model, batch)

    def compiled_that_fails(module, **kwargs):
        def run(x):
            raise RuntimeError("no C++ compiler")
        return run

    monkeypatch.setattr(torch, "compile", compiled_that_fails)
    runner = EncoderRunner(enc, model, compile=True)
    with pytest.warns(RuntimeWarning, match="torch.compile of encoder 'pixel-stats' failed.*no C\\+\\+ compiler"):
        got = runner.encode(batch)
    torch.testing.assert_close(got, want, rtol=0, atol=0)

    def compile_refused(module, **kwargs):
        raise RuntimeError("not supported on this Python")

    monkeypatch.setattr(torch, "compile", compile_refused)
    with pytest.warns(RuntimeWarning, match="not supported on this Python"):
        runner = EncoderRunner(enc, model, compile=True)
    torch.testing.assert_close(runner.encode(batch), want, rtol=0, atol=0)


def test_preprocessing_on_the_device_matches_the_host():
    """On a GPU uint8 regions travel as read and are resampled and normalised there; the two
    halves give the host's numbers (run here on the CPU, the device path's code)."""
    from pathkit_core.plugins import get_component

    enc = get_component("encoder", "tiny-vit")()
    raw = _batches(1, size=131)[0]
    host = Preprocess(enc, on_device=False).host(raw, 128)
    split = Preprocess(enc, on_device=True)
    travelled = split.host(raw, 128)
    assert travelled.dtype == torch.uint8 and tuple(travelled.shape[1:3]) == (131, 131)
    torch.testing.assert_close(split.device(travelled, 128), host, rtol=0, atol=0)


def test_thread_and_precision_defaults():
    assert default_threads(torch.device("cpu")) is None  # torch's own choice: every core
    assert default_threads(torch.device("cuda")) >= 1
    assert autocast(torch.device("cpu"), "float32").__class__.__name__ == "nullcontext"
    with autocast(torch.device("cpu"), "bfloat16"):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_stream_matches_the_cpu_within_float_tolerance():
    from pathkit_core.plugins import get_component

    enc = get_component("encoder", "tiny-vit")()
    model = enc.load("cpu")
    batches = _batches(4, size=131)
    cpu = [f for _, f in EncoderRunner(enc, model, "cpu").stream(batches, tile_px=lambda b: 128)]
    gpu_model = enc.load("cuda")
    gpu = [f for _, f in EncoderRunner(enc, gpu_model, "cuda").stream(batches, tile_px=lambda b: 128)]
    for a, b in zip(cpu, gpu, strict=True):
        assert b.device.type == "cpu"
        torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-3)
