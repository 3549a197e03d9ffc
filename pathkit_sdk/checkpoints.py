"""Reading a checkpoint file and fitting it to a model, for encoder and generator plugins: its sha256
checked against the published one, tensors read safely (safetensors, or a pickle loaded weights-only,
common wrappers unwrapped) and loaded strictly, every missing, unexpected or misshapen key named
(finding the file is the core's: `pathkit_core.features.weights`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pathkit_core.contracts import PathkitError, brief_list
from pathkit_core.features.weights import SAFETENSORS_SUFFIXES, file_sha256

if TYPE_CHECKING:
    import torch

_MAX_LISTED = 8  # keys named in a mismatch message


def verify_sha256(path: str | Path, expected: str | None, encoder: str) -> str:
    """The file's sha256; a PathkitError when the record pins another value."""
    actual = file_sha256(path)
    if expected and actual.lower() != expected.lower():
        raise PathkitError(
            f"checkpoint {path} for encoder {encoder!r} has sha256 {actual}, but the published "
            f"checkpoint has {expected}: the file is corrupt, truncated or another model"
        )
    return actual


def read_state_dict(path: str | Path, *, wrappers: Sequence[str] = ()) -> dict[str, torch.Tensor]:
    """Tensors of a checkpoint file: safetensors directly, pickles only with weights_only=True.

    Common wrappers ({"state_dict": ...}, {"model": ...}) are unwrapped, after an encoder's own
    `wrappers` (e.g. EAGLE's {"tile_model": ...}).
    """
    import torch

    path = Path(path)
    if not path.is_file():
        raise PathkitError(f"checkpoint {path} does not exist")
    if path.suffix in SAFETENSORS_SUFFIXES:
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(path), device="cpu")
        except (SafetensorError, OSError, ValueError) as exc:
            raise PathkitError(f"checkpoint {path} is not a readable safetensors file: {exc}") from None
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except RuntimeError:
        # mmap needs the zip format; legacy pickles load without it (still weights-only).
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001
            raise PathkitError(f"checkpoint {path} cannot be read as a weights-only torch file: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - UnpicklingError for anything that is not plain tensors
        raise PathkitError(
            f"checkpoint {path} cannot be read as a weights-only torch file "
            f"(pickled code is refused): {exc}"
        ) from None
    for key in (*wrappers, "state_dict", "model", "module"):
        if isinstance(obj, Mapping) and key in obj and isinstance(obj[key], Mapping):
            obj = obj[key]
    if not isinstance(obj, Mapping) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise PathkitError(f"checkpoint {path} does not hold a flat mapping of tensor names to tensors")
    return dict(obj)


def state_dict_mismatches(
    model: torch.nn.Module, state_dict: Mapping[str, torch.Tensor]
) -> tuple[list[str], list[str], list[str]]:
    """(missing keys, unexpected keys, 'key: checkpoint shape vs model shape') against `model`."""
    expected = model.state_dict(keep_vars=True)
    missing = [k for k in expected if k not in state_dict]
    unexpected = [k for k in state_dict if k not in expected]
    shapes = [
        f"{k}: checkpoint {tuple(state_dict[k].shape)} vs model {tuple(expected[k].shape)}"
        for k in expected
        if k in state_dict and tuple(state_dict[k].shape) != tuple(expected[k].shape)
    ]
    return missing, unexpected, shapes


def load_state_dict_checked(
    model: torch.nn.Module,
    state_dict: Mapping[str, torch.Tensor],
    *,
    source: str | Path,
    architecture: str,
) -> torch.nn.Module:
    """Load `state_dict` into `model` (possibly built on the meta device) strictly.

    Any missing or unexpected key or shape mismatch raises a PathkitError naming them, so a
    checkpoint of another architecture is never half-loaded. Parameters end up float32 on CPU.
    """
    import torch

    missing, unexpected, shapes = state_dict_mismatches(model, state_dict)
    parts = [f"{len(found)} {what}: {brief_list(found, _MAX_LISTED)}" for found, what in
             ((missing, "missing key(s)"), (unexpected, "unexpected key(s)"), (shapes, "shape mismatch(es)")) if found]
    if parts:
        raise PathkitError(
            f"checkpoint {source} does not fit the {architecture} architecture: " + "; ".join(parts)
        )
    on_meta = any(t.is_meta for t in model.state_dict().values())
    if on_meta:
        # assign=True adopts the checkpoint tensors instead of copying into randomly
        # initialised ones: no second copy of a billion-parameter model in memory.
        model.load_state_dict(dict(state_dict), strict=True, assign=True)
        left = [n for n, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_meta]
        if left:
            raise PathkitError(
                f"{architecture}: tensors not provided by {source} and not rebuildable: {brief_list(left, _MAX_LISTED)}"
            )
    else:
        model.load_state_dict(dict(state_dict), strict=True)
    return model.to(torch.float32)


__all__ = [
    "verify_sha256", "read_state_dict", "state_dict_mismatches", "load_state_dict_checked"
]
