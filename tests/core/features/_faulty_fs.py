"""Imported by a soak worker to make its filesystem fail midway (`python -c "import
tests.core.features._faulty_fs; ..."`): after `PATHKIT_FAULT_AFTER` feature files, the next one
is half written and then refused with `PATHKIT_FAULT` (ENOSPC or EIO), and so is every later
flush to disk (fsync) of this process, as a full or failing disk would refuse them.
"""

from __future__ import annotations

import errno
import os

import safetensors.torch

_CODE = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO}[os.environ["PATHKIT_FAULT"]]
_AFTER = int(os.environ["PATHKIT_FAULT_AFTER"])
_state = {"written": 0, "broken": False}
_save_file = safetensors.torch.save_file
_fsync = os.fsync


def _refuse(path: object = None) -> OSError:
    return OSError(_CODE, os.strerror(_CODE), None if path is None else str(path))


def save_file(tensors, filename, metadata=None):  # noqa: ANN001 - safetensors' own signature
    if _state["broken"] or _state["written"] >= _AFTER:
        _state["broken"] = True
        _save_file(tensors, filename, metadata=metadata)
        os.truncate(filename, os.path.getsize(filename) // 2)  # the disk filled up mid-file
        raise _refuse(filename)
    _state["written"] += 1
    return _save_file(tensors, filename, metadata=metadata)


def fsync(fd: int) -> None:
    if _state["broken"]:
        raise _refuse()
    _fsync(fd)


safetensors.torch.save_file = save_file
os.fsync = fsync
