"""A generator's own safetensors file (BiGen's knowledge bank, PathoArgus's learned relevance):
tensors, a format tag and JSON-able metadata, written atomically and read back with a one-line
error naming the file."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError


def write_tensor_file(path: Path, tensors: Mapping[str, Any], metadata: Mapping[str, str]) -> Path:
    """Write `tensors` (torch) with `metadata` to `path`, its folder made, atomically."""
    from safetensors.torch import save_file

    from pathkit_core.workspace import atomic_write_with

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_with(path, lambda tmp: save_file(dict(tensors), str(tmp), metadata=dict(metadata)))
    return path


def read_tensor_file(path: Path, what: str, fmt: str, tensors: Iterable[str], fields: Iterable[str], *,
                     framework: str = "pt", json_fields: Iterable[str] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors, metadata fields) of the `what` file at `path` written in format `fmt`; the
    `json_fields` decoded. A file that is not one, or lacks a tensor or a field, is refused."""
    from safetensors import SafetensorError, safe_open

    decoded = set(json_fields)
    try:
        with safe_open(str(path), framework=framework) as handle:
            metadata = handle.metadata() or {}
            arrays = {key: handle.get_tensor(key) for key in tensors}
        if metadata.get("format") != fmt:
            raise PathkitError(f"{what} {path}: unknown format {metadata.get('format')!r}")
        values = {key: json.loads(metadata[key]) if key in decoded else metadata[key] for key in fields}
    except (OSError, SafetensorError, KeyError, json.JSONDecodeError) as exc:
        raise PathkitError(f"{what} {path} is unreadable: {exc}") from exc
    return arrays, values
