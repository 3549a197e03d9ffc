"""One option table, two readers: the plain parser reads a command line exactly as typer does, or
leaves it to typer (None); typer's command built from the table takes the same values."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_sdk.commands import REQUIRED, CliOption, parse_plain, run_plain, typer_command

TABLE = (
    CliOption("metric", ("--metric", "-m"), str, REQUIRED, "names", multiple=True),
    CliOption("predictions", ("--predictions", "-p"), Path, REQUIRED, "file"),
    CliOption("references", ("--references", "-r"), Path, None, "file"),
    CliOption("dataset", ("--dataset", "-d"), str, None, "name"),
    CliOption("as_json", ("--json",), bool, False, "flag"),
    CliOption("option", ("--option",), str, ("k=v",), "pairs", multiple=True),
)

READ = [
    ["-m", "crqs", "-p", "a.json", "--json"],
    ["--metric=crqs,nlg", "--metric", "bleu", "-p", "a", "-r", "b", "-d", "reg", "--option", "x=1", "--option=y=2"],
    ["-p", "a", "-m", "x", "-p", "b", "-d", "one", "-d", "two"],  # a single option given twice: the last
    ["--predictions", "dir/", "--metric", "x", "--references=r.jsonl"],
]
LEFT_TO_TYPER = [
    [],  # required options missing: typer's usage error
    ["-m", "x"],
    ["--help"],
    ["-m", "x", "-p", "a", "--help"],
    ["-m", "x", "-p", "a", "extra"],  # a positional word
    ["-mx", "-p", "a"],  # click's glued short option
    ["-m", "-x", "-p", "a"],  # a value that looks like an option
    ["-m", "x", "-p", "a", "--json=true"],
    ["-m", "x", "-p", "a", "--"],
    ["-m", "x", "-p", ""],  # click's own message for an empty path
    ["-m", "x", "-p", "a", "--no-json"],
    ["-m", "x", "-p"],  # an option without its value
    ["-m", "x", "-p", "a", "--pred", "b"],  # click's prefix matching is not guessed at
]


def _typer_values(argv):
    """What typer passes to the command built from TABLE (None: typer refused the line)."""
    import typer
    from typer.testing import CliRunner

    seen = {}
    app = typer.Typer()
    app.command("go")(typer_command(TABLE, lambda **kw: seen.update(kw), "Go."))
    app.command("other")(lambda: None)  # two commands: `go` is named on the command line
    result = CliRunner().invoke(app, ["go", *argv])
    return seen if result.exit_code == 0 and seen else None


@pytest.mark.parametrize("argv", READ)
def test_the_plain_parser_reads_what_typer_reads(argv):
    plain = parse_plain(TABLE, argv)
    assert plain is not None and plain == _typer_values(argv)


def test_defaults_of_options_not_given():
    assert parse_plain(TABLE, ["-m", "x", "-p", "a"]) == {
        "metric": ["x"], "predictions": Path("a"), "references": None, "dataset": None, "as_json": False,
        "option": ["k=v"]}


@pytest.mark.parametrize("argv", LEFT_TO_TYPER)
def test_anything_else_is_left_to_typer(argv):
    assert parse_plain(TABLE, argv) is None


def test_typer_reads_the_table_s_help_and_required_options():
    import typer
    from typer.testing import CliRunner

    app = typer.Typer()
    app.command("go")(typer_command(TABLE, lambda **kw: None, "Go somewhere."))
    app.command("other")(lambda: None)
    shown = CliRunner().invoke(app, ["go", "--help"], env={"COLUMNS": "200"}).stdout
    assert "Go somewhere." in shown and "--predictions" in shown and "-r" in shown and "pairs" in shown
    missing = CliRunner().invoke(app, ["go", "-p", "a"])
    assert missing.exit_code == 2 and "--metric" in missing.output


def test_run_plain_reports_user_errors_as_the_typer_command_does(capsys):
    def failing(**kw):
        raise PathkitError(f"{kw['predictions']}: no such file")

    assert run_plain(TABLE, failing, ["-m", "x", "-p", "gone.json"]) == 2
    assert capsys.readouterr().err == "error: gone.json: no such file\n"
    assert run_plain(TABLE, failing, ["--help"]) is None  # typer's to answer, nothing run
    assert run_plain(TABLE, lambda **kw: None, ["-m", "x", "-p", "a"]) == 0

    def unexpected(**kw):
        raise OSError("no path named")

    with pytest.raises(OSError, match="no path named"):  # not a user error: raised as typer would
        run_plain(TABLE, unexpected, ["-m", "x", "-p", "a"])
