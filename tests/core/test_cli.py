"""The CLI: listing, info, score in every accepted format, error messages, start-up time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import Metric, MetricResult, PathkitError
from pathkit_tasks import TASK_REPORT
from tests._imports import imported_by
from tests._pipes import without_blocking
from tests.core._toy import ComponentPlugin, WordCount

PREDS = [{"id": "a", "report": "invasive carcinoma grade 2"}, {"id": "b", "report": "benign"}]
REFS = [{"id": "a", "report": "invasive carcinoma"}, {"id": "b", "report": "benign breast tissue"}]


@pytest.fixture
def files(tmp_path):
    pred, ref = tmp_path / "pred.json", tmp_path / "ref.json"
    pred.write_text(json.dumps(PREDS))
    ref.write_text(json.dumps(REFS))
    return pred, ref


@pytest.fixture
def inline(fresh_registry):
    return fresh_registry({"inline": ComponentPlugin(WordCount)})


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0 and result.stdout.strip() == "pathkit 0.2.0"


def test_list_plugins_json_shows_components(cli, inline):
    result = cli("list", "plugins", "--json")
    assert result.exit_code == 0
    records = {r["name"]: r for r in json.loads(result.stdout)}
    assert records["inline"]["status"] == "ok"
    assert records["inline"]["components"]["metric"] == ["word-count"]


def test_list_metrics_and_info(cli, inline):
    listed = json.loads(cli("list", "metrics", "--json").stdout)
    assert [m["name"] for m in listed] == ["word-count"]
    info = json.loads(cli("info", "word-count", "--json").stdout)
    assert info[0]["kind"] == "metric" and info[0]["tasks"] == ["report"]
    bad = cli("info", "word-cont")
    assert bad.exit_code == 2 and "did you mean word-count" in bad.stderr
    wrong = cli("list", "metric")
    assert wrong.exit_code == 2 and "did you mean 'metrics'" in wrong.stderr


def test_score_reg_json_and_out_dir(cli, inline, files, tmp_path):
    pred, ref = files
    out = tmp_path / "out"
    result = cli("score", "--metric", "word-count", "--predictions", pred, "--references", ref,
                 "--out", out, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"word-count": {"words": 2.5}}
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["metrics"] == {"word-count": {"words": 2.5}} and saved["n_cases"] == 2
    per_case = pl.read_parquet(out / "per_case.parquet")
    assert per_case["id"].to_list() == ["a", "b"] and per_case["words"].to_list() == [4.0, 1.0]


def test_score_jsonl_and_pathbench(cli, inline, files, tmp_path):
    _, ref = files
    jsonl = tmp_path / "pred.jsonl"
    jsonl.write_text("\n".join(json.dumps(p) for p in PREDS) + "\n")
    assert json.loads(cli("score", "-m", "word-count", "-p", jsonl, "-r", ref, "--json").stdout) == {
        "word-count": {"words": 2.5}}
    bench = tmp_path / "pathbench.json"
    bench.write_text(json.dumps({p["id"]: {"pred": p["report"], "target": r["report"]}
                                 for p, r in zip(PREDS, REFS, strict=True)}))
    result = cli("score", "-m", "word-count", "-p", bench, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == {"word-count": {"words": 2.5}}


def test_score_table_output(cli, inline, files):
    pred, ref = files
    result = cli("score", "-m", "word-count", "-p", pred, "-r", ref)
    assert result.exit_code == 0 and "words" in result.stdout and "2.5000" in result.stdout


def test_missing_and_extra_ids_are_listed(cli, inline, files, tmp_path):
    _, ref = files
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "a", "report": "x"}, {"id": "zz", "report": "y"}]))
    result = cli("score", "-m", "word-count", "-p", pred, "-r", ref)
    assert result.exit_code == 2
    assert "missing from" in result.stderr and "b" in result.stderr and "zz" in result.stderr


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"id": "a", "report": "x"}\n{"id": "b", "report": \n', "line 2"),
        ('[{"id": "a", "report": "x"}, {"report": "y"}]', "item 1"),
        ('[{"id": "a", "text2": "x"}]', "no value key"),
        ('{"a": {"pred": "x"}}', "no \"target\""),
        ("", "empty"),
        ('[{"id": "a", "report": "x"}, {"id": "a", "report": "y"}]', "'a' (item 0, item 1)"),
    ],
)
def test_malformed_predictions_name_file_and_place(cli, inline, files, tmp_path, content, message):
    _, ref = files
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    result = cli("score", "-m", "word-count", "-p", bad, "-r", ref)
    assert result.exit_code == 2
    assert "bad.json" in result.stderr and message in result.stderr


def test_unknown_metric_suggests(cli, inline, files):
    pred, ref = files
    result = cli("score", "-m", "word-cnt", "-p", pred, "-r", ref)
    assert result.exit_code == 2 and "did you mean word-count" in result.stderr


def test_references_required_for_plain_lists(cli, inline, files):
    pred, _ = files
    result = cli("score", "-m", "word-count", "-p", pred)
    assert result.exit_code == 2 and "--references" in result.stderr


def test_doctor_json(cli, inline, tmp_path):
    result = cli("doctor", "--workdir", tmp_path / "ws", "--json")
    assert result.exit_code == 0
    checks = json.loads(result.stdout)
    assert checks["python"]["status"] == "ok" and checks["workspace"]["status"] == "ok"
    assert "torch" in checks and "openslide" in checks
    # Java is METEOR's need, so the metrics plugin declares it (doctor_checks hook): absent here
    assert not any(name.startswith("java") for name in checks)


def test_doctor_runs_the_plugins_own_checks(cli, fresh_registry, tmp_path):
    class Broken:
        @hookimpl
        def doctor_checks(self):
            raise RuntimeError("cannot look")

    class Fine:
        @hookimpl
        def doctor_checks(self):
            return [("gpu driver", "missing", "no driver found")]

    fresh_registry({"broken": Broken(), "fine": Fine()})
    checks = json.loads(cli("doctor", "--workdir", tmp_path / "ws", "--json").stdout)
    assert checks["gpu driver"] == {"status": "missing", "detail": "no driver found"}
    assert checks["broken check"]["status"] == "error" and "cannot look" in checks["broken check"]["detail"]


def test_doctor_checks_java_for_meteor_through_the_metrics_plugin(cli, installed_registry, tmp_path):
    checks = json.loads(cli("doctor", "--workdir", tmp_path / "ws", "--json").stdout)
    assert checks["java (METEOR)"]["status"] in ("ok", "missing")


def _pathkit() -> str:
    return str(Path(sys.executable).with_name("pathkit"))


def test_help_imports_no_heavy_library():
    """`pathkit --help` stays fast because it imports none of the heavy libraries (whole-process
    start-up is measured by benchmarks/bench_score_cold.py, not asserted here: a timed test fails
    on a busy machine)."""
    out = subprocess.run([_pathkit(), "--help"], capture_output=True, text=True, check=True)
    assert "score" in out.stdout and "run" in out.stdout
    heavy = ("torch", "timm", "polars", "openslide", "scipy", "sklearn", "multiprocessing")
    assert imported_by("from pathkit_core.cli import build_app; build_app()", heavy) == []


def test_installed_example_plugin_is_discovered_and_scores(files, tmp_path):
    """The example third-party package, pip-installed non-editable by `make install`."""
    listed = subprocess.run([_pathkit(), "list", "plugins", "--json"], capture_output=True, text=True, check=True)
    records = {r["name"]: r for r in json.loads(listed.stdout)}
    assert records["example-length"]["status"] == "ok"
    assert records["example-length"]["distribution"] == "pathkit-example-plugin"
    assert records["example-length"]["components"]["metric"] == ["length-ratio"]
    import pathkit_example_plugin

    assert "site-packages" in pathkit_example_plugin.__file__, "example plugin must be installed non-editable"
    pred, ref = files
    scored = subprocess.run([_pathkit(), "score", "-m", "length-ratio", "-p", str(pred), "-r", str(ref), "--json"],
                            capture_output=True, text=True, check=True)
    # a: 4/2 words, b: 1/3 words
    assert json.loads(scored.stdout)["length-ratio"]["length_ratio"] == pytest.approx((2.0 + 1 / 3) / 2)


def test_score_options_reach_the_metric(cli, fresh_registry, files):
    seen = {}

    class Spy(Metric):
        name = "spy"
        tasks = (TASK_REPORT,)

        def compute(self, predictions, references, *, ids=None, context=None):
            seen.update(context["options"])
            return MetricResult({"x": 1.0})

    class P:
        @hookimpl
        def register_metrics(self, register):
            register(Spy)

    fresh_registry({"p": P()})
    pred, ref = files
    result = cli("score", "-m", "spy", "-p", pred, "-r", ref, "--option", "meteor=false",
                 "--option", "vocabulary=v.json", "--option", "n=3")
    assert result.exit_code == 0, result.stderr
    assert seen == {"meteor": False, "vocabulary": "v.json", "n": 3}
    bad = cli("score", "-m", "spy", "-p", pred, "-r", ref, "--option", "novalue")
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.stderr


def test_score_matches_ids_that_differ_only_by_a_slide_extension_and_says_so(cli, inline, files, tmp_path):
    _, ref = files
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": f"{p['id']}.tiff", "report": p["report"]} for p in PREDS]))
    result = cli("score", "-m", "word-count", "-p", pred, "-r", ref, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"word-count": {"words": 2.5}}
    assert "matched 2 prediction id(s) to reference ids that differ only by a slide file extension (e.g. 'a.tiff' " \
           "-> 'a')" in " ".join(result.stderr.split())
    # the other way round too; a real difference is still an error
    assert cli("score", "-m", "word-count", "-p", files[0], "-r", pred, "--json").exit_code == 0
    pred.write_text(json.dumps([{"id": "a.tiff", "report": "x"}, {"id": "c.tiff", "report": "y"}]))
    refused = cli("score", "-m", "word-count", "-p", pred, "-r", ref)
    assert refused.exit_code == 2 and "missing from" in refused.stderr


def test_extension_matching_never_merges_or_guesses():
    from pathkit_interop.records import match_extensions, without_slide_extension

    assert without_slide_extension("TCGA-A2-A0CM-01Z-00-DX1.8A7F") == "TCGA-A2-A0CM-01Z-00-DX1.8A7F"
    assert without_slide_extension("x.ome.tiff") == "x" and without_slide_extension("CMU-1.SVS") == "CMU-1"
    assert match_extensions({"a": 1}, {"a": 2}) == ({"a": 1}, [])
    # two references that would collapse into one id: left alone (the join then names the mismatch)
    assert match_extensions({"a.tiff": 1}, {"a": 2, "a.svs": 3}) == ({"a.tiff": 1}, [])
    assert match_extensions({"a.tiff": 1, "a.svs": 2}, {"a": 3}) == ({"a.tiff": 1, "a.svs": 2}, [])


def test_info_lists_a_datasets_options_and_layout(cli):
    result = cli("info", "slides-csv")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "expected layout: <root>/cohort.csv" in text
    for name in ("splits_file", "split_seed", "case", "skip_missing", "classes", "mpp"):
        assert f"│ {name} " in result.stdout, name
    assert 'JSON {"train": [ids]' in text  # cells are text, not rich markup
    info = json.loads(cli("info", "reg2025", "--json").stdout)[0]
    options = {o["name"]: o for o in info["options"]}
    assert options["split"] == {"name": "split", "type": "auto|pathreporteval|random", "default": "auto",
                                "help": options["split"]["help"]} and options["mpp"]["type"] == "float"
    assert info["layout"].startswith("<root>/train.json")


def test_a_core_command_builds_only_its_module():
    """`CORE_COMMANDS` names every core command and the module registering it: a process running
    one builds that module alone (no other command modules, no plugin commands)."""
    import typer

    from pathkit_core.cli import CORE_COMMANDS, _requested_command, build_app

    every = typer.main.get_command(build_app(with_plugins=False)).commands
    assert set(every) == set(CORE_COMMANDS)
    for name, module in CORE_COMMANDS.items():
        alone = set(typer.main.get_command(build_app(command=name)).commands)
        assert name in alone and alone == {n for n, m in CORE_COMMANDS.items() if m == module}, name
    assert _requested_command(["--version"]) is None and _requested_command(["score", "-m", "x"]) == "score"
    with_plugins = typer.main.get_command(build_app(command="crqs")).commands  # a plugin's command: all
    assert set(CORE_COMMANDS) <= set(with_plugins)
    # a command of the distribution's own plugins: only the built-in plugins' commands, no core module
    # and no third-party plugin (the goldmark plugin's `crossval`)
    builtin = set(typer.main.get_command(build_app(command="score")).commands)
    assert {"score", "features", "bench", "compare"} <= builtin and "crossval" in with_plugins
    assert not builtin & set(CORE_COMMANDS) and "crossval" not in builtin


# --------------------------------------------------------------------------- hardening (issue 28)


def test_a_named_pipe_as_run_config_is_refused_without_blocking(cli, tmp_path):
    import os

    fifo = tmp_path / "run.toml"
    os.mkfifo(fifo)
    result = without_blocking(lambda: cli("run", "--config", fifo), fifo)
    assert result.exit_code == 2
    assert f"--config {fifo} is not a regular file (a named pipe)" in result.stderr


@pytest.mark.parametrize("where", ["afile/sub", "afile"])
def test_a_run_workdir_that_cannot_be_made_is_one_line_before_any_work(cli, tmp_path, where):
    (tmp_path / "afile").write_text("a file")
    result = cli("run", "--workdir", tmp_path / where)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"error: --workdir {tmp_path / where}")


def _without_root_powers(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run `pathkit ARGS` so that file permissions apply: as root, with the capabilities that
    override them (dac_override, dac_read_search) dropped from the bounding set."""
    import os
    import shutil

    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root and setpriv is not available to drop the override capabilities")
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    return subprocess.run([*prefix, sys.executable, "-c", "from pathkit_core.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_an_unwritable_out_folder_is_one_line_before_any_work(tmp_path):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(PREDS))
    os.chmod(locked, 0o555)
    for args in (["tile", str(pred), "--out", str(locked / "tiles")],
                 ["score", "-m", "nlg", "-p", str(pred), "-r", str(pred), "--out", str(locked / "scores")]):
        done = _without_root_powers(args, tmp_path)
        assert done.returncode == 2, done.stderr
        err = done.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"error: {locked}: permission denied for writing"), err


def test_report_on_an_unreadable_file_is_one_line_naming_it(tmp_path):
    import os

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"metrics": {"nlg": {"BLEU-4": 0.5}}}))
    os.chmod(run / "metrics.json", 0o000)
    done = _without_root_powers(["report", str(run)], tmp_path)
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert err == f"error: {run / 'metrics.json'}: Permission denied", err


