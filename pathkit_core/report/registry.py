"""The component registry of a report object: the one it was given, else the process-wide one."""

from __future__ import annotations

from typing import Any


class UsesRegistry:
    """A mixin for objects that read components (metric classes, their sections) while they write
    a report: `_registry` is the registry given to the constructor, or None for the process-wide
    one, which is looked up on first use (building it imports every plugin)."""

    _registry: Any = None

    @property
    def registry(self) -> Any:
        if self._registry is None:
            from pathkit_core.plugins import get_plugin_manager

            self._registry = get_plugin_manager()
        return self._registry
