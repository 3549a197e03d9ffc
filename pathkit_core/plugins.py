"""Plugin manager: entry-point discovery, allow/block lists, error isolation, component registry."""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from pathkit_core import PROJECT_NAME, hookspecs
from pathkit_core.contracts import (
    COMPONENT_BASES,
    Component,
    PathkitError,
)

ENTRY_POINT_GROUP = PROJECT_NAME
ENV_LOAD = "PATHKIT_LOAD_PLUGINS"
ENV_DISABLE = "PATHKIT_DISABLE_PLUGINS"
# The `pathkit` distribution's own entry points (the built-in task packages, the bench and interop
# packages, the Otsu tissue segmenter) are loaded like any plugin's, always: allow/block lists do
# not apply to them.
BUILTIN_DISTRIBUTION = PROJECT_NAME

# The core's kinds and their hooks; tasks first: the other kinds' declared tasks are checked
# against the registered ones. A plugin adds kinds through `add_component_kinds`.
_HOOK_FOR_KIND = {
    "task": "register_tasks",
    "segmenter": "register_segmenters",
    "encoder": "register_encoders",
    "slide-encoder": "register_slide_encoders",
    "generator": "register_generators",
    "dataset": "register_datasets",
    "metric": "register_metrics",
}


class UnknownComponentError(PathkitError, LookupError):
    """A component name that no loaded plugin registered."""


class AmbiguousComponentError(PathkitError, LookupError):
    """A component name registered by two plugins."""


