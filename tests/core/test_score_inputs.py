"""`pathkit score` against bad inputs: repeated ids, folders for files, an unusable --out."""

from __future__ import annotations

import errno
import json
import os
import tempfile

import pytest

from tests.core import test_cli
from tests.core.test_cli import PREDS, REFS

files = test_cli.files  # the fixtures of the CLI tests: two small report files, a word-count metric
inline = test_cli.inline


def _score(cli, *args):
    return cli("score", "-m", "word-count", *args)


def test_a_plain_mapping_with_a_repeated_id_is_refused_listing_it(cli, inline, files, tmp_path):
    _, ref = files
    pred = tmp_path / "plain.json"
    # json.loads would keep the last "a": one case silently scored on the wrong text
    pred.write_text('{"a": "invasive carcinoma", "b": "benign", "a": "no tumour"}')
    result = _score(cli, "-p", pred, "-r", ref)
    assert result.exit_code == 2, result.stdout
    assert "plain.json" in result.stderr and "appear more than once" in result.stderr
    assert "'a' (entry 1, entry 3)" in result.stderr
    assert "'b'" not in result.stderr


def test_a_pathbench_file_with_a_repeated_id_is_refused_listing_every_one(cli, inline, tmp_path):
    entries = [f'"c{i}": {{"pred": "p{i}", "target": "t{i}"}}' for i in range(20)]
    entries[7] = '"c3": {"pred": "other", "target": "other"}'  # a real pair silently replaced
    entries[9] = '"c5": {"pred": "other", "target": "other"}'
    bench = tmp_path / "bench.json"
    bench.write_text("{" + ", ".join(entries) + "}")
    result = _score(cli, "-p", bench)
    assert result.exit_code == 2
    assert "2 id(s) appear more than once" in result.stderr
    assert "'c3' (entry 4, entry 8)" in result.stderr and "'c5' (entry 6, entry 10)" in result.stderr


@pytest.mark.parametrize("suffix, content", [
    (".jsonl", '{"id": "a", "report": "x"}\n{"id": "b", "report": "y"}\n{"id": "a", "report": "z"}\n'),
    (".json", '[{"id": "a", "report": "x"}, {"id": "a", "report": "y"}, {"id": "b", "report": "y"},'
              ' {"id": "b", "report": "w"}]'),
])
def test_repeated_ids_in_record_files_are_all_listed(cli, inline, files, tmp_path, suffix, content):
    _, ref = files
    pred = tmp_path / f"p{suffix}"
    pred.write_text(content)
    result = _score(cli, "-p", pred, "-r", ref)
    assert result.exit_code == 2 and "appear more than once" in result.stderr
    assert "'a'" in result.stderr and ("'b'" in result.stderr) == (suffix == ".json")


def test_a_record_repeating_its_value_key_is_refused(cli, inline, files, tmp_path):
    _, ref = files
    pred = tmp_path / "p.json"
    pred.write_text('[{"id": "a", "report": "x", "report": "y"}, {"id": "b", "report": "z"}]')
    result = _score(cli, "-p", pred, "-r", ref)
    assert result.exit_code == 2 and "repeats the key(s) report" in result.stderr


