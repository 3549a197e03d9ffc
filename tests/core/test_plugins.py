"""The plugin manager: inline plugins, broken entry points, misspelled hooks, duplicates, allow/block lists."""

from __future__ import annotations

import subprocess
import sys
import types
from importlib import metadata

import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import Metric, MetricResult, PathkitError
from pathkit_core.plugins import (
    AmbiguousComponentError,
    UnknownComponentError,
    build_registry,
)
from pathkit_tasks import TASK_REPORT
from tests._imports import imported_by


def _metric(name: str) -> type[Metric]:
    class _M(Metric):
        tasks = (TASK_REPORT,)

        def compute(self, predictions, references, *, ids=None, context=None):
            return MetricResult({"n": float(len(predictions))})

    _M.name = name
    _M.__name__ = f"Metric_{name}"
    return _M


def _plugin(*metric_names: str) -> types.SimpleNamespace:
    classes = [_metric(n) for n in metric_names]

    class Plugin:
        @hookimpl
        def register_metrics(self, register):
            for cls in classes:
                register(cls)

    return Plugin()


def test_inline_plugins_register_and_unregister():
    registry = build_registry(autoload=False, plugins={"a": _plugin("bleu-ish", "rouge-ish")})
    assert registry.names("metric") == ["bleu-ish", "rouge-ish"]
    assert registry.records["a"].status == "ok"
    assert registry.records["a"].components["metric"] == ["bleu-ish", "rouge-ish"]
    registry.pm.unregister(name="a")
    fresh = build_registry(autoload=False)
    assert fresh.names("metric") == []


def test_unknown_name_lists_close_matches():
    registry = build_registry(autoload=False, plugins={"a": _plugin("crqs", "nlg")})
    with pytest.raises(UnknownComponentError, match="did you mean crqs"):
        registry.get("metric", "crq")
    with pytest.raises(UnknownComponentError, match="available: crqs, nlg"):
        registry.get("metric", "zzzzzz")


def test_a_name_two_plugins_register_resolves_by_the_stated_order_and_both_stay_addressable():
    """The rule of docs/plugin-authors.md, "Names and collisions" (tests/compat/test_collisions.py has
    the built-in and distribution cases): between two third parties the smaller (distribution, plugin)
    keeps the plain name, whatever the load order; neither is an error."""
    first, second = _plugin("dup"), _plugin("dup")
    for order in ([("first", first), ("second", second)], [("second", second), ("first", first)]):
        registry = build_registry(autoload=False, plugins=order)
        assert registry.records["first"].status == registry.records["second"].status == "ok"
        assert registry.get("metric", "dup") is registry.get("metric", "first:dup")
        assert registry.get("metric", "second:dup") is not registry.get("metric", "first:dup")
        assert "this one is 'second:dup'" in registry.records["second"].clashes[0]
        assert registry.third_party_clashes() == ["metric 'dup' (first:dup, second:dup)"]
    assert issubclass(AmbiguousComponentError, PathkitError)  # still importable for callers that catch it


def test_misspelled_hook_is_caught_and_isolated():
    class Typo:
        @hookimpl
        def register_metric(self, register):  # missing "s"
            raise AssertionError("never called")

    registry = build_registry(autoload=False, plugins={"typo": Typo(), "good": _plugin("ok-metric")})
    assert registry.records["typo"].status == "error"
    assert "register_metrics" in registry.records["typo"].error
    assert registry.records["good"].status == "ok"
    assert registry.names("metric") == ["ok-metric"]


def test_register_rejects_a_non_component_and_unknown_task():
    class NotAMetric:
        name = "nope"

    class BadTask(Metric):
        name = "bad-task"
        tasks = ("captioning",)

    class Plugin:
        @hookimpl
        def register_metrics(self, register):
            register(NotAMetric)

    class Plugin2:
        @hookimpl
        def register_metrics(self, register):
            register(BadTask)

    registry = build_registry(autoload=False, plugins={"p": Plugin(), "q": Plugin2()})
    assert "not a subclass" in registry.records["p"].error
    assert "unknown task" in registry.records["q"].error
    assert registry.names("metric") == []


# The distribution's own entry points (the task packages): always loaded, so fakes come beside them.
_BUILTIN = [ep for ep in metadata.entry_points(group="pathkit") if ep.dist.metadata["Name"] == "pathkit"]


class _FakeDist:
    def __init__(self, name):
        self.metadata = {"Name": name}
        self.version = "9.9"


class _FakeEntryPoint:
    def __init__(self, name, target, dist="fake-dist"):
        self.name, self.value, self._target, self.dist = name, f"fake:{name}", target, _FakeDist(dist)

    def load(self):
        if isinstance(self._target, BaseException):
            raise self._target
        return self._target