def test_report_on_a_metrics_file_with_a_value_of_the_wrong_type_names_it(cli, tmp_path):
    from pathkit_core.report.run_folder import RunFolder

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"metrics": {"nlg": {"BLEU-4": "high"}}}))
    with pytest.raises(PathkitError, match=r"metrics\.json: metrics\.nlg\.BLEU-4 is 'high', not a number"):
        _ = RunFolder(run).metrics
    result = cli("report", run)
    assert result.exit_code == 2 and "metrics.nlg.BLEU-4 is 'high', not a number" in result.stderr
    (run / "metrics.json").write_text(json.dumps({"metrics": ["nlg"]}))
    assert "metrics is list, not an object of scores" in cli("report", run).stderr


_KILLED_WRITING_PER_CASE = ("import os, polars; polars.DataFrame.write_parquet = lambda *a, **k: os._exit(9); "
                            "from pathkit_core.cli import main; main()")


def test_score_killed_while_rewriting_a_result_leaves_the_old_result_whole(files, tmp_path):
    import os

    pred, ref = files
    out = tmp_path / "out"
    base = [sys.executable, "-c"]
    args = ["score", "-m", "nlg", "--option", "meteor=false", "-p", str(pred), "-r", str(ref), "--out", str(out)]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    first = subprocess.run([*base, "from pathkit_core.cli import main; main()", *args], capture_output=True,
                           text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(old) == {"metrics.json", "per_case.parquet"}
    pred.write_text(json.dumps([{**p, "report": "benign"} for p in PREDS]))  # other predictions, other scores
    killed = subprocess.run([*base, _KILLED_WRITING_PER_CASE, *args], capture_output=True, text=True, env=env,
                            timeout=300)
    assert killed.returncode == 9, killed.stderr  # died between metrics.json and per_case.parquet
    assert {p.name: p.read_bytes() for p in out.iterdir()} == old  # the old result, whole
    orphans = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    assert orphans, "the killed writer left nothing beside: it did not write beside"
    again = subprocess.run([*base, "from pathkit_core.cli import main; main()", *args], capture_output=True,
                           text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []  # cleaned by the next run
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["metrics"] != json.loads(old["metrics.json"])["metrics"]
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "per_case.parquet"]


def test_score_refuses_an_out_folder_holding_other_files(cli, inline, files, tmp_path):
    pred, ref = files
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own")
    result = cli("score", "--metric", "word-count", "--predictions", pred, "--references", ref, "--out", out)
    assert result.exit_code == 2 and "holds other files (notes.txt)" in result.stderr
    assert (out / "notes.txt").read_text() == "the user's own"


def test_version_is_printed_without_typer_as_typer_prints_it(cli, capsys):
    from pathkit_core.cli import main

    main(["--version"])
    assert capsys.readouterr().out == cli("--version").stdout == f"pathkit {__import__('pathkit_core').__version__}\n"
