"""Tiles of a tile manifest streamed with worker processes, for a user's own scripts (docs/wsi.md,
section 5): `iter_tile_batches`, batches in manifest order through a shared-memory ring buffer, and
`tile_loader`, a torch DataLoader over the core's `TileReader` (or `TileStream`). Both read through
`pathkit_core.wsi.reader.TileReader` (`direct=` as there); numpy, torch and multiprocessing are imported
on first use (the CLI's start loads this package)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError

if TYPE_CHECKING:
    import numpy as np

    from pathkit_core.wsi.manifest import Manifest
    from pathkit_core.wsi.reader import TileReader


def _batch_worker(reader: TileReader, shm_name: str, shape: tuple[int, ...], worker: int, n_workers: int,
                  slots: int, free: Any, ready: Any) -> None:
    """Fill this worker's slots of the shared ring buffer with batches worker, worker+W, ..."""
    from multiprocessing import shared_memory

    import numpy as np

    shm = shared_memory.SharedMemory(name=shm_name)
    buf = np.ndarray(shape, dtype=np.uint8, buffer=shm.buf)
    batch_size, n = shape[1], len(reader)
    k = worker
    try:
        for j, k in enumerate(range(worker, -(-n // batch_size), n_workers)):
            free.acquire()
            slot = worker * slots + j % slots
            start, stop = k * batch_size, min(n, (k + 1) * batch_size)
            reader.read_batch(range(start, stop), out=buf[slot, : stop - start])
            ready.put((k, slot, stop - start, None))
    except BaseException as exc:  # noqa: BLE001 - reported to the consumer, which raises it
        ready.put((k, -1, 0, str(exc) or type(exc).__name__))
    finally:
        del buf
        reader.close()
        shm.close()


def iter_tile_batches(manifest: Manifest | str | Path, *, batch_size: int = 64, workers: int = 2,
                      slide_path: str | Path | None = None, copy: bool = True,
                      direct: bool | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (tile_indices, tiles) in manifest order; tiles is uint8 (B, tile_px, tile_px, 3).

    Worker processes write batches into a shared-memory ring buffer and pass only slot numbers back;
    each owns its slots and its batches (k, k+W, ...), so the in-order consumer never waits on a slot
    another holds (docs/wsi.md, section 5). `copy=False` yields views valid until the next batch.
    """
    import multiprocessing as mp
    import queue
    from multiprocessing import shared_memory

    import numpy as np

    from pathkit_core.wsi.reader import TileReader

    reader = TileReader(manifest, slide_path, direct=direct)
    n, tile_px = len(reader), reader.tile_px
    if n == 0:
        return
    if workers <= 0:
        buf = np.empty((batch_size, tile_px, tile_px, 3), np.uint8)
        for start in range(0, n, batch_size):
            stop = min(n, start + batch_size)
            tiles = reader.read_batch(range(start, stop), out=buf[: stop - start])
            yield np.arange(start, stop), tiles.copy() if copy else tiles
        reader.close()
        return
    n_batches = -(-n // batch_size)
    n_workers = min(workers, n_batches)
    slots = 3  # per worker: one being filled, one waiting, one being consumed
    shape = (n_workers * slots, batch_size, tile_px, tile_px, 3)
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    shm = shared_memory.SharedMemory(create=True, size=int(np.prod(shape)))
    procs: list[Any] = []
    buf: Any = None
    try:
        buf = np.ndarray(shape, dtype=np.uint8, buffer=shm.buf)
        free = [ctx.Semaphore(slots) for _ in range(n_workers)]
        ready = ctx.Queue()
        procs = [ctx.Process(target=_batch_worker, daemon=True,
                             args=(reader, shm.name, shape, w, n_workers, slots, free[w], ready))
                 for w in range(n_workers)]
        for proc in procs:
            proc.start()
        pending: dict[int, tuple[int, int]] = {}
        for k in range(n_batches):
            while k not in pending:
                try:
                    got, slot, count, error = ready.get(timeout=0.5)
                except queue.Empty:
                    dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                    if dead:
                        raise PathkitError(f"a tile reader worker for {reader.slide_path} died (exit code {dead[0]})"
                                           ) from None
                    continue
                if error is not None:
                    raise PathkitError(error)
                pending[got] = (slot, count)
            slot, count = pending.pop(k)
            indices = np.arange(k * batch_size, k * batch_size + count)
            if copy:
                batch = buf[slot, :count].copy()
                free[k % n_workers].release()
                yield indices, batch
            else:
                yield indices, buf[slot, :count]
                free[k % n_workers].release()
        for proc in procs:
            proc.join(timeout=10)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        del buf
        with contextlib.suppress(BufferError):  # a caller still holding a copy=False view
            shm.close()
        shm.unlink()


def _collate_uint8(batch: list[Any]) -> Any:
    import numpy as np
    import torch

    if batch and isinstance(batch[0], tuple):
        indices, tiles = zip(*batch, strict=True)
        return torch.as_tensor(indices, dtype=torch.int64), torch.from_numpy(np.stack(tiles))
    return torch.from_numpy(np.stack(batch))


def tile_loader(manifest: Manifest | str | Path, *, batch_size: int = 64, num_workers: int = 2,
                slide_path: str | Path | None = None, ordered: bool = True, direct: bool | None = None) -> Any:
    """A DataLoader of uint8 (B, tile_px, tile_px, 3) tensors in manifest order (`TileReader`, workers
    interleaved by batch); `ordered=False` yields (tile_indices, tiles) of `TileStream`, in shard order."""
    from torch.utils.data import DataLoader

    from pathkit_core.wsi.reader import TileReader, TileStream

    dataset = (TileReader if ordered else TileStream)(manifest, slide_path, direct=direct)
    return DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, collate_fn=_collate_uint8,
                      **({"prefetch_factor": 4} if num_workers > 0 else {}))


__all__ = ["iter_tile_batches", "tile_loader"]
