"""docs/encoders.md's table of every encoder (issue 40) against the registry: every registered
patch encoder and slide encoder has a row, and each row's gating, features, magnification, tile
size and parameter count are the registered ones, so the table cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pathkit_core.plugins import get_component, get_plugin_manager

pytest.importorskip("pathkit_encoders")

DOC = Path(__file__).resolve().parents[3] / "docs" / "encoders.md"
COLUMNS = ("key", "kind", "source", "licence", "gated", "features from", "magnification", "tile px", "parameters")


def _table() -> dict[str, dict[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### Every encoder", 1)[1].split("\n### ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    header = tuple(c.strip() for c in lines[0].strip("|").split("|"))
    assert header == COLUMNS, header
    rows = {}
    for line in lines[2:]:
        cells = dict(zip(COLUMNS, (c.strip() for c in line.strip().strip("|").split("|")), strict=True))
        key = re.fullmatch(r"`([^`]+)`", cells["key"]).group(1)
        assert key not in rows, f"two rows for {key}"
        rows[key] = cells
    return rows


def _gating(weights) -> str:
    if weights is None or weights.filename is None:
        return "none"
    if weights.hf_hub_id is None:
        return "local file"
    return "yes" if weights.gated else "no"


def _expected(kind: str, name: str) -> dict[str, str]:
    cls = get_component(kind, name)
    spec = cls.tile_spec
    return {
        "kind": "patch" if kind == "encoder" else "slide",
        "gated": _gating(cls.weights),
        "features from": "-" if kind == "encoder" else f"`{cls.patch_encoder}`",
        "magnification": spec.magnification if spec else "any",
        "tile px": str(spec.tile_px) if spec else "any",
        "parameters": f"{cls.describe()['parameters']:,}",
    }


def test_every_registered_encoder_has_its_row_with_the_registered_facts():
    rows = _table()
    manager = get_plugin_manager()
    patch = sorted(manager.names("encoder"))
    slide = sorted(n for n in manager.names("slide-encoder") if not n.startswith("mean-"))
    assert len(patch) >= 25 and len(slide) >= 6
    for kind, names in (("encoder", patch), ("slide-encoder", slide)):
        for name in names:
            assert name in rows, f"docs/encoders.md has no row for the {kind} {name!r}"
            row = rows[name]
            assert row["source"] and row["licence"], name
            got = {k: row[k] for k in ("kind", "gated", "features from", "magnification", "tile px", "parameters")}
            assert got == _expected(kind, name), name
    means = [n for n in manager.names("slide-encoder") if n.startswith("mean-")]
    assert "mean-<encoder>" in rows and all(n[len("mean-"):] in patch for n in means)
    assert set(rows) == set(patch) | set(slide) | {"mean-<encoder>"}, "a row names no registered encoder"