def test_entry_point_that_raises_on_import_is_reported_and_others_work(monkeypatch):
    eps = [
        _FakeEntryPoint("broken", ImportError("no module named 'cuda_magic'")),
        _FakeEntryPoint("works", _plugin("fine")),
    ]
    monkeypatch.setattr(metadata, "entry_points", lambda group: [*_BUILTIN, *eps])
    registry = build_registry(autoload=True, allow=None, block=set())
    assert registry.records["broken"].status == "error"
    assert "cuda_magic" in registry.records["broken"].error
    assert registry.records["broken"].distribution == "fake-dist"
    assert registry.records["works"].status == "ok"
    assert registry.names("metric") == ["fine"]


def test_allow_and_block_lists_from_environment(monkeypatch):
    eps = [_FakeEntryPoint("one", _plugin("m1")), _FakeEntryPoint("two", _plugin("m2"))]
    monkeypatch.setattr(metadata, "entry_points", lambda group: [*_BUILTIN, *eps])
    monkeypatch.setenv("PATHKIT_LOAD_PLUGINS", "one")
    reg = build_registry()
    assert reg.names("metric") == ["m1"] and reg.records["two"].status == "disabled"
    monkeypatch.delenv("PATHKIT_LOAD_PLUGINS")
    monkeypatch.setenv("PATHKIT_DISABLE_PLUGINS", "one")
    reg = build_registry()
    assert reg.names("metric") == ["m2"] and reg.records["one"].status == "disabled"


def test_a_raising_register_hook_is_isolated():
    class Raises:
        @hookimpl
        def register_metrics(self, register):
            raise RuntimeError("boom")

    registry = build_registry(autoload=False, plugins={"r": Raises(), "g": _plugin("g")})
    assert registry.records["r"].status == "error" and "boom" in registry.records["r"].error
    assert registry.names("metric") == ["g"]


def test_view_suffix_resolves_to_the_base_component():
    registry = build_registry(autoload=False, plugins={"a": _plugin("base")})
    assert registry.get("metric", "base:view") is registry.get("metric", "base")


def test_no_plugin_loading_or_torch_import_at_import_time():
    code = "import pathkit_core, pathkit_core.plugins as p, pathkit_core.cli, pathkit_core.contracts\n" \
           "assert p._REGISTRY is None"
    assert imported_by(code, ("torch", "openslide")) == []


def test_pathkit_error_is_user_facing():
    assert issubclass(UnknownComponentError, PathkitError)


_DIRECT_CHILD = """
import json, sys
from pathkit_core.plugins import get_component
get_component(sys.argv[1], sys.argv[2])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("pathkit_") and "." in m
                        and m.split(".")[1][:1] != "_")))
"""


def test_a_process_needing_one_component_loads_only_its_entry_point():
    """Asking for one component before the whole registry is built loads the built-in plugins and
    the entry point named like it; a component whose entry point has another name (the example
    plugin's `length-ratio`, in `example-length`) builds the whole registry."""
    import json

    def child(kind, name):
        out = subprocess.run([sys.executable, "-c", _DIRECT_CHILD, kind, name], capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    loaded = child("metric", "nlg")
    assert "pathkit_metrics.nlg" in loaded and "pathkit_tasks.report" in loaded
    assert not any(m.startswith(("pathkit_datasets.", "pathkit_generators.", "pathkit_encoders.")) for m in loaded)
    assert "pathkit_datasets.goldmark" in child("metric", "length-ratio")


def test_one_component_is_not_loaded_from_a_disabled_entry_point(monkeypatch):
    from pathkit_core import plugins

    monkeypatch.setenv(plugins.ENV_DISABLE, "crqs")
    plugins.set_plugin_manager(None)
    try:
        assert "crqs" not in plugins._direct_registry("crqs", "metric").names("metric")
        with pytest.raises(UnknownComponentError):
            plugins.get_component("metric", "crqs")
    finally:
        plugins.set_plugin_manager(None)


def test_plain_commands_come_from_the_built_in_plugins_first_and_a_broken_answer_is_skipped(monkeypatch):
    from pathkit_core import hookimpl, plugins

    class Raises:
        @hookimpl
        def plain_commands(self):
            raise RuntimeError("broken")

    class NotAMapping:
        @hookimpl
        def plain_commands(self):
            return ["score"]

    class Fine:
        @hookimpl
        def plain_commands(self):
            return {"go": "pathkit_core.cli.plain:split_names", "bad": 3}

    plugins.set_plugin_manager(None)
    try:
        from pathkit_interop.score_cli import run_plain

        assert plugins.plain_command("score") is run_plain and plugins.plain_command("other") is None
        monkeypatch.setitem(plugins._DIRECT, ("", ""), plugins.build_registry(
            autoload=False, plugins={"raises": Raises(), "list": NotAMapping(), "fine": Fine()}))
        assert plugins.plain_command("go")(["x"]) == ["x"] and plugins.plain_command("bad") is None
        assert plugins.plain_command("score") is run_plain  # the built-in answer stands
        plugins.set_plugin_manager(plugins.build_registry(autoload=False, plugins={"fine": Fine()}))
        plugins._DIRECT["", ""] = plugins.build_registry(autoload=False)
        assert plugins.plain_command("go")(["x"]) == ["x"]  # another plugin's, from the whole registry
    finally:
        plugins.set_plugin_manager(None)