@dataclass
class PluginRecord:
    """What `pathkit list plugins` shows for one plugin module."""

    name: str
    module: str = ""
    distribution: str = ""
    version: str = ""
    status: str = "ok"  # "ok", "error" or "disabled"
    error: str = ""
    components: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in _HOOK_FOR_KIND})

    def fail(self, message: str) -> None:
        self.status = "error"
        self.error = f"{self.error}; {message}" if self.error else message

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "error": self.error,
            "components": {k: list(v) for k, v in self.components.items()},
        }


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _short_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Registry:
    """The loaded plugins and the components they registered, by kind and name."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.hooks: dict[str, str] = dict(_HOOK_FOR_KIND)
        self.bases: dict[str, type[Component]] = dict(COMPONENT_BASES)
        self.components: dict[str, dict[str, type[Component]]] = {k: {} for k in self.hooks}
        self.owners: dict[tuple[str, str], str] = {}
        self.conflicts: dict[tuple[str, str], list[str]] = {}
        # entry point name -> (value, distribution, version, the distribution's entry_points.txt or
        # "" when it has none on disk): what the index of entry points records to load it again
        self.entry_points: dict[str, tuple[str, str, str, str]] = {}
        self.pm.hook.add_hookspecs.call_historic(kwargs={"add": self.pm.add_hookspecs})
        self.pm.hook.add_component_kinds.call_historic(kwargs={"add": self.add_kind})

    @property
    def kinds(self) -> list[str]:
        """Every component kind: the core's, then those plugins added."""
        return list(self.hooks)

    def add_kind(self, kind: str, base: type[Component], hook: str, specs: Any) -> None:
        """A component kind a plugin adds (`add_component_kinds`): its base class, its register
        hook and the module holding that hook's specification."""
        if kind in self.hooks and self.bases.get(kind) is not base:
            raise PathkitError(f"component kind {kind!r} is added twice, with different base classes")
        if kind not in self.hooks:
            self.pm.add_hookspecs(specs)
        self.hooks[kind], self.bases[kind] = hook, base
        self.components.setdefault(kind, {})

    # ------------------------------------------------------------------ loading
    def load_entry_points(
        self, allow: set[str] | None = None, block: set[str] | None = None, *, builtin_only: bool = False
    ) -> None:
        """Load each `pathkit` entry point on its own; a failure is recorded, never fatal. The
        `pathkit` distribution's own entry points are always loaded; with `builtin_only`, only they."""
        from importlib import metadata  # tens of ms: only for a build that scans the distributions

        seen: set[str] = set()
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in seen:  # the same distribution visible twice on sys.path
                continue
            seen.add(ep.name)
            dist = ep.dist
            distribution = dist.metadata["Name"] if dist is not None else ""
            builtin = distribution == BUILTIN_DISTRIBUTION
            if builtin_only and not builtin:
                continue
            record = PluginRecord(
                name=ep.name,
                module=ep.value,
                distribution=distribution,
                version=dist.version if dist is not None else "",
            )
            if not builtin and ((allow is not None and ep.name not in allow) or (block and ep.name in block)):
                record.status = "disabled"
                self.records[ep.name] = record
                continue
            self._load(ep.name, ep.load, record)
            dist_path = getattr(dist, "_path", None)  # a distribution on disk (importlib's PathDistribution)
            self.entry_points[ep.name] = (ep.value, record.distribution, record.version,
                                          str(Path(dist_path) / "entry_points.txt") if dist_path else "")

    def load_recorded(self, entry_points: Mapping[str, Sequence[str]]) -> None:
        """Load the named entry points from what the index recorded of them ({name: (value,
        distribution, version, ...)}) without scanning the installed distributions."""
        for name, (value, distribution, version, *_) in sorted(entry_points.items()):
            record = PluginRecord(name=name, module=value, distribution=distribution, version=version)
            self._load(name, functools.partial(_load_value, value), record)

    def _load(self, name: str, load: Callable[[], Any], record: PluginRecord) -> None:
        """Import one plugin and register it; an import failure is the plugin's (recorded)."""
        try:
            plugin = load()
        except BaseException as exc:  # noqa: BLE001 - any import failure is the plugin's
            if isinstance(exc, KeyboardInterrupt):
                raise
            record.fail(_short_error(exc))
            import traceback

            record.traceback = traceback.format_exc()  # type: ignore[attr-defined]
            self.records[name] = record
            return
        self._register_plugin(name, plugin, record)

    def add_plugin(self, name: str, plugin: Any, distribution: str = "", version: str = "") -> None:
        """Register an in-process plugin object or module (tests, notebooks)."""
        module = getattr(plugin, "__name__", type(plugin).__name__)
        self._register_plugin(
            name, plugin, PluginRecord(name, module, distribution or "(inline)", version)
        )

    def _register_plugin(self, name: str, plugin: Any, record: PluginRecord) -> None:
        self.records[name] = record
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # noqa: BLE001
            record.fail(_short_error(exc))

    def check(self) -> None:
        """Catch hook implementations whose names match no spec (misspellings).

        The offending plugin is marked `error` and unregistered; others keep working.
        """
        callers = {name: getattr(self.pm.hook, name) for name in dir(self.pm.hook) if not name.startswith("_")}
        known = [name for name, caller in callers.items() if caller.spec is not None]  # the hook specs
        for hook_name, caller in callers.items():
            if caller.spec is not None:
                continue
            for impl in caller.get_hookimpls():
                if impl.hookwrapper or impl.optionalhook:
                    continue
                import difflib

                close = difflib.get_close_matches(hook_name, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                rec = self.records.get(impl.plugin_name)
                if rec is not None:
                    rec.fail(f"unknown hook {hook_name!r}{hint}")
                self.pm.unregister(name=impl.plugin_name)
        self.pm.check_pending()

    def collect(self) -> None:
        """Call every register_* hook plugin by plugin, attributing each component."""
        for kind, hook_name in self.hooks.items():
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():  # registration order
                rec = self.records.setdefault(impl.plugin_name, PluginRecord(impl.plugin_name))
                register = self._make_register(kind, impl.plugin_name, rec)
                try:
                    impl.function(register=register)
                except Exception as exc:  # noqa: BLE001
                    rec.fail(f"{hook_name} raised {_short_error(exc)}")

    def _make_register(self, kind: str, plugin_name: str, rec: PluginRecord):
        base = self.bases[kind]

        def register(component: type[Component]) -> type[Component]:
            if not (isinstance(component, type) and issubclass(component, base)):
                raise PathkitError(
                    f"{self.hooks[kind]} got {component!r}, which is not a subclass of "
                    f"{base.__module__}.{base.__name__}"
                )
            name = component.name
            if not name or not isinstance(name, str):
                raise PathkitError(f"{component.__name__} has no `name` attribute")
            if kind in ("dataset", "generator", "metric"):
                declared = [component.task] if kind == "dataset" else list(component.tasks)
                bad = [t for t in declared if t not in self.components["task"]]
                if bad or (kind == "dataset" and not declared[0]):
                    raise PathkitError(
                        f"{kind} {name!r} declares unknown task(s) {bad or [declared[0]]}; registered tasks: "
                        f"{', '.join(self.names('task')) or 'none'} (a task plugin registers more)"
                    )
            key = (kind, name)
            owner = self.owners.get(key)
            if owner is not None and self.components[kind][name] is not component:
                self.conflicts.setdefault(key, [owner]).append(plugin_name)
                message = (
                    f"duplicate {kind} name {name!r}: registered by plugin {owner!r} and by "
                    f"plugin {plugin_name!r}; disable one with {ENV_DISABLE}"
                )
                rec.fail(message)
                other = self.records.get(owner)
                if other is not None:
                    other.fail(message)
                return component
            self.components[kind][name] = component
            self.owners[key] = plugin_name
            rec.components.setdefault(kind, []).append(name)
            return component

        return register

    # ------------------------------------------------------------------ lookup
    def names(self, kind: str) -> list[str]:
        return sorted(self.components[kind])

    def get(self, kind: str, name: str) -> type[Component]:
        """The component class registered as `name`; errors list close matches."""
        if kind not in self.components:
            raise PathkitError(f"unknown component kind {kind!r}; known: {', '.join(self.kinds)}")
        if (kind, name) in self.conflicts:
            owners = " and ".join(repr(p) for p in self.conflicts[(kind, name)])
            raise AmbiguousComponentError(
                f"{kind} {name!r} is registered by plugins {owners}; "
                f"disable one with {ENV_DISABLE}=<plugin>"
            )
        base_name, _, _view = name.partition(":")
        found = self.components[kind].get(name) or (
            self.components[kind].get(base_name) if _view else None
        )
        if found is None:
            import difflib

            close = difflib.get_close_matches(name, self.names(kind), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            known = ", ".join(self.names(kind)) or "none"
            raise UnknownComponentError(f"unknown {kind} {name!r}{hint} (available: {known})")
        return found

    def find(self, name: str) -> list[type[Component]]:
        """Every component of any kind called `name` (for `pathkit info`)."""
        return [comps[name] for comps in self.components.values() if name in comps]

    def owner_of(self, kind: str, name: str) -> PluginRecord | None:
        plugin = self.owners.get((kind, name.partition(":")[0]))
        return self.records.get(plugin) if plugin else None

    def call_register_commands(self, app: Any) -> None:
        for impl in self.pm.hook.register_commands.get_hookimpls():
            try:
                impl.function(app=app)
            except Exception as exc:  # noqa: BLE001
                rec = self.records.setdefault(impl.plugin_name, PluginRecord(impl.plugin_name))
                rec.fail(f"register_commands raised {_short_error(exc)}")

    def doctor_rows(self) -> list[tuple[str, str, str]]:
        """Every plugin's `doctor_checks` rows; a check that raises is itself an error row."""
        rows: list[tuple[str, str, str]] = []
        for impl in self.pm.hook.doctor_checks.get_hookimpls():
            try:
                rows.extend((str(a), str(b), str(c)) for a, b, c in impl.function() or ())
            except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
                rows.append((f"{impl.plugin_name} check", "error", _short_error(exc)))
        return rows

    def report_sections(self, hook_name: str, subject: Any) -> list[tuple[str, list[Any] | BaseException]]:
        """(plugin, its sections) from each implementation of report hook `hook_name`
        ("report_sections", or one a plugin added); a plugin that raises gives its exception,
        so that the report shows the failure and every other section."""
        out: list[tuple[str, list[Any] | BaseException]] = []
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            try:
                out.append((impl.plugin_name, list(impl.function(subject) or [])))
            except Exception as exc:  # noqa: BLE001 - one broken section must not hide the report
                out.append((impl.plugin_name, exc))
        return out

    def default_demo(self) -> str:
        """The dataset the `default_demo` hook names (the embedded demo of `pathkit run`)."""
        name = self.pm.hook.default_demo()
        if not name:
            raise PathkitError("no plugin names a default demo (hook default_demo); give --dataset, "
                               "--encoder and --generator")
        return str(name)

    def distributions(self) -> dict[str, str]:
        """Versions of every plugin distribution that loaded (for provenance)."""
        return {
            r.distribution: r.version
            for r in self.records.values()
            if r.distribution and r.status == "ok"
        }


def build_registry(
    *,
    autoload: bool = True,
    plugins: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
    allow: set[str] | None = None,
    block: set[str] | None = None,
) -> Registry:
    """A fresh registry. With `autoload`, entry points of the `pathkit` group are loaded,
    filtered by `allow`/`block` (default: the PATHKIT_LOAD_PLUGINS / PATHKIT_DISABLE_PLUGINS
    environment variables); `plugins` adds inline plugin objects by name."""
    registry = Registry()
    registry.load_entry_points(
        allow if allow is not None else _env_list(ENV_LOAD),
        block if block is not None else (_env_list(ENV_DISABLE) or set()),
        builtin_only=not autoload,
    )
    items = plugins.items() if isinstance(plugins, Mapping) else plugins
    for name, plugin in items:
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        registry.add_plugin(name, plugin)
    registry.check()
    registry.collect()
    return registry


def _core_version() -> str:
    import pathkit_core

    return pathkit_core.__version__


_REGISTRY: Registry | None = None
# Registries of the built-in plugins plus one entry point, built for `get_component` from the index.
_PARTIAL: dict[str, Registry] = {}
ENV_INDEX = "PATHKIT_PLUGIN_INDEX"  # where the index of entry points is kept ("off": nowhere)


def get_plugin_manager() -> Registry:
    """The process-wide registry, built on first use (never at import time)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = build_registry()
        _write_index(_REGISTRY)
    return _REGISTRY


def set_plugin_manager(registry: Registry | None) -> None:
    """Replace (or with None, forget) the process-wide registry; used by tests."""
    global _REGISTRY
    _REGISTRY = registry
    _PARTIAL.clear()


def get_component(kind: str, name: str) -> type[Component]:
    """The component `name` of `kind`. Before the whole registry is built, a process that needs a
    few components (`pathkit score`) loads only the entry points that provide them and the tasks
    they declare, as recorded in the index of entry points (written by every full build); without
    a valid index, or when the index names no single provider, the whole registry is built."""
    if _REGISTRY is None:
        registry = _registry_for(kind, name)
        if registry is not None:
            with contextlib.suppress(PathkitError):
                return registry.get(kind, name)
    return get_plugin_manager().get(kind, name)


def plain_command(name: str) -> Callable[[list[str]], int | None] | None:
    """The function that runs command `name` without typer (`plain_commands`), from the index of
    entry points; None without a valid index or when no plugin offers one."""
    index = _read_index()
    target = (index or {}).get("commands", {}).get(name)
    if not isinstance(target, str):
        return None
    try:
        return _load_value(target)
    except (ImportError, AttributeError):
        return None


def _load_value(value: str) -> Any:
    """The object an entry point's value names (`module`, `module:attribute.path`, extras ignored)."""
    module, _, attribute = value.partition("[")[0].partition(":")
    found: Any = importlib.import_module(module.strip())
    for part in filter(None, attribute.strip().split(".")):
        found = getattr(found, part)
    return found


# --------------------------------------------------------------------------- entry-point index
# What a full build learnt, for processes that need a few components: which entry point provides
# each component and which tasks it declares, how to load each entry point (its value,
# distribution and version), and the commands plugins run without typer. It is valid while
# `_validity` of its recorded files is unchanged: the core's version, the allow/block lists,
# sys.path, the distributions on it (each *.dist-info / *.egg-info folder by name and time: an
# installed, removed or reinstalled distribution), and the size and time of every loaded entry
# point's module and of its distribution's entry_points.txt. Checking that is a few stat calls;
# nothing is imported and no distribution's metadata is read.


def cache_home() -> Path:
    """pathkit's cache folder: `$XDG_CACHE_HOME/pathkit`, else `~/.cache/pathkit`."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pathkit"


def _index_path() -> Path | None:
    given = os.environ.get(ENV_INDEX)
    if given:
        return None if given == "off" else Path(given)
    return cache_home() / "plugin-index.json"


def _validity(files: Sequence[str]) -> str:
    """The facts the index holds for (above), hashed."""
    import hashlib
    import sys

    parts: list[Any] = [_core_version(), os.environ.get(ENV_LOAD), os.environ.get(ENV_DISABLE), sys.path]
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                parts.append(sorted((e.name, e.stat().st_mtime_ns) for e in found
                                    if e.name.endswith((".dist-info", ".egg-info"))))
        except OSError:
            parts.append(None)
    for name in files:
        try:
            st = os.stat(name)
            parts.append([name, st.st_size, st.st_mtime_ns])
        except OSError:
            parts.append([name, None])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _module_file(value: str) -> str | None:
    """The file of the module an entry point's value names (loaded by the build, or found)."""
    import sys

    module = value.partition("[")[0].partition(":")[0].strip()
    loaded = sys.modules.get(module)
    if loaded is not None:
        return getattr(loaded, "__file__", None)
    import importlib.util

    try:  # a plugin that failed to import: its file, so that a fix of it is seen
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def _write_index(registry: Registry) -> None:
    """Record which entry point provides each component (never fatal: an unwritable cache only
    means later processes build the whole registry). Nothing is written when an entry point's
    files cannot be named (a distribution not on disk): its change could not be seen."""
    path = _index_path()
    if path is None:
        return
    files: list[str] = []
    for value, _, _, entry_points_txt in registry.entry_points.values():
        if not entry_points_txt:
            return
        module_file = _module_file(value)  # none for a plugin whose module is missing: its entry_points.txt
        files.extend((entry_points_txt, module_file) if module_file else (entry_points_txt,))
    files = sorted(set(files))
    providers: dict[str, dict[str, list[str]]] = {kind: {} for kind in registry.kinds}
    tasks: dict[str, dict[str, list[str]]] = {kind: {} for kind in registry.kinds}
    for (kind, name), owner in registry.owners.items():
        providers[kind][name] = registry.conflicts.get((kind, name), [owner])
        component = registry.components[kind][name]
        if kind == "dataset":
            tasks[kind][name] = [component.task]
        elif kind in ("generator", "metric"):
            tasks[kind][name] = list(component.tasks)
    commands: dict[str, str] = {}
    for impl in registry.pm.hook.plain_commands.get_hookimpls():
        try:  # a plugin whose answer is broken only keeps its commands on typer
            offered = impl.function()
        except Exception:  # noqa: BLE001
            continue
        if isinstance(offered, Mapping):
            commands.update({str(k): v for k, v in offered.items() if isinstance(v, str) and ":" in v})
    index = {"key": _validity(files), "files": files, "entry_points": registry.entry_points,
             "providers": providers, "tasks": tasks, "commands": commands}
    with contextlib.suppress(OSError, TypeError, ValueError):
        from pathkit_core.workspace import atomic_write_json

        atomic_write_json(path, index)


def _read_index() -> dict[str, Any] | None:
    """The index of entry points when there is one and it is valid, else None."""
    path = _index_path()
    if path is None:
        return None
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
        valid = isinstance(index, dict) and index.get("key") == _validity(index["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return index if valid else None


def _registry_for(kind: str, name: str) -> Registry | None:
    """A registry of the one entry point the index names for (kind, name) and those of the tasks
    it declares, or None (no index, a stale one, several providers, a kind a plugin added)."""
    if kind not in _HOOK_FOR_KIND:
        return None  # the plugin adding the kind would have to be found too: the full build does
    index = _read_index()
    if index is None:
        return None
    try:
        base = name.partition(":")[0]
        owners = index["providers"][kind][base]
        needed = set(owners) if isinstance(owners, list) and len(owners) == 1 else None
        for task in index["tasks"].get(kind, {}).get(base, []) if needed else ():
            task_owners = index["providers"]["task"][task]
            needed = needed | set(task_owners) if len(task_owners) == 1 else None
            if needed is None:
                break
        entry_points = {ep: index["entry_points"][ep] for ep in needed or ()}
    except (KeyError, TypeError):
        return None
    if not needed:
        return None
    key = ",".join(sorted(entry_points))
    if key not in _PARTIAL:
        registry = Registry()
        registry.load_recorded(entry_points)
        registry.check()
        registry.collect()
        _PARTIAL[key] = registry
    return _PARTIAL[key]
