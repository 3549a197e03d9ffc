"""Task `multiple-choice-vqa` and the evidence `selector` component kind it adds to the registry
(plugin module of the entry point)."""

from __future__ import annotations

from pathkit_core import hookimpl


@hookimpl
def add_component_kinds(add):
    from pathkit_tasks.vqa import hookspecs
    from pathkit_tasks.vqa.selection import Selector

    add("selector", Selector, "register_selectors", hookspecs)


@hookimpl
def register_tasks(register):
    from pathkit_tasks.vqa.task import MultipleChoiceVQATask

    register(MultipleChoiceVQATask)
