"""Running an encoder over a stream of tile or image batches, doing nothing around the model that can be
avoided: `EncoderRunner`, the one place that owns how a batch reaches the model, for slide extraction
and whole-image encoding alike (what it does and why: docs/encoders.md, "Extraction").
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import Encoder, PathkitError

if TYPE_CHECKING:
    import torch

_PRECISIONS = {"fp32": "float32", "float32": "float32", "fp16": "float16", "float16": "float16",
               "bf16": "bfloat16", "bfloat16": "bfloat16"}
_DONE = object()


def compute_dtype(encoder: Encoder, device: torch.device, dtype: str | None) -> str:
    """The autocast dtype: the encoder's precision on GPU, float32 on CPU, unless `dtype` says."""
    if dtype not in (None, "auto"):
        if dtype not in _PRECISIONS:
            raise PathkitError(f"unknown dtype {dtype!r}; use auto, fp32, fp16 or bf16")
        return _PRECISIONS[dtype]
    if device.type == "cpu":
        return "float32"
    return _PRECISIONS.get(encoder.precision, "float32")


def autocast(device: torch.device, precision: str) -> Any:
    """torch.autocast in `precision` on `device`; nothing for float32."""
    import torch

    if precision == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=getattr(torch, precision))


def default_threads(device: torch.device) -> int | None:
    """Intra-op threads for the model, None to keep torch's own choice (every core, on a CPU); on a GPU
    at most 4, the tile readers want the cores (docs/encoders.md, "Extraction")."""
    if device.type == "cpu":
        return None
    # the cores this process may run on: its CPU affinity (a Slurm allocation)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cores // 4))


@dataclass
class Preprocess:
    """What is done to a uint8 batch (B, H, W, 3) before the model: resampling to `tile_px` and the
    encoder's `transform`, on the host, or with `on_device` on the device the uint8 batch travels to
    (docs/encoders.md, "Preprocessing"). Picklable: DataLoader workers run the host half."""

    encoder: Encoder
    on_device: bool = False

    def host(self, pixels: Any, tile_px: int | None = None) -> Any:
        """The host half: a float batch ready for the device, or the uint8 batch when `on_device`."""
        import torch

        batch = torch.as_tensor(pixels)
        return batch if self.on_device else self.device(batch, tile_px)

    def device(self, batch: torch.Tensor, tile_px: int | None = None) -> torch.Tensor:
        """The device half, where the batch is (uint8 batches only; float batches are already normalised)."""
        import torch

        from pathkit_core.wsi.resample import resize_tiles

        if batch.dtype != torch.uint8:
            return batch
        if tile_px is not None and batch.ndim == 4 and batch.shape[1] != tile_px:
            batch = resize_tiles(batch, tile_px)
        return self.encoder.transform(batch)


