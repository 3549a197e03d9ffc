"""Command-line helpers that need neither typer nor rich, so that a command run without typer
(`pathkit score`, see `pathkit_sdk.commands`) imports neither on its way to a result."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from pathkit_core.contracts import PathkitError


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def split_names(values: Sequence[str] | None) -> list[str]:
    """Accept `--metric a,b --metric c` as ["a", "b", "c"]."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out


def parse_key_values(items: Sequence[str], flag: str) -> dict[str, Any]:
    """`["meteor=false", "n=3"]` -> {"meteor": False, "n": 3}; values are JSON when they parse."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise PathkitError(f"{flag} {item!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out
