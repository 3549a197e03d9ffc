"""Plugin manager: entry-point discovery, allow/block lists, error isolation, component registry."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy

from pathkit_core import PROJECT_NAME, __version__, hookspecs
from pathkit_core.contracts import COMPONENT_BASES, Component, PathkitError
from pathkit_core.random_copy import random_base, random_copy

ENTRY_POINT_GROUP = PROJECT_NAME
ENV_LOAD = "PATHKIT_LOAD_PLUGINS"
ENV_DISABLE = "PATHKIT_DISABLE_PLUGINS"
# The `pathkit` distribution's own entry points (the built-in task packages, the bench and interop
# packages, the Otsu tissue segmenter) are loaded like any plugin's, always: allow/block lists do
# not apply to them.
BUILTIN_DISTRIBUTION = PROJECT_NAME
# The distributions pathkit ships. On a name clash they yield the plain name to a third party's plugin
# (docs/plugin-authors.md, "Names and collisions"): a built-in added in a later release must not take
# a name away from a plugin already installed; the built-in stays reachable as `distribution:name`.
BUILTIN_DISTRIBUTIONS = frozenset(
    {PROJECT_NAME, "pathkit-datasets", "pathkit-encoders", "pathkit-generators", "pathkit-metrics"})

# The core's kinds and their hooks (kind "slide-reader": hook `register_slide_readers`), in the order of
# COMPONENT_BASES, tasks first: the other kinds' declared tasks are checked against the registered ones.
# A plugin adds kinds through `add_component_kinds`.
_HOOK_FOR_KIND = {kind: f"register_{kind.replace('-', '_')}s" for kind in COMPONENT_BASES}


class UnknownComponentError(PathkitError, LookupError):
    """A component name that no loaded plugin registered."""


class AmbiguousComponentError(PathkitError, LookupError):
    """A component name registered by two plugins (kept for callers that catch it: since pathkit 0.2 a
    clash resolves by the stated order instead of raising)."""


@dataclass(frozen=True)
class Provider:
    """One registration of a component name: the plugin, its distribution and the class."""

    plugin: str
    distribution: str
    component: type[Component]

    @property
    def builtin(self) -> bool:
        return self.distribution in BUILTIN_DISTRIBUTIONS

    def rank(self) -> tuple[bool, str, str]:
        """Who keeps a shared plain name: third parties before built-ins, then by distribution name,
        then by plugin (entry point) name; the smallest wins."""
        return (self.builtin, self.distribution, self.plugin)


@dataclass
class PluginRecord:
    """What `pathkit list plugins` shows for one plugin module."""

    name: str
    module: str = ""
    distribution: str = ""
    version: str = ""
    status: str = "ok"  # "ok", "incompatible" (loaded, but its pathkit requirement is unmet), "error", "disabled"
    error: str = ""
    components: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in _HOOK_FOR_KIND})
    requires_pathkit: str = ""  # the distribution's declared requirement on pathkit ("" when none)
    pathkit_version: str = ""  # the installed pathkit it was checked against
    clashes: list[str] = field(default_factory=list)  # names it shares with other plugins, and who keeps each
    deprecations: list[str] = field(default_factory=list)  # moved pathkit names its import used (file:line: warning)

    def fail(self, message: str) -> None:
        self.status = "error"
        self.error = f"{self.error}; {message}" if self.error else message

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def check_requirement(self, requirements: Sequence[str] | None, installed: str) -> None:
        """Mark the plugin `incompatible` when its distribution's requirement on pathkit (from its
        metadata, `Requires-Dist`) excludes the installed version; it is still loaded."""
        wanted = pathkit_requirement(requirements)
        if wanted is None:
            return
        self.requires_pathkit, self.pathkit_version = str(wanted), installed
        if not wanted.specifier.contains(installed, prereleases=True):
            self.status = "incompatible"
            self.error = f"requires {wanted}, installed pathkit is {installed}"


def pathkit_requirement(requirements: Sequence[str] | None) -> Any:
    """The `pathkit` requirement among a distribution's `Requires-Dist` lines (markers for extras or
    other environments ignored), or None."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    for line in requirements or ():
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == PROJECT_NAME and (req.marker is None or req.marker.evaluate({"extra": ""})):
            return req
    return None


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _load_noting_deprecations(load: Callable[[], Any], record: PluginRecord) -> Any:
    """`load()`, with the moved pathkit names its import used noted on `record` (shown by `pathkit list
    plugins` and `pathkit doctor`); every warning is then given back to the process's own filters."""
    import warnings

    from pathkit_core._deprecation import REMOVED_IN

    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DeprecationWarning)
            return load()
    finally:  # the recording block has ended: each warning goes to the caller's filters (shown or not)
        for w in caught:
            if issubclass(w.category, DeprecationWarning) and f"removed in pathkit {REMOVED_IN}" in str(w.message):
                record.deprecations.append(f"{w.filename}:{w.lineno}: {w.message}")
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def _short_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


