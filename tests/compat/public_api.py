"""The public modules and their names, read from tests/compat/public_modules.txt and the code.

Used by the public-names test and by `make api-check` (.ci/api_check.py), so both guard one list.
"""

from __future__ import annotations

import importlib
from pathlib import Path

MODULES_FILE = Path(__file__).with_name("public_modules.txt")


def public_modules() -> dict[str, list[str] | None]:
    """{module: the names listed after its colon, or None when its `__all__` holds them}."""
    out: dict[str, list[str] | None] = {}
    for line in MODULES_FILE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        module, _, names = line.partition(":")
        out[module.strip()] = [n.strip() for n in names.split(",") if n.strip()] if names else None
    return out


def public_names() -> list[tuple[str, str]]:
    """Every (module, name) that is public: each module's `__all__`, or its listed names."""
    pairs = []
    for module, names in public_modules().items():
        if names is None:
            names = list(importlib.import_module(module).__all__)
        pairs.extend((module, name) for name in names)
    return pairs
