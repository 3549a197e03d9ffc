"""`pathkit score` run without typer (`score_cli.run_plain`, what a scoring process runs) prints,
writes and fails exactly as the typer command does; `pathkit` finds it through the built-in plugins'
`plain_commands` and then imports neither typer, pydantic nor rich."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import polars as pl
import pytest

from pathkit_interop import score_cli
from tests.core._toy import ComponentPlugin, WordCount

PREDS = [{"id": "a", "report": "invasive carcinoma grade 2"}, {"id": "b", "report": "benign \ufffd"}]
REFS = [{"id": "a", "report": "invasive carcinoma"}, {"id": "b", "report": "benign breast tissue"}]


class Words(WordCount):
    name = "words"


@pytest.fixture
def files(tmp_path, fresh_registry):
    fresh_registry({"inline": ComponentPlugin(Words)})
    pred, ref, renamed = tmp_path / "pred.json", tmp_path / "ref.json", tmp_path / "renamed.json"
    pred.write_text(json.dumps(PREDS))
    ref.write_text(json.dumps(REFS))
    renamed.write_text(json.dumps([{**p, "id": p["id"] + ".svs"} for p in PREDS]))
    return {"pred": pred, "ref": ref, "renamed": renamed, "gone": tmp_path / "gone.json", "out": tmp_path / "out",
            "bad": tmp_path / "bad.json"}


COMMAND_LINES = {
    "json": ["-m", "words", "-p", "{pred}", "-r", "{ref}", "--json"],
    "table": ["-m", "words", "-p", "{pred}", "-r", "{ref}"],
    "out and table": ["--metric=words", "-p", "{pred}", "-r", "{ref}", "--out", "{out}"],
    "out and json, an option": ["-m", "words", "-p", "{pred}", "-r", "{ref}", "-o", "{out}", "--json",
                                "--option", "scale=2"],
    "ids matched across a slide extension": ["-m", "words", "-p", "{renamed}", "-r", "{ref}", "--json"],
    "unknown metric": ["-m", "wordz", "-p", "{pred}", "-r", "{ref}"],
    "no references": ["-m", "words", "-p", "{pred}"],
    "missing file": ["-m", "words", "-p", "{gone}", "-r", "{ref}"],
    "bad option": ["-m", "words", "-p", "{pred}", "-r", "{ref}", "--option", "scale"],
    "bad JSON": ["-m", "words", "-p", "{bad}", "-r", "{ref}"],
}


@pytest.mark.parametrize("case", COMMAND_LINES)
def test_plain_and_typer_runs_print_and_write_the_same(case, files, cli, capsys):
    files["bad"].write_text('[{"id": "a", "report": "x"}, {"report": "y"}]')
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in COMMAND_LINES[case]]

    def written():
        out = files["out"]
        found = {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.exists() else {}
        shutil.rmtree(out, ignore_errors=True)
        return found

    typer_run = cli("score", *argv)
    typer_files = written()
    capsys.readouterr()
    status = score_cli.run_plain(argv)
    plain = capsys.readouterr()
    assert (status, plain.out, plain.err) == (typer_run.exit_code, typer_run.stdout, typer_run.stderr)
    assert written() == typer_files
    if case.startswith("out"):
        assert set(typer_files) == {"metrics.json", "per_case.parquet"}
    if case == "out and json, an option":
        assert json.loads(plain.out) == {"words": {"words": 6.0}}  # (4 + 2 words) / 2, times 2
    if case in ("json", "table"):
        assert "damaged text" in plain.err and "U+FFFD" in plain.err  # the flagged-case warning, on both
    if case == "ids matched across a slide extension":
        assert "matched 2 prediction id(s)" in plain.err
    if case not in ("json", "table", "ids matched across a slide extension") and not case.startswith("out"):
        assert status == 2 and plain.err.startswith("error: ")


@pytest.mark.parametrize("argv", [["--help"], ["-m", "words"], ["-mwords", "-p", "x"]])
def test_command_lines_the_plain_parser_does_not_read_go_to_typer(argv, files):
    assert score_cli.run_plain(argv) is None


_CHILD = """
import atexit, json, sys
from pathkit_core.cli import main
seen = ("typer", "click", "pydantic", "rich", "pathkit_bench", "pathkit_datasets", "pathkit_generators",
        "pathkit_metrics", "polars")
