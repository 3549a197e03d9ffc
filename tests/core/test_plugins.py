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
    code = (
        "import sys, pathkit_core, pathkit_core.plugins as p, pathkit_core.cli, pathkit_core.contracts;"
        "print(p._REGISTRY is None, 'torch' in sys.modules, 'openslide' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "False"]


def test_pathkit_error_is_user_facing():
    assert issubclass(UnknownComponentError, PathkitError)


_INDEX_CHILD = """
import json, sys
from pathkit_core.plugins import get_component, get_plugin_manager
if sys.argv[1] == "full":
    get_plugin_manager()
    print(json.dumps([]))
else:
    metric = get_component("metric", "nlg")
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("pathkit_") and "." in m
                            and m.split(".")[1][:1] != "_")))
"""


def test_a_process_needing_one_component_loads_only_its_entry_point(tmp_path):
    """A full build writes the index of entry points; a later process asking for one component
    loads the built-in plugins and that component's entry point only. A stale index (an entry
    point's module edited: its size or time changed) is not used."""
    import json
    import os

    env = {**os.environ, "PATHKIT_PLUGIN_INDEX": str(tmp_path / "index.json")}

    def child(mode):
        out = subprocess.run([sys.executable, "-c", _INDEX_CHILD, mode], env=env, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    everything = child("one")  # no index yet: the whole registry, which writes the index
    assert "pathkit_datasets.goldmark" in everything and (tmp_path / "index.json").exists()
    (tmp_path / "index.json").unlink()
    child("full")
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["providers"]["metric"]["nlg"] == ["nlg"] and index["providers"]["task"]
    loaded = child("one")
    assert "pathkit_metrics.nlg" in loaded
    assert not any(m.startswith(("pathkit_datasets.", "pathkit_generators.", "pathkit_encoders.")) for m in loaded)
    index["key"] = "stale"
    (tmp_path / "index.json").write_text(json.dumps(index))
    assert "pathkit_datasets.goldmark" in child("one")


def test_the_index_is_skipped_when_it_names_no_single_provider(tmp_path, monkeypatch):
    import json

    from pathkit_core import plugins

    monkeypatch.setenv("PATHKIT_PLUGIN_INDEX", str(tmp_path / "index.json"))
    (tmp_path / "index.json").write_text(json.dumps({"key": plugins._validity([]), "files": [], "entry_points": {},
                                                      "providers": {"metric": {"nlg": ["a", "b"]}}}))
    assert plugins._registry_for("metric", "nlg") is None  # two providers: the full registry decides
    (tmp_path / "index.json").write_text("{not json")
    assert plugins._registry_for("metric", "nlg") is None
    monkeypatch.setenv("PATHKIT_PLUGIN_INDEX", "off")
    assert plugins._registry_for("metric", "nlg") is None


def test_the_index_goes_stale_when_a_distribution_appears_or_a_recorded_file_changes(tmp_path, monkeypatch):
    """The index's key: sys.path, the distributions on it (by folder name and time) and the
    recorded files (entry-point modules, entry_points.txt) by size and time; other files in a
    folder on sys.path (a result written in the working folder) leave it valid."""
    import json

    from pathkit_core import plugins

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    module = tmp_path / "plugin.py"
    module.write_text("x = 1\n")
    key = plugins._validity([str(module)])
    (site / "metrics.json").write_text("{}")
    assert plugins._validity([str(module)]) == key
    (site / "newplugin-1.0.dist-info").mkdir()
    fresh = plugins._validity([str(module)])
    assert fresh != key
    module.write_text("x = 22\n")
    assert plugins._validity([str(module)]) != fresh
    # a plain command is found only through a valid index
    monkeypatch.setenv("PATHKIT_PLUGIN_INDEX", str(tmp_path / "index.json"))
    index = {"key": plugins._validity([str(module)]), "files": [str(module)], "entry_points": {}, "providers": {},
             "commands": {"score": "pathkit_core.cli.plain:split_names"}}
    (tmp_path / "index.json").write_text(json.dumps(index))
    assert plugins.plain_command("score")(["a,b"]) == ["a", "b"] and plugins.plain_command("other") is None
    module.write_text("x = 333\n")
    assert plugins.plain_command("score") is None


def test_a_broken_plain_commands_answer_keeps_that_plugin_on_typer(tmp_path, monkeypatch):
    import json

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

    monkeypatch.setenv("PATHKIT_PLUGIN_INDEX", str(tmp_path / "index.json"))
    registry = plugins.build_registry(autoload=False, plugins={"raises": Raises(), "list": NotAMapping(),
                                                               "fine": Fine()})
    plugins._write_index(registry)
    commands = json.loads((tmp_path / "index.json").read_text())["commands"]
    assert commands["go"] == "pathkit_core.cli.plain:split_names" and "bad" not in commands
    assert commands["score"] == "pathkit_interop.score_cli:run_plain"  # the built-in answer stands
    assert plugins.plain_command("go")(["x"]) == ["x"] and plugins.plain_command("bad") is None


def test_the_index_is_written_beside_a_plugin_whose_module_is_missing(tmp_path, monkeypatch):
    """A broken plugin (its module gone) is recorded by its distribution's entry_points.txt; a
    distribution not on disk (no entry_points.txt to watch) leaves no index at all."""
    import json

    from pathkit_core import plugins

    monkeypatch.setenv("PATHKIT_PLUGIN_INDEX", str(tmp_path / "index.json"))
    txt = tmp_path / "entry_points.txt"
    txt.write_text("[pathkit]\nbroken = no_such_module_here\n")
    registry = plugins.build_registry(autoload=False)
    registry.entry_points = {"broken": ("no_such_module_here", "broken-dist", "1.0", str(txt))}
    plugins._write_index(registry)
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["files"] == [str(txt)] and plugins._read_index() is not None
    txt.write_text("[pathkit]\nbroken = other_module\n")  # reinstalled: the index is stale
    assert plugins._read_index() is None
    (tmp_path / "index.json").unlink()
    registry.entry_points = {"zipped": ("some_module", "zipped-dist", "1.0", "")}
    plugins._write_index(registry)
    assert not (tmp_path / "index.json").exists()