_INDEX_GONE = ("the index of entry points was removed in pathkit 0.2 (entry points are loaded directly; "
               "PATHKIT_PLUGIN_INDEX has no effect)")


def _index_gone(name: str) -> None:
    import warnings

    warnings.warn(f"{name} is deprecated: {_INDEX_GONE}; it will be removed in pathkit 0.3", DeprecationWarning,
                  stacklevel=3)


class _EntryPointsOfRecords:
    """`Registry.entry_points` of 0.1 (what the removed index recorded): {name: (module, distribution,
    version, "")} of the loaded plugins, derived from their records; deprecated."""

    def __get__(self, registry: Any, owner: Any = None) -> Any:
        _index_gone("Registry.entry_points")
        if registry is None:
            return self
        return {name: (r.module, r.distribution, r.version, "") for name, r in registry.records.items()}


def __getattr__(name: str) -> Any:
    if name == "ENV_INDEX":
        _index_gone("pathkit_core.plugins.ENV_INDEX")
        return "PATHKIT_PLUGIN_INDEX"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Registry:
    """The loaded plugins and the components they registered, by kind and name."""

    entry_points = _EntryPointsOfRecords()  # deprecated in 0.2 (the index is gone)

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.hooks: dict[str, str] = dict(_HOOK_FOR_KIND)
        self.bases: dict[str, type[Component]] = dict(COMPONENT_BASES)
        self.components: dict[str, dict[str, type[Component]]] = {k: {} for k in self.hooks}
        self.owners: dict[tuple[str, str], str] = {}
        # (kind, name) -> the plugins registering it, the one keeping the plain name first
        self.conflicts: dict[tuple[str, str], list[str]] = {}
        self.providers: dict[tuple[str, str], list[Provider]] = {}
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
    def load_entry_points(self, allow: set[str] | None = None, block: set[str] | None = None, *,
                          builtin_only: bool = False) -> None:
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
            record = PluginRecord(ep.name, ep.value, distribution, dist.version if dist is not None else "")
            if not builtin and dist is not None:
                record.check_requirement(getattr(dist, "requires", None), __version__)
            if not builtin and ((allow is not None and ep.name not in allow) or (block and ep.name in block)):
                record.status = "disabled"
                self.records[ep.name] = record
                continue
            self._load(ep.name, ep.load, record)

    def load_recorded(self, entry_points: Mapping[str, Sequence[str]]) -> None:
        """Load the named entry points from their values ({name: (value, distribution, version,
        ...)}) without scanning the installed distributions."""
        for name, (value, distribution, version, *_) in sorted(entry_points.items()):
            record = PluginRecord(name=name, module=value, distribution=distribution, version=version)
            self._load(name, functools.partial(_load_value, value), record)

    def _load(self, name: str, load: Callable[[], Any], record: PluginRecord) -> None:
        """Import one plugin and register it; an import failure is the plugin's (recorded)."""
        try:
            plugin = _load_noting_deprecations(load, record)
        except BaseException as exc:  # noqa: BLE001 - any import failure is the plugin's
            if isinstance(exc, KeyboardInterrupt):
                raise
            record.fail(_short_error(exc))
            self.records[name] = record
            return
        self._register_plugin(name, plugin, record)

    def add_plugin(self, name: str, plugin: Any, distribution: str = "", version: str = "") -> None:
        """Register an in-process plugin object or module (tests, notebooks)."""
        module = getattr(plugin, "__name__", type(plugin).__name__)
        self._register_plugin(name, plugin, PluginRecord(name, module, distribution or "(inline)", version))

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

    def collect(self, kinds: Iterable[str] | None = None) -> None:
        """Call every register_* hook (or those of `kinds` only) plugin by plugin, attributing each
        component; then say each shared name's clash on every plugin involved."""
        wanted = set(self.hooks if kinds is None else kinds)
        for kind, hook_name in self.hooks.items():
            if kind not in wanted:
                continue
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():  # registration order
                rec = self.records.setdefault(impl.plugin_name, PluginRecord(impl.plugin_name))
                register = self._make_register(kind, impl.plugin_name, rec)
                try:
                    impl.function(register=register)
                except Exception as exc:  # noqa: BLE001
                    rec.fail(f"{hook_name} raised {_short_error(exc)}")
        self._note_clashes()

    def qualified(self, kind: str, name: str, provider: Provider) -> str:
        """`distribution:name`, or `plugin:name` when the distribution registers the name twice."""
        same = [p for p in self.providers.get((kind, name), ()) if p.distribution == provider.distribution]
        prefix = provider.distribution if provider.distribution and len(same) == 1 else provider.plugin
        return f"{prefix}:{name}"

    def _note_clashes(self) -> None:
        for rec in self.records.values():
            rec.clashes = []
        for (kind, name), ranked in sorted(self.providers.items()):
            if len(ranked) < 2:
                continue
            keeper, others = ranked[0], ranked[1:]
            rule = ("two third-party plugins: the distribution that sorts first keeps it" if not others[0].builtin
                    else "a third-party plugin keeps it from the built-in")
            also = ", ".join(self.qualified(kind, name, p) for p in others)
            notes = {keeper.plugin: f"{kind} {name!r}: this plugin keeps the plain name ({rule}); also {also}"}
            for p in others:
                notes.setdefault(p.plugin, f"{kind} {name!r}: plain name kept by {keeper.plugin!r} ({rule}); "
                                           f"this one is {self.qualified(kind, name, p)!r}")
            for plugin, note in notes.items():
                rec = self.records.get(plugin)
                if rec is not None:
                    rec.clashes.append(note)

    def third_party_clashes(self) -> list[str]:
        """Names two third-party plugins share (a warning in `pathkit doctor`), as `kind name`."""
        return [f"{kind} {name!r} ({', '.join(self.qualified(kind, name, p) for p in ranked)})"
                for (kind, name), ranked in sorted(self.providers.items())
                if len(ranked) > 1 and not ranked[1].builtin]

    def _add_provider(self, kind: str, name: str, provider: Provider) -> bool:
        """Record one registration; False when this plugin already registered this very class. The
        plain name goes to the provider of the smallest `Provider.rank`, whatever the load order."""
        key = (kind, name)
        ranked = self.providers.setdefault(key, [])
        if any(p.component is provider.component and p.plugin == provider.plugin for p in ranked):
            return False
        ranked.append(provider)
        ranked.sort(key=Provider.rank)
        self.components[kind][name] = ranked[0].component
        self.owners[key] = ranked[0].plugin
        if len(ranked) > 1:
            self.conflicts[key] = [p.plugin for p in ranked]
        return True

    def _make_register(self, kind: str, plugin_name: str, rec: PluginRecord):
        base = self.bases[kind]

        def register(component: type[Component]) -> type[Component]:
            if not (isinstance(component, type) and issubclass(component, base)):
                raise PathkitError(f"{self.hooks[kind]} got {component!r}, which is not a subclass of "
                                   f"{base.__module__}.{base.__name__}")
            name = component.name
            if not name or not isinstance(name, str):
                raise PathkitError(f"{component.__name__} has no `name` attribute")
            if kind in ("dataset", "generator", "metric"):
                declared = [component.task] if kind == "dataset" else list(component.tasks)
                bad = [t for t in declared if t not in self.components["task"]]
                if bad or (kind == "dataset" and not declared[0]):
                    known = ", ".join(self.names("task")) or "none"
                    raise PathkitError(f"{kind} {name!r} declares unknown task(s) {bad or [declared[0]]}; registered "
                                       f"tasks: {known} (a task plugin registers more)")
            if self._add_provider(kind, name, Provider(plugin_name, rec.distribution, component)):
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
        copied = random_base(name) if kind == "encoder" and name not in self.components[kind] else None
        if copied:  # `NAME+random`: NAME's architecture with random weights (pathkit_core.random_copy)
            return random_copy(self.get(kind, copied))  # type: ignore[arg-type]
        provider = self.provider_of(kind, name)  # else `name`, or `name:view` of a dataset
        comps = self.components[kind]
        found = provider.component if provider is not None else comps.get(name) or comps.get(name.partition(":")[0])
        if found is None:
            import difflib

            close = difflib.get_close_matches(name, self.names(kind), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            known = ", ".join(self.names(kind)) or "none"
            raise UnknownComponentError(f"unknown {kind} {name!r}{hint} (available: {known})")
        return found

    def find(self, name: str) -> list[type[Component]]:
        """Every component of any kind called `name` (for `pathkit info`), an encoder's random-weight
        copy `NAME+random` included."""
        found = [comps[name] for comps in self.components.values() if name in comps]
        copied = random_base(name)
        if not found and copied and copied in self.components.get("encoder", {}):
            found.append(self.get("encoder", name))
        return found

    def provider_of(self, kind: str, name: str) -> Provider | None:
        """The registration `distribution:name` (or `plugin:name`) names, a view after it allowed
        (`pathkit-datasets:reg2025:test`); None when `name` has no such qualifier."""
        qualifier, _, rest = name.partition(":")
        for provider in self.providers.get((kind, rest.partition(":")[0]), ()) if rest else ():
            if qualifier in (provider.distribution, provider.plugin):
                return provider
        return None

    def owner_of(self, kind: str, name: str) -> PluginRecord | None:
        provider = self.provider_of(kind, name)
        plugin = provider.plugin if provider is not None else self.owners.get((kind, name.partition(":")[0]))
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
        return {r.distribution: r.version for r in self.records.values()
                if r.distribution and r.status in ("ok", "incompatible")}


def build_registry(*, autoload: bool = True, plugins: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
                   allow: set[str] | None = None, block: set[str] | None = None) -> Registry:
    """A fresh registry. With `autoload`, entry points of the `pathkit` group are loaded,
    filtered by `allow`/`block` (default: the PATHKIT_LOAD_PLUGINS / PATHKIT_DISABLE_PLUGINS
    environment variables); `plugins` adds inline plugin objects by name."""
    registry = Registry()
    registry.load_entry_points(allow if allow is not None else _env_list(ENV_LOAD),
                               block if block is not None else (_env_list(ENV_DISABLE) or set()),
                               builtin_only=not autoload)
    items = plugins.items() if isinstance(plugins, Mapping) else plugins
    for name, plugin in items:
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        registry.add_plugin(name, plugin)
    registry.check()
    registry.collect()
    return registry


_REGISTRY: Registry | None = None
# Registries of the built-in plugins plus at most one entry point, by that entry point's name ("":
# the built-in plugins alone) and the one kind collected, built for `get_component` and
# `plain_command` before the whole one.
_DIRECT: dict[tuple[str, str], Registry] = {}


def get_plugin_manager() -> Registry:
    """The process-wide registry, built on first use (never at import time)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = build_registry()
    return _REGISTRY


def set_plugin_manager(registry: Registry | None) -> None:
    """Replace (or with None, forget) the process-wide registry; used by tests."""
    global _REGISTRY
    _REGISTRY = registry
    _DIRECT.clear()


def _direct_registry(entry_point: str, kind: str = "") -> Registry:
    """The built-in plugins and the entry point named `entry_point` (when one is installed and the
    allow/block lists let it load), each loaded directly, with the components of `kind` and the
    tasks collected (none without `kind`); no other plugin is imported."""
    key = (entry_point, kind)
    if key not in _DIRECT:
        allow = _env_list(ENV_LOAD)
        wanted = {entry_point} if allow is None else {entry_point} & allow
        registry = Registry()
        registry.load_entry_points(wanted, _env_list(ENV_DISABLE) or set())
        registry.check()
        registry.collect(("task", kind) if kind else ())
        _DIRECT[key] = registry
    return _DIRECT[key]


def get_component(kind: str, name: str) -> type[Component]:
    """The component `name` of `kind`. Before the whole registry is built, a process that needs a
    few components (`pathkit score`) loads the built-in plugins and the entry point named like the
    component (`crqs` for the metric `crqs`, as pathkit's own plugins name them); when that does
    not provide it, the whole registry is built and answers."""
    if _REGISTRY is None:
        with contextlib.suppress(PathkitError):
            return _direct_registry(name.partition(":")[0], kind).get(kind, name)
    return get_plugin_manager().get(kind, name)


def plain_command(name: str) -> Callable[[list[str]], int | None] | None:
    """The function that runs command `name` without typer, as a plugin's `plain_commands` answer
    names it: the built-in plugins are asked first (loaded without the others), then the whole
    registry; None when no plugin offers `name`."""
    for registry in (_direct_registry(""), None):
        found = _plain_command_of(registry or get_plugin_manager(), name)
        if found is not None:
            return found
    return None


def _plain_command_of(registry: Registry, name: str) -> Callable[[list[str]], int | None] | None:
    for impl in registry.pm.hook.plain_commands.get_hookimpls():
        try:  # a plugin whose answer is broken only keeps its commands on typer
            offered = impl.function()
            target = offered.get(name) if isinstance(offered, Mapping) else None
            if isinstance(target, str) and ":" in target:
                return _load_value(target)
        except Exception:  # noqa: BLE001
            continue
    return None


def _load_value(value: str) -> Any:
    """The object an entry point's value names (`module`, `module:attribute.path`, extras ignored)."""
    module, _, attribute = value.partition("[")[0].partition(":")
    found: Any = importlib.import_module(module.strip())
    for part in filter(None, attribute.strip().split(".")):
        found = getattr(found, part)
    return found