atexit.register(lambda: print(json.dumps(sorted(m for m in seen if m in sys.modules)), file=sys.stderr))
main(sys.argv[2:])  # typer ends the process itself
"""
_NO_PLAIN = "import pathkit_core.plugins as p; p.plain_command = lambda name: None; from pathkit_core.cli import main"


def test_pathkit_score_runs_without_typer(tmp_path):
    """The built-in interop plugin names its plain `score`: a scoring process then imports neither
    typer, pydantic nor rich, and prints what the typer command prints (plain commands switched
    off)."""
    pred, ref = tmp_path / "pred.json", tmp_path / "ref.json"
    pred.write_text(json.dumps(PREDS[:1]))  # no damaged text: no warning (printed through rich)
    ref.write_text(json.dumps(REFS[:1]))
    argv = ["score", "-m", "length-ratio", "-p", str(pred), "-r", str(ref), "--json"]

    def child(*args, plain=True):
        code = _CHILD if plain else _CHILD.replace("from pathkit_core.cli import main", _NO_PLAIN)
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)

    plain, typer_run = child("run", *argv), child("run", *argv, plain=False)
    assert plain.returncode == typer_run.returncode == 0, plain.stderr + typer_run.stderr
    assert not {"typer", "click", "pydantic", "rich"} & set(json.loads(plain.stderr.splitlines()[-1]))
    assert {"typer", "pydantic", "rich"} <= set(json.loads(typer_run.stderr.splitlines()[-1]))
    assert plain.stdout == typer_run.stdout and json.loads(plain.stdout)["length-ratio"]["length_ratio"] > 0
    # help is typer's, through the same entry
    shown = child("run", "score", "--help")
    assert shown.returncode == 0 and "--predictions" in shown.stdout and "Usage: pathkit score" in shown.stdout


def test_pathkit_score_crqs_json_imports_no_polars(tmp_path):
    """`pathkit score -m crqs --json` writes no table, so it builds none: the summary comes from
    the comparisons, and polars is not imported; with `--out` the table is built and written,
    and the printed summary is the same."""
    pred, ref = tmp_path / "pred.json", tmp_path / "ref.json"
    reports = ["Stomach, endoscopic biopsy; Tubular adenoma with low grade dysplasia",
               "Breast, core biopsy; Invasive carcinoma of no special type, grade II", "benign \ufffd"]
    pred.write_text(json.dumps([{"id": str(i), "report": r} for i, r in enumerate(reports[::-1])]))
    ref.write_text(json.dumps([{"id": str(i), "report": r} for i, r in enumerate(reports)]))
    def child(*args):
        return subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True)

    argv = ["run", "score", "-m", "crqs", "-p", str(pred), "-r", str(ref), "--json"]
    summary_only, written = child(*argv), child(*argv, "--out", str(tmp_path / "out"))
    assert summary_only.returncode == written.returncode == 0, summary_only.stderr + written.stderr
    assert json.loads(summary_only.stderr.splitlines()[-1]) == [
        "pathkit_bench", "pathkit_metrics", "rich"]  # rich: the warning
    assert "2 case(s) have damaged text" in summary_only.stderr  # the warning reads the flags, not the table
    assert "polars" in json.loads(written.stderr.splitlines()[-1])
    assert summary_only.stdout == written.stdout and json.loads(written.stdout)["crqs"]["n_cases"] == 3
    table = pl.read_parquet(tmp_path / "out" / "per_case.parquet")
    assert table["id"].to_list() == ["0", "1", "2"] and table["input_flags"].to_list()[1] == ""
