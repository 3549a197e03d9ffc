"""Every name a past plugin guide, API page or example plugin told authors to import still imports
from its old place until pathkit 0.3: the old path gives the very object of its new home and warns
once, with a DeprecationWarning that names the new import and the removing release and points at
the importing line (this file). docs/plugin-authors.md, "Moved names", lists the same table."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

from pathkit_core import _deprecation

# old module -> (new module, a name the old module documented)
MOVED_MODULES = {
    "pathkit_core.wsi.synthetic": ("pathkit_sdk.synthetic", "write_synthetic_slide"),
    "pathkit_core.splits": ("pathkit_sdk.splits", "load_or_draw_split"),
    "pathkit_core.evaluation.hf_evaluate": ("pathkit_interop.evaluate_modules", "as_evaluate_module"),
    "pathkit_core.evaluation.bootstrap": ("pathkit_sdk.bootstrap", "bootstrap_ci"),
    "pathkit_core.cli.options": ("pathkit_sdk.commands", "CliOption"),
    "pathkit_core.evaluation.intervals": ("pathkit_sdk.intervals", "proportion_ci"),
    "pathkit_datasets._cohort": ("pathkit_sdk.cohort", "CohortDataset"),
    "pathkit_core.stats": ("pathkit_bench.stats", "delong"),
    "pathkit_core.report.matrix": ("pathkit_bench.report.matrix", "write_leaderboard"),
    "pathkit_core.wsi.stitch": ("pathkit_tasks.segmentation.stitch", "__all__"),
}
MOVED_SUBMODULES = {f"pathkit_core.stats.{n}": f"pathkit_bench.stats.{n}"
                    for n in ("delong", "multiple", "paired", "ranks")}
# name that left pathkit_core.contracts -> its new module
MOVED_FROM_CONTRACTS = {
    **dict.fromkeys(("TASK_REPORT", "TASK_SLIDE_CLASSIFICATION", "TASK_PATCH_CLASSIFICATION", "TASK_SEGMENTATION",
                     "TASK_MULTIPLE_CHOICE_VQA"), "pathkit_tasks"),
    **dict.fromkeys(("EvidencePool", "Selection", "Selector"), "pathkit_tasks.vqa.selection"),
    "TileAttentionModel": "pathkit_tasks.classification.attention",
}
# name that left pathkit_core.workspace for its only callers -> its new module
MOVED_FROM_WORKSPACE = {
    **dict.fromkeys(("plain_name", "path_inside"), "pathkit_sdk.cohort"),
    **dict.fromkeys(("foreign_entries", "check_result_folder"), "pathkit_interop.score_cli"),
}
# names that left pathkit_core.wsi.masks for pathkit_sdk.masks
MOVED_FROM_MASKS = ("RASTER_SUFFIXES", "GEOJSON_SUFFIXES", "MASK_SUFFIXES", "RasterMask", "read_raster",
                    "frame_on_slide", "resample", "write_png", "check_within", "positive_number", "class_list",
                    "reference_mask")
# module.name that left a core module (served by its `__getattr__`) -> its new module
MOVED_ATTRIBUTES = {
    **dict.fromkeys(("pathkit_core.report.figures.bar_chart", "pathkit_core.report.figures.heatmap"),
                    "pathkit_sdk.charts"),
    **dict.fromkeys(("pathkit_core.evaluation.runner.RESULT_FILES",
                     "pathkit_core.evaluation.runner.write_result_folder"), "pathkit_interop.score_cli"),
    **dict.fromkeys(("pathkit_core.wsi.reader.iter_tile_batches", "pathkit_core.wsi.reader.tile_loader"),
                    "pathkit_sdk.tiles"),
}


@pytest.fixture
def fresh(monkeypatch):
    """Old paths not imported yet and nothing warned yet in this process (restored afterwards)."""
    monkeypatch.setattr(_deprecation, "_warned", set())
    for name in [*MOVED_MODULES, *MOVED_SUBMODULES]:
        monkeypatch.delitem(sys.modules, name, raising=False)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and child in vars(sys.modules[parent]):
            monkeypatch.delattr(sys.modules[parent], child)


def _only_deprecation(record) -> list[warnings.WarningMessage]:
    return [w for w in record if issubclass(w.category, DeprecationWarning) and "pathkit 0.3" in str(w.message)]


def _check(found, old: str, new: str) -> None:
    assert len(found) == 1, [str(w.message) for w in found]
    text = str(found[0].message)
    assert text.startswith(f"{old} is deprecated: import {new} instead")
    assert text.endswith("will be removed in pathkit 0.3")
    assert Path(found[0].filename).resolve() == Path(__file__).resolve()


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_module_path_imports_warns_once_at_the_importer_and_gives_the_new_objects(fresh, old):
    new, name = MOVED_MODULES[old]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
        line = sys._getframe().f_lineno - 1
        again = importlib.import_module(old)
    found = _only_deprecation(record)
    _check(found, old, new)
    assert found[0].lineno == line
    target = importlib.import_module(new)
    assert again is module
    if name == "__all__":
        assert module.__all__ and all(getattr(module, n) is getattr(target, n) for n in module.__all__)
    else:
        assert getattr(module, name) is getattr(target, name)
    assert set(dir(target)) <= set(dir(module))


def test_the_from_import_of_the_issue_points_at_its_own_line(fresh):
    with pytest.warns(DeprecationWarning, match=r"pathkit_core\.wsi\.synthetic is deprecated") as record:
        from pathkit_core.wsi.synthetic import Blob, write_synthetic_slide
    import pathkit_sdk

    assert Blob is pathkit_sdk.Blob and write_synthetic_slide is pathkit_sdk.write_synthetic_slide
    assert Path(record[0].filename).resolve() == Path(__file__).resolve()
    assert record[0].lineno == sys._getframe().f_lineno - 5


@pytest.mark.parametrize("old", sorted(MOVED_SUBMODULES))
def test_a_moved_packages_submodules_are_the_new_ones_with_one_warning(fresh, old):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    _check(_only_deprecation(record), "pathkit_core.stats", "pathkit_bench.stats")
    assert module is importlib.import_module(MOVED_SUBMODULES[old])


def test_split_statement_documented_on_the_old_splits_module_is_the_runs_own(fresh):
    with pytest.warns(DeprecationWarning):
        from pathkit_core.splits import split_statement
    from pathkit_sdk import split_statement as sdk_split_statement

    assert split_statement is sdk_split_statement


@pytest.mark.parametrize(("module", "name"), [*(("contracts", n) for n in sorted(MOVED_FROM_CONTRACTS)),
                                              *(("workspace", n) for n in sorted(MOVED_FROM_WORKSPACE))])
def test_the_names_that_left_the_contract_or_the_workspace_warn_once_and_are_the_new_objects(fresh, module, name):
    shim = importlib.import_module(f"pathkit_core.{module}")
    new = {"contracts": MOVED_FROM_CONTRACTS, "workspace": MOVED_FROM_WORKSPACE}[module][name]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first = getattr(shim, name)
        second = getattr(shim, name)
    _check(_only_deprecation(record), f"pathkit_core.{module}.{name}", f"{name} from {new}")
    assert first is second is getattr(importlib.import_module(new), name)


def test_the_not_estimable_words_of_the_old_intervals_module_are_the_score_tables_own(fresh):
    with pytest.warns(DeprecationWarning):
        from pathkit_core.evaluation.intervals import NOT_ESTIMABLE, not_estimable_text
    from pathkit_core.evaluation import scores

    assert NOT_ESTIMABLE is scores.NOT_ESTIMABLE and not_estimable_text is scores.not_estimable_text


@pytest.mark.parametrize("name", MOVED_FROM_MASKS)
def test_the_names_that_left_the_masks_module_warn_once_and_are_the_sdk_objects(fresh, name):
    import pathkit_core.wsi.masks as masks
    import pathkit_sdk

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first = getattr(masks, name)
        second = getattr(masks, name)
    _check(_only_deprecation(record), f"pathkit_core.wsi.masks.{name}", f"{name} from pathkit_sdk.masks")
    assert first is second is getattr(importlib.import_module("pathkit_sdk.masks"), name) is getattr(pathkit_sdk, name)


@pytest.mark.parametrize("old", sorted(MOVED_ATTRIBUTES))
def test_the_names_that_left_a_core_module_warn_once_and_are_the_new_objects(fresh, old):
    module, _, name = old.rpartition(".")
    new = MOVED_ATTRIBUTES[old]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first = getattr(importlib.import_module(module), name)
        second = getattr(importlib.import_module(module), name)
    _check(_only_deprecation(record), old, f"{name} from {new}")
    assert first is second is getattr(importlib.import_module(new), name)


def test_run_folder_attention_index_forwards_to_the_classification_package(fresh, tmp_path):
    from pathkit_core.report.run_folder import RunFolder

    index = tmp_path / "attention" / "best" / "index.csv"
    index.parent.mkdir(parents=True)
    index.write_text("case,slide,table,heatmap,note\nc1,s1,t.csv,h.png,\n", encoding="utf-8")
    (tmp_path / "metrics.json").write_text("{}", encoding="utf-8")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        rows = RunFolder(tmp_path).attention_index()
        line = sys._getframe().f_lineno - 1
        again = RunFolder(tmp_path).attention_index("last")
    found = _only_deprecation(record)
    _check(found, "pathkit_core.report.run_folder.RunFolder.attention_index",
           "attention_index from pathkit_tasks.classification.attention")
    assert found[0].lineno == line
    assert rows == [{"case": "c1", "slide": "s1", "table": "t.csv", "heatmap": "h.png", "note": ""}] and again == []


def test_an_unknown_name_on_a_shim_is_an_attribute_error_naming_the_new_home(fresh):
    with pytest.warns(DeprecationWarning):
        module = importlib.import_module("pathkit_core.splits")
    with pytest.raises(AttributeError, match=r"no attribute 'nothing_here' \(it moved to pathkit_sdk\.splits\)"):
        getattr(module, "nothing_here")  # noqa: B009
    import pathkit_core.contracts as contracts

    with pytest.raises(AttributeError, match="TASK_NOTHING"):
        getattr(contracts, "TASK_NOTHING")  # noqa: B009


def test_every_shim_is_a_thin_alias_through_the_one_helper():
    """No code copied into an old path: each shim module is a docstring, the helper's import and the
    one call that makes it an alias."""
    import ast

    for old in MOVED_MODULES:
        spec = importlib.util.find_spec(old.rpartition(".")[0])
        path = Path(next(iter(spec.submodule_search_locations))) / (old.rpartition(".")[2] + ".py")
        body = ast.parse(path.read_text(encoding="utf-8")).body
        assert len(body) == 3 and isinstance(body[0].value, ast.Constant), path
        assert isinstance(body[1], ast.ImportFrom) and body[1].module == "pathkit_core._deprecation", path
        assert "pathkit 0.3" in body[0].value.value


def test_a_plugin_importing_a_moved_name_is_named_by_list_and_doctor_and_the_warning_still_reaches_the_caller(
        fresh, tmp_path, monkeypatch):
    from pathkit_core.cli.doctor import _plugin_versions_and_names
    from pathkit_core.plugins import build_registry
    from tests.compat.test_compat_versions import _installed

    monkeypatch.syspath_prepend(str(tmp_path))
    name = _installed(tmp_path, "pathkit-moving-plugin", ["pathkit>=0.2,<0.3"], metric="moving-length",
                      header="from pathkit_core.splits import split_part  # noqa: F401\n")
    with pytest.warns(DeprecationWarning, match=r"^pathkit_core\.splits is deprecated") as record:
        registry = build_registry(allow={name}, block=set())
    module_file = str(tmp_path / "pathkit_moving_plugin.py")
    assert [(w.filename, w.lineno) for w in record if "pathkit 0.3" in str(w.message)] == [(module_file, 1)]
    (noted,) = registry.records[name].deprecations
    assert noted.startswith(f"{module_file}:1: pathkit_core.splits is deprecated: import pathkit_sdk.splits instead")
    assert registry.records[name].status == "ok" and registry.get("metric", "moving-length")
    assert _plugin_versions_and_names(registry) == [(f"plugin {name} imports", "warn",
                                                     f"names that pathkit 0.3 removes: {noted}")]