@pytest.mark.parametrize("which", ["--predictions", "--references"])
def test_an_empty_folder_given_as_records_is_a_one_line_error(cli, inline, files, tmp_path, which):
    """A folder is read as one file per case (segmentation masks); an empty one is an error."""
    pred, ref = files
    folder = tmp_path / "a-folder"
    folder.mkdir()
    (folder / "nested").mkdir()  # sub-folders are not cases
    args = ["-p", folder, "-r", ref] if which == "--predictions" else ["-p", pred, "-r", folder]
    result = _score(cli, *args)
    assert result.exit_code == 2
    assert f"{folder}: the folder holds no files" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_named_pipe_given_as_predictions_is_refused_without_blocking(cli, inline, files, tmp_path):
    import threading

    _, ref = files
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    done = []
    worker = threading.Thread(target=lambda: done.append(_score(cli, "-p", fifo, "-r", ref)), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():
        with open(fifo, "w"):  # release the blocked reader so the test process can go on
            pass
        worker.join(30)
        pytest.fail("pathkit score blocked reading a named pipe")
    assert done[0].exit_code == 2 and "not a regular file (a named pipe)" in done[0].stderr


def test_out_naming_an_existing_file_is_refused_before_scoring(cli, inline, files, tmp_path, monkeypatch):
    pred, ref = files
    out = tmp_path / "scores.txt"
    out.write_text("keep me")
    calls = []
    import pathkit_core.evaluation.runner as runner

    monkeypatch.setattr(runner, "score", lambda *a, **k: calls.append(1))
    result = _score(cli, "-p", pred, "-r", ref, "--out", out)
    assert result.exit_code == 2 and "--out" in result.stderr and "is an existing file" in result.stderr
    assert calls == [] and out.read_text() == "keep me"
    below = _score(cli, "-p", pred, "-r", ref, "--out", out / "sub")
    assert below.exit_code == 2 and "is a file, so the folder cannot be made" in below.stderr


@pytest.mark.parametrize("code, message", [(errno.EACCES, "permission denied"),
                                           (errno.EROFS, "read-only")])
def test_out_in_an_unwritable_folder_is_refused_before_scoring(cli, inline, files, tmp_path, monkeypatch,
                                                               code, message):
    pred, ref = files
    locked = tmp_path / "locked"
    locked.mkdir()
    real = tempfile.mkstemp

    def refuse(*args, **kwargs):
        if str(kwargs.get("dir", "")).startswith(str(locked)):
            raise OSError(code, os.strerror(code))
        return real(*args, **kwargs)

    # Tests may run as root, which writes through permission bits; the refusal is simulated.
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    import pathkit_core.evaluation.runner as runner

    calls = []
    monkeypatch.setattr(runner, "score", lambda *a, **k: calls.append(1))
    result = _score(cli, "-p", pred, "-r", ref, "--out", locked / "new" / "scores")
    assert result.exit_code == 2 and message in result.stderr and str(locked) in result.stderr
    assert calls == [] and not (locked / "new").exists()


def test_out_on_a_real_read_only_folder(cli, inline, files, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes through permission bits")
    pred, ref = files
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        result = _score(cli, "-p", pred, "-r", ref, "--out", ro / "scores")
    finally:
        ro.chmod(0o755)
    assert result.exit_code == 2 and "permission denied" in result.stderr


def test_a_good_out_still_works_and_files_are_json(cli, inline, files, tmp_path):
    pred, ref = files
    out = tmp_path / "fresh" / "scores"
    result = _score(cli, "-p", pred, "-r", ref, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert json.loads((out / "metrics.json").read_text())["n_cases"] == len(PREDS) == len(REFS)
    assert not list(out.parent.glob(".pathkit-write-check.*"))


def test_a_lone_surrogate_is_flagged_in_the_per_case_table(cli, inline, files, tmp_path):
    import polars as pl

    _, ref = files
    pred = tmp_path / "p.json"
    # "\ud800" is valid JSON but no character: Python keeps it as a lone surrogate
    pred.write_text('[{"id": "a", "report": "invasive \\ud800 carcinoma"}, {"id": "b", "report": "benign"}]')
    out = tmp_path / "out"
    result = _score(cli, "-p", pred, "-r", ref, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert "1 case(s) have damaged text" in result.stderr
    table = pl.read_parquet(out / "per_case.parquet")
    flags = dict(zip(table["id"], table["input_flags"], strict=True))
    assert flags == {"a": "prediction: lone surrogate U+D800 at character 9", "b": ""}
    assert table["words"].to_list() == [3.0, 1.0]  # still scored


def test_clean_inputs_add_no_flag_column(cli, inline, files, tmp_path):
    import polars as pl

    pred, ref = files
    assert _score(cli, "-p", pred, "-r", ref, "--out", tmp_path / "o").exit_code == 0
    assert "input_flags" not in pl.read_parquet(tmp_path / "o" / "per_case.parquet").columns


def test_text_flags():
    from pathkit_core.evaluation.runner import text_flags

    assert text_flags("fine text") == [] and text_flags(None) == []
    assert text_flags("a\udc80b\ufffd") == ["lone surrogate U+DC80 at character 1",
                                            "U+FFFD replacement character at character 3"]
    assert text_flags("\ud800" * 5) == ["lone surrogate U+D800 at character 0, U+D800 at character 1, "
                                        "U+D800 at character 2 and 2 more"]


def test_out_on_a_real_read_only_mount(files, tmp_path):
    import sys

    from tests._mounts import run_on_tmpfs

    pred, ref = files
    mnt = tmp_path / "ro"
    proc = run_on_tmpfs(mnt, [sys.executable, "-c", "from pathkit_core.cli import main; main()", "score", "-m", "nlg",
                              "--option", "meteor=false", "-p", str(pred), "-r", str(ref), "--out",
                              str(mnt / "scores")], size_kib=64, read_only=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{mnt}: the filesystem is read-only" in proc.stderr and "Traceback" not in proc.stderr
    assert "scores over" not in proc.stdout  # refused before scoring
