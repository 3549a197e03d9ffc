"""Names that cannot collide silently (docs/plugin-authors.md, "Names and collisions"): a third-party
plugin keeps a plain name a built-in distribution also registers (so a built-in added in a later
release never takes a name from an installed plugin), two third parties share one by the stated order
with a warning, every registration stays addressable as `distribution:name`, and `pathkit list` shows
the clash."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pathkit_core.plugins import build_registry, get_plugin_manager, set_plugin_manager
from tests.compat.test_compat_versions import _installed


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def installed(on_path):
    """A registry of the built-in nlg metric plugin (pathkit-metrics registers metric `nlg`) beside two
    third-party distributions that also register `nlg`, as the process-wide one."""
    zeta = _installed(on_path, "zeta-metrics", ["pathkit>=0.2,<0.3"], metric="nlg")
    alpha = _installed(on_path, "alpha-metrics", ["pathkit>=0.2,<0.3"], metric="nlg")
    previous = get_plugin_manager()
    registry = build_registry(allow={"nlg", zeta, alpha}, block=set())
    set_plugin_manager(registry)
    yield registry
    set_plugin_manager(previous)


def test_a_built_in_never_takes_a_plain_name_from_a_third_party(on_path):
    mine = _installed(on_path, "my-nlg", ["pathkit>=0.2,<0.3"], metric="nlg")
    registry = build_registry(allow={"nlg", mine}, block=set())
    assert registry.get("metric", "nlg").__module__ == "my_nlg"
    assert registry.get("metric", "my-nlg:nlg").__module__ == "my_nlg"
    assert registry.get("metric", "pathkit-metrics:nlg").__module__.startswith("pathkit_metrics.")
    assert registry.owner_of("metric", "nlg").distribution == "my-nlg"
    assert registry.owner_of("metric", "pathkit-metrics:nlg").distribution == "pathkit-metrics"
    assert registry.records[mine].status == registry.records["nlg"].status == "ok"
    assert "a third-party plugin keeps it from the built-in" in registry.records[mine].clashes[0]
    assert "this one is 'pathkit-metrics:nlg'" in registry.records["nlg"].clashes[0]
    assert registry.third_party_clashes() == []  # a built-in yielding is no warning


def test_two_third_parties_share_a_name_by_distribution_order_with_a_warning(installed):
    from pathkit_core.cli.doctor import _plugin_versions_and_names

    assert installed.get("metric", "nlg").__module__ == "alpha_metrics"
    assert installed.get("metric", "zeta-metrics:nlg").__module__ == "zeta_metrics"
    assert installed.conflicts[("metric", "nlg")] == ["alpha-metrics", "zeta-metrics", "nlg"]
    rows = _plugin_versions_and_names(installed)
    assert rows == [("plugin names", "warn", "shared by two third-party plugins, the distribution that sorts first "
                     "keeps the plain name: metric 'nlg' (alpha-metrics:nlg, zeta-metrics:nlg, pathkit-metrics:nlg)")]


def test_pathkit_list_shows_the_clash_and_every_address(installed, cli):
    metrics = {m["name"]: m for m in json.loads(cli("list", "metrics", "--json").stdout)}
    assert {"nlg", "alpha-metrics:nlg", "zeta-metrics:nlg", "pathkit-metrics:nlg"} <= set(metrics)
    assert metrics["nlg"]["distribution"] == "alpha-metrics"
    assert metrics["pathkit-metrics:nlg"]["distribution"] == "pathkit-metrics"
    assert "the plain name is alpha-metrics's" in metrics["nlg"]["clash"]
    plugins = {p["name"]: p for p in json.loads(cli("list", "plugins", "--json").stdout)}
    assert plugins["zeta-metrics"]["status"] == "ok"
    assert "plain name kept by 'alpha-metrics'" in plugins["zeta-metrics"]["clashes"][0]
    table = cli("list", "plugins", env={"COLUMNS": "400"}).stdout
    assert "clash: metric 'nlg': this plugin keeps the plain name" in table
    (info,) = json.loads(cli("info", "zeta-metrics:nlg", "--json").stdout)
    assert info["plugin"]["distribution"] == "zeta-metrics"


def test_a_qualified_dataset_name_is_not_read_as_a_view(fresh_registry):
    from pathkit_core.run.dataset import dataset_options
    from pathkit_core.run.spec import RunSpec

    class Table:
        name, run_options = "purity-table", ()

    spec = RunSpec(dataset="purity-table", encoder="e", generator="g")
    assert "view" not in dataset_options(replace(spec, dataset="pathkit-example-plugin:purity-table"), Table, None)
    assert dataset_options(replace(spec, dataset="pathkit-example-plugin:purity-table:test"), Table, None)["view"] \
        == "test"
    assert dataset_options(replace(spec, dataset="purity-table:test"), Table, None)["view"] == "test"