class EncoderRunner:
    """Features of an encoder's model for a stream of batches, as fast as the model allows.

    Batches are uint8 tiles or images (B, H, W, 3) as numpy arrays or tensors, which get the
    encoder's preprocessing (after resampling to `tile_px` when given), or float batches
    (B, 3, S, S) already normalised, which go to the model as they are. Features come back as
    float32 (B, D) CPU tensors, in order. `compile=True`: `torch.compile`, with the eager model as
    fallback (off by default: docs/encoders.md, "Extraction"); `threads` sets torch's intra-op
    threads while the runner works (`default_threads` when None; 0 leaves them).
    """

    def __init__(
        self,
        encoder: Encoder,
        model: Any,
        device: str | torch.device = "cpu",
        *,
        precision: str = "float32",
        compile: bool = False,  # noqa: A002 - the name torch uses
        threads: int | None = None,
    ) -> None:
        import torch

        self.encoder = encoder
        self.device = torch.device(device)
        self.precision = precision
        self._eager = model
        self._model = model
        self._compiled = False
        if compile:
            try:
                self._model = torch.compile(model)
                self._compiled = True
            except Exception as exc:  # noqa: BLE001 - compiling is an optimisation, never a failure
                self._compile_failed(exc)
        on_device = self.device.type != "cpu" and bool(encoder.transform_on_device)
        self.preprocess = Preprocess(encoder, on_device=on_device)
        self.threads = default_threads(self.device) if threads is None else (threads or None)

    @contextlib.contextmanager
    def _thread_count(self) -> Iterator[None]:
        """torch's intra-op threads set to `threads` while the runner works, then restored."""
        import torch

        before = torch.get_num_threads()
        if self.threads and self.threads != before:
            torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            if torch.get_num_threads() != before:
                torch.set_num_threads(before)

    # ------------------------------------------------------------------ one batch

    def encode(self, pixels: Any, tile_px: int | None = None) -> torch.Tensor:
        """Features of one batch, synchronously: float32 (B, D) on the CPU."""
        import torch

        with self._thread_count(), torch.inference_mode():
            return self._collect(self._launch(self._pin(self.preprocess.host(pixels, tile_px)), tile_px))

    def _pin(self, batch: torch.Tensor) -> torch.Tensor:
        if self.device.type == "cuda" and not batch.is_pinned():
            return batch.pin_memory()
        return batch

    def _launch(self, batch: torch.Tensor, tile_px: int | None) -> Any:
        """Copy to the device, finish the preprocessing and start the forward pass; on a GPU
        this returns before the kernels have run."""
        import torch

        x = batch.to(self.device, non_blocking=True)
        x = self.preprocess.device(x, tile_px)
        out = self._forward(x)
        if out.ndim != 2 or out.shape[0] != x.shape[0]:
            raise PathkitError(
                f"encoder {self.encoder.name!r} returned shape {tuple(out.shape)} for a batch of {x.shape[0]}; "
                "expected (batch, features)"
            )
        if self.device.type != "cuda":
            return out.float()
        host = torch.empty(out.shape, dtype=torch.float32, pin_memory=True)
        host.copy_(out.float(), non_blocking=True)  # converted on the device, then one async copy
        done = torch.cuda.Event()
        done.record()
        return host, done

    @staticmethod
    def _collect(launched: Any) -> torch.Tensor:
        if isinstance(launched, tuple):
            host, done = launched
            done.synchronize()
            return host
        return launched

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        with autocast(self.device, self.precision):
            if not self._compiled:
                return self._eager(x)
            try:
                return self._model(x)
            except Exception as exc:  # noqa: BLE001 - fall back to eager; a real model error repeats there
                self._compile_failed(exc)
                return self._eager(x)

    def _compile_failed(self, exc: BaseException) -> None:
        self._compiled = False
        self._model = self._eager
        warnings.warn(
            f"torch.compile of encoder {self.encoder.name!r} failed ({type(exc).__name__}: {exc}); "
            "running the eager model",
            RuntimeWarning,
            stacklevel=3,
        )

    # ------------------------------------------------------------------ a stream

    def stream(self, batches: Iterable[Any], *, pixels: Callable[[Any], Any] | None = None,
               tile_px: Callable[[Any], int | None] | None = None,
               prefetch: int = 2) -> Iterator[tuple[Any, torch.Tensor | None]]:
        """Yield (batch, features) for every batch of `batches`, in order.

        `pixels(batch)` picks the pixel array out of a batch item (default: the item itself);
        an item whose pixels are None is passed through with features None (a read error the
        caller records). `tile_px(batch)` is the size uint8 tiles are resampled to. Up to
        `prefetch` batches are read and preprocessed in a background thread ahead of the model
        (0: everything in the calling thread).
        """
        import torch

        pick = pixels or (lambda b: b)
        size = tile_px or (lambda b: None)

        def host_stage(item: Any) -> tuple[Any, Any]:
            px = pick(item)
            if px is None:
                return item, None
            return item, self._pin(self.preprocess.host(px, size(item)))

        staged = (host_stage(item) for item in batches)
        source = _prefetched(staged, prefetch) if prefetch > 0 else staged
        pending: tuple[Any, Any] | None = None
        try:
            with self._thread_count(), torch.inference_mode():
                for item, batch in source:
                    launched = None if batch is None else self._launch(batch, size(item))
                    if pending is not None:  # the GPU already runs this batch while we hand back the last
                        yield pending[0], self._collect(pending[1])
                        pending = None
                    if isinstance(launched, tuple):
                        pending = (item, launched)
                    else:  # computed already (CPU) or nothing to compute
                        yield item, launched
                if pending is not None:
                    yield pending[0], self._collect(pending[1])
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()


def _prefetched(items: Iterable[Any], depth: int) -> Iterator[Any]:
    """Iterate `items` in a daemon thread (`pathkit-prefetch`), at most `depth` items ahead; errors
    re-raised in order. The thread does the host work of the next batches (numpy, libjpeg-turbo and
    torch release the GIL) while the caller's thread runs the model. Closing (or garbage-collecting)
    the iterator stops the thread."""
    items = iter(items)
    ready: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(value: Any) -> bool:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                ready.put(value, timeout=0.1)
                return True
        return False

    def fill() -> None:
        import torch

        # This thread's own intra-op threads (OpenMP's are per thread): its torch work is small
        # per batch, and more threads would only take cores from the model.
        torch.set_num_threads(1)
        try:
            for item in items:
                if not put((True, item)):
                    return
            put((True, _DONE))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            put((False, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None and stop.is_set():
                with contextlib.suppress(Exception):
                    close()

    thread = threading.Thread(target=fill, daemon=True, name="pathkit-prefetch")
    thread.start()
    try:
        while True:
            ok, value = ready.get()
            if not ok:
                raise value
            if value is _DONE:
                return
            yield value
    finally:
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                ready.get_nowait()
        thread.join(timeout=10)
