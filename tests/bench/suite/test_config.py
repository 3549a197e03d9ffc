"""Suite TOML: tasks, per-task generators and options merged over the suite's, seeds, every error path;
the shipped suites parse and name only registered plugins; shards split the cells exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathkit_bench.suite.config import load_suite
from pathkit_core.contracts import PathkitError
from pathkit_core.shard import parse_shard

SUITES = Path(__file__).resolve().parents[3] / "examples" / "suites"

BASIC = """
name = "s"
encoders = ["tiny-vit", "tiny-vit-wide"]
generators = ["knn"]
seeds = 3
[run]
max_tiles = 8
[run.train]
max_epochs = 2
lr = 0.01
[[tasks]]
dataset = "hepatobench"
[[tasks]]
name = "slides"
dataset = "hepatobench-wsi"
dataset_root = "data/wsi"
generators = ["knn", "logistic-regression"]
compare = "Dice"
[tasks.train]
max_epochs = 5
"""


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_cells_and_merged_options(tmp_path):
    suite = load_suite(write(tmp_path, BASIC))
    assert suite.seeds == (0, 1, 2) and suite.correction == "holm"
    cells = suite.cells()
    assert len(cells) == 2 * 1 * 3 + 2 * 2 * 3
    slides = next(c for c in cells if c.task.name == "slides")
    values = slides.run_values(tmp_path / "w")
    assert values["train"] == {"max_epochs": 5, "lr": 0.01} and values["max_tiles"] == 8
    assert values["dataset_root"] == str(tmp_path / "data" / "wsi") and values["shard"] == "1/1"
    assert slides.task.compare == "Dice" and cells[0].task.name == "hepatobench"
    from pathkit_core.run import RunSpec

    assert RunSpec.from_mapping(values).train["max_epochs"] == 5


@pytest.mark.parametrize("text, message", [
    ("encoders = ['a']\ngenerators = ['b']\n", "no \\[\\[tasks\\]\\]"),
    ("bogus = 1\n[[tasks]]\ndataset = 'x'\n", "unknown suite key"),
    ("encoders = ['a']\ngenerators = ['b']\n[[tasks]]\ndataset = 'x'\nfolds = 2\n", "unknown key\\(s\\) \\['folds'\\]"),
    ("encoders = ['a']\n[[tasks]]\ndataset = 'x'\n", "no encoders or no generators"),
    ("encoders = ['a', 'a']\ngenerators = ['b']\n[[tasks]]\ndataset = 'x'\n", "more than once"),
    ("encoders = ['a']\ngenerators = ['b']\nseeds = [1, 1]\n[[tasks]]\ndataset = 'x'\n", "seeds repeat"),
    ("encoders = ['a']\ngenerators = ['b']\nseeds = 'x'\n[[tasks]]\ndataset = 'x'\n", "seeds must be"),
    ("encoders = ['a']\ngenerators = ['b']\ncorrection = 'sidak'\n[[tasks]]\ndataset = 'x'\n", "correction"),
    ("encoders = ['a']\ngenerators = ['b']\n[run]\nseed = 3\n[[tasks]]\ndataset = 'x'\n", "decides per cell"),
    ("encoders = ['a']\ngenerators = ['b']\n[[tasks]]\ndataset = 'x'\n[[tasks]]\ndataset = 'x'\n", "named alike"),
    ("encoders = ['a']\ngenerators = ['b']\n[[tasks]]\nname = 'p'\ndataset = 'x'\ndataset_root = 'r1'\n"
     "[[tasks]]\nname = 'q'\ndataset = 'x'\ndataset_root = 'r1'\n", "would run the same cells"),
    ("encoders = ['a'\n", "invalid TOML"),
])
def test_errors_name_the_file_and_the_problem(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(PathkitError, match=message) as info:
        load_suite(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(PathkitError, match="no such suite file"):
        load_suite(tmp_path / "none.toml")


def test_a_named_pipe_as_suite_is_refused_without_blocking(tmp_path):
    import os

    from tests._pipes import without_blocking

    fifo = tmp_path / "suite.toml"
    os.mkfifo(fifo)
    found = without_blocking(lambda: load_suite(fifo), fifo)
    assert isinstance(found, PathkitError) and f"suite {fifo} is not a regular file" in str(found)


def test_shards_split_the_cells_exactly_once(tmp_path):
    cells = load_suite(write(tmp_path, BASIC)).cells()
    parts = [parse_shard(f"{i}/3").select(cells, key=lambda c: c.label) for i in (1, 2, 3)]
    labels = [c.label for part in parts for c in part]
    assert sorted(labels) == sorted(c.label for c in cells) and len(set(labels)) == len(cells)
    assert all(parts)


@pytest.mark.parametrize("name", sorted(p.name for p in SUITES.glob("*.toml")))
def test_shipped_suites_name_registered_plugins(name, installed_registry):
    suite = load_suite(SUITES / name)
    for task in suite.tasks:
        installed_registry.get("dataset", task.dataset)
        for encoder in task.encoders:
            installed_registry.get("encoder", encoder)
        for generator in task.generators:
            installed_registry.get("generator", generator)
        for metric in task.metrics:
            installed_registry.get("metric", metric)
    assert len(suite.cells()) >= 4


def test_two_roots_of_one_dataset_are_two_tasks(tmp_path):
    # a run is keyed by its data's content, so two cohorts of one dataset plugin get their own cells
    suite = load_suite(write(tmp_path, "encoders = ['a']\ngenerators = ['b']\n[[tasks]]\nname = 'p'\ndataset = 'x'\n"
                                       "dataset_root = 'r1'\n[[tasks]]\nname = 'q'\ndataset = 'x'\n"
                                       "dataset_root = 'r2'\n"))
    assert [c.task.name for c in suite.cells()] == ["p", "q"]
