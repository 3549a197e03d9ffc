"""Hostile and malformed suite TOML: refused as a whole before any cell runs, one line naming the
file, the key and its TOML line; nothing written outside (or inside) the workspace."""

from __future__ import annotations

import pytest

from pathkit_bench.suite.config import load_suite
from pathkit_core.contracts import PathkitError

HEAD = 'encoders = ["tiny-vit"]\ngenerators = ["knn"]\n'
TASK = '\n[[tasks]]\ndataset = "hepatobench"\n'


def write(tmp_path, text: str, name: str = "suite.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("line, key, problem", [
    ('name = "../../esc"', "name", "one plain folder name"),
    ('name = "/tmp/abs"', "name", "one plain folder name"),
    ('name = ".."', "name", "one plain folder name"),
    ('name = "a\\u0000b"', "name", "one plain folder name"),
    (f'name = "{"x" * 300}"', "name", "at most 255"),
    ("resamples = 1", "resamples", "greater than or equal to 100"),
    ("resamples = 0", "resamples", "greater than or equal to 100"),
    ("resamples = 100000000", "resamples", "less than or equal to 100000"),
    ('resamples = "many"', "resamples", "valid integer"),
    ("alpha = 2.0", "alpha", "less than 1"),
    ("alpha = -1", "alpha", "greater than 0"),
    ("alpha = nan", "alpha", "finite"),
    ("level = inf", "level", "finite"),
    ('level = "high"', "level", "valid number"),
    ("level = 0", "level", "greater than 0"),
    ("seeds = [99999999999999999999]", "seeds[0]", "less than or equal to 4294967295"),
    ("seeds = [-1]", "seeds[0]", "greater than or equal to 0"),
    ("seeds = [true]", "seeds[0]", "valid integer"),
    ('correction = "sidak"', "correction", "not one of holm, bh, none"),
])
def test_a_bad_suite_value_names_its_key_and_line(tmp_path, line, key, problem):
    path = write(tmp_path, HEAD + line + "\n" + TASK)
    with pytest.raises(PathkitError, match=problem) as info:
        load_suite(path)
    message = str(info.value)
    assert message.startswith(str(path)) and f"{key} (line 3)" in message and "\n" not in message


def test_every_problem_at_once_and_task_keys_by_line(tmp_path):
    path = write(tmp_path, HEAD + "alpha = 3\n" + TASK + "compare = 3\nfolds = 2\n")
    with pytest.raises(PathkitError) as info:
        load_suite(path)
    message = str(info.value)
    assert "3 problems" in message and "alpha (line 3)" in message
    assert "tasks[1].compare (line 7)" in message and "tasks[1].folds (line 8): unknown key(s) ['folds']" in message


def test_a_binary_suite_file_is_one_line(tmp_path):
    path = tmp_path / "suite.toml"
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(PathkitError, match="is not a UTF-8 TOML suite file"):
        load_suite(path)


@pytest.mark.parametrize("text", [
    HEAD + 'name = "../../esc"\n' + TASK,
    HEAD + 'name = "/abs-suite"\n' + TASK,
    HEAD + "resamples = 1\n" + TASK,
    HEAD + TASK.replace("hepatobench", "no-such-dataset"),
    HEAD.replace("tiny-vit", "no-such-encoder") + TASK,
    HEAD + TASK + 'compare = "NOPE"\n',
])
def test_the_bench_command_refuses_before_any_cell_runs(tmp_path, cli, text):
    path = write(tmp_path, text)
    work = tmp_path / "work"
    result = cli("bench", "--config", path, "--workdir", work, "--cpu")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert not (work / "runs").exists() and not (tmp_path / "esc").exists()
    assert not any(p.name == "leaderboard.parquet" for p in tmp_path.rglob("*"))


def test_markup_in_an_error_is_printed_as_written(tmp_path, cli):
    path = write(tmp_path, HEAD)
    result = cli("bench", "--config", path, "--workdir", tmp_path / "w")
    assert result.exit_code == 2 and "no [[tasks]]; a suite names at least one dataset" in result.stderr


@pytest.mark.parametrize("options, problem", [
    (["--level", "2"], "--level"), (["--level", "0"], "--level"), (["--level", "nan"], "--level"),
    (["--resamples", "1"], "--resamples"), (["--correction", "sidak"], "--correction"),
    (["--metric", "AUROC,AUROC"], "more than once"), (["--metric", "AUROC", "--metric", "AUROC"], "more than once"),
    (["--seed", "-1"], "--seed"),
])
def test_compare_options_follow_the_suite_rules(tmp_path, cli, options, problem):
    result = cli("compare", tmp_path / "a", tmp_path / "b", *options)
    assert result.exit_code == 2 and problem in result.stderr, result.output
