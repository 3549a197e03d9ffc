"""The hook the VQA task package adds to the plugin contract (see `add_component_kinds`)."""

from __future__ import annotations

from pathkit_core.hookspecs import Register, hookspec


@hookspec
def register_selectors(register: Register) -> None:
    """Call `register(SelectorClass)` for each evidence selector (a
    `pathkit_tasks.vqa.selection.Selector`: at most K of a case's patch features for one question)
    the plugin provides."""
