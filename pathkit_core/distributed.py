"""Process-wide care for multi-process (torchrun / accelerate launch) runs."""

from __future__ import annotations

import atexit
import time

_process_group_closer_registered = False
_GLOO_DRAIN_SECONDS = 0.25


def close_process_group_at_exit() -> None:
    """Destroy the distributed process group, then let gloo's worker threads finish, before the
    interpreter shuts down.

    A gloo worker thread frees each finished collective itself, and freeing the tensors of a
    Python-made one (`gather_object`'s all-gathers) needs the GIL. When that thread only gets
    there after the interpreter has started finalising, Python ends the thread inside a C++
    destructor and the process aborts ("terminate called without an active exception", exit -6)
    after all its work was written, failing the whole `accelerate launch`/`torchrun` job (about
    1 run in 10 on 2 cores). The process group stays referenced by the DDP reducer, so destroying
    it does not join the threads; releasing the GIL for a moment lets a waiting thread finish.
    Registered once per process."""
    global _process_group_closer_registered
    import torch.distributed as dist

    if _process_group_closer_registered or not (dist.is_available() and dist.is_initialized()):
        return
    _process_group_closer_registered = True

    def close() -> None:
        if dist.is_initialized():
            dist.destroy_process_group()
        time.sleep(_GLOO_DRAIN_SECONDS)

    atexit.register(close)
