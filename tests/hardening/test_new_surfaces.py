"""The surfaces added after issue 47 was filed, attacked the same way: the survival, ordinal and
retrieval scores' inputs (wrong types, NaN, out-of-range classes, bad options), the ordinal task's
grade order, `pathkit bench --slurm`'s sbatch options, the command line's warnings and errors."""

from __future__ import annotations

import json
import shlex
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from pathkit_core.contracts import Case, PathkitError


def _retrieval(retrieved, labels, **options):
    from pathkit_metrics.retrieval import RetrievalMetric

    preds = [{"retrieved": r} for r in retrieved]
    return RetrievalMetric().compute(preds, labels, context={"options": {"n_resamples": 0, **options}})


@pytest.mark.parametrize("retrieved, labels, options, problem", [
    ([[float("nan")]], [0], {}, "prediction 0: nan is not a class index"),
    ([[-1, 0]], [0], {}, "prediction 0: -1 is not a class index"),
    ([[True]], [0], {}, "prediction 0: True is not a class index"),
    ([[3]], ["a"], {"classes": "a,b,c"}, "prediction 0: 3 is not a class index (0..2)"),
    ([["z"]], ["a"], {"classes": "a,b"}, "prediction 0: 'z' is not a class index"),
    ([[0]], [-2], {}, "reference 0: -2 is not a class index"),
    ([[0]], [1.5], {}, "reference 0: 1.5 is not a class index"),
    ([[0]], [0], {"ks": "abc"}, "ks 'abc' must be positive whole numbers"),
    ([[0]], [0], {"ks": "0"}, "must be positive whole numbers"),
])
def test_retrieval_inputs_outside_the_classes_are_one_line(retrieved, labels, options, problem):
    with pytest.raises(PathkitError, match=problem.replace("(", r"\(").replace(")", r"\)")) as info:
        _retrieval(retrieved, labels, **options)
    assert "\n" not in str(info.value)


def test_retrieval_takes_indices_names_and_single_ks():
    result = _retrieval([[1, 0], [1.0, 1]], ["b", 1], classes="a,b", ks=1)
    assert result.summary["top1_acc"] == 1.0  # both queries retrieve class 1 first


@pytest.mark.parametrize("classes, problem", [
    (1, r"classes \['1'\] must name two or more distinct grades"),
    ("1,2,2,3", "distinct grades"),
    (["3"], "two or more"),
])
def test_ordinal_classes_of_any_type_are_one_line(classes, problem):
    from pathkit_metrics.ordinal import OrdinalMetric

    with pytest.raises(PathkitError, match=problem):
        OrdinalMetric().compute([{"label": "1"}], [{"label": "1"}], context={"options": {"classes": classes}})


def test_the_ordinal_task_refuses_a_grade_order_that_repeats_a_grade():
    from pathkit_tasks.ordinal.task import OrdinalTask

    dataset = SimpleNamespace(name="d", ordered_classes=lambda: ["1", "2", "2", "3"], class_names=lambda: ["1", "2"])
    task = OrdinalTask()
    assert "repeat a grade" in task.check_target(Case("c", "c", "2"), dataset)
    good = SimpleNamespace(name="d", ordered_classes=lambda: ["1", "2", "3"], class_names=lambda: ["1", "2", "3"])
    assert task.check_target(Case("c", "c", "2"), good) is None
    assert "not one of" in task.check_target(Case("c", "c", "4"), good)


def _survival(n=24, seed=0, **options):
    from pathkit_metrics.survival import SurvivalMetric

    rng = np.random.default_rng(seed)
    time = rng.uniform(1, 10, n)
    event = (np.arange(n) < 3).astype(int)  # three events: many resamples hold none
    preds = [{"risk": float(-t)} for t in time]
    refs = [{"time": float(t), "event": int(e)} for t, e in zip(time, event, strict=True)]
    return SurvivalMetric().compute(preds, refs, context={"options": options})


@pytest.mark.parametrize("options, problem", [
    ({"tau": -3}, "tau -3.0 must be a positive finite time"),
    ({"tau": 0}, "tau 0.0 must be a positive finite time"),
    ({"tau": float("nan")}, "tau nan must be a positive finite time"),
    ({"horizons": "abc"}, "horizons 'abc' must be finite times"),
    ({"horizons": "2,nan"}, "horizons '2,nan' must be finite times"),
    ({"horizons": [True]}, "must be finite times"),
])
def test_survival_options_are_checked(options, problem):
    with pytest.raises(PathkitError, match=problem):
        _survival(n_resamples=0, **options)


def test_a_survival_score_with_resamples_lacking_events_prints_no_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # scikit-survival's "invalid value" would raise here
        result = _survival(n_resamples=50)
    assert result.summary["n_events"] == 3 and 0 <= result.summary["c_index"] <= 1


def test_user_warnings_on_the_command_line_are_one_line(monkeypatch):
    import io

    from pathkit_core.cli import one_line_warnings

    python_form = []
    monkeypatch.setattr(warnings, "showwarning", lambda *args, **kwargs: python_form.append(args[1]))
    one_line_warnings()
    shown = io.StringIO()
    warnings.showwarning("retrieval: ignoring unknown option(s) k;\n  known: ks", UserWarning, "runner.py", 58, shown)
    assert shown.getvalue() == "warning: retrieval: ignoring unknown option(s) k; known: ks\n"
    warnings.showwarning("old name is deprecated", DeprecationWarning, "plugin.py", 3)  # for the plugin's author
    assert python_form == [DeprecationWarning]


def test_an_error_raised_outside_a_command_prints_its_markup_as_text(monkeypatch, capsys):
    import pathkit_core.cli as cli_module

    def boom(**kwargs):
        raise PathkitError("no [[tasks]] in [run] of [bold]x.toml")

    monkeypatch.setattr(cli_module, "build_app", lambda command=None: boom)
    with pytest.raises(SystemExit) as info:
        cli_module.main(["list"])
    assert info.value.code == 2
    assert "no [[tasks]] in [run] of [bold]x.toml" in " ".join(capsys.readouterr().err.split())


HOSTILE_BUT_ONE_ARGUMENT = ["--partition=gpu;touch {pwned}", "--comment=$(touch {pwned})", "--comment=`touch {pwned}`",
                            "--comment=a b && touch {pwned}", "--comment='\"|&<>"]


def test_sbatch_options_reach_sbatch_as_single_arguments_never_the_job_script(tmp_path, fake_sbatch):
    from pathkit_bench.suite.slurm import bench_command, submit

    pwned = tmp_path / "pwned"
    options = [o.format(pwned=pwned) for o in HOSTILE_BUT_ONE_ARGUMENT]
    submit(tmp_path / "s.toml", tmp_path / "ws", "tiny", 2, options=options, cpu=True)
    wrap = f"--wrap={shlex.join(bench_command(tmp_path / 's.toml', tmp_path / 'ws', cpu=True))}"
    for call in json.loads(fake_sbatch.read_text()):
        assert call[-1] == wrap  # the job's script is pathkit's command only
        assert [a for a in call if a in options] == options
    assert not pwned.exists()


@pytest.mark.parametrize("option, problem", [
    ("--comment=a\nsrun rm -rf ~", "newline or another control character"),
    ("--comment=a\rb", "control character"), ("--comment=a\x00b", "control character"),
    ("job.sh", "is not an sbatch option"), ("", "is not an sbatch option"), ("--", "is not an sbatch option"),
    ("--wrap=rm -rf ~", "would replace what pathkit sets on its jobs (--wrap)"),
    ("--array=0-99", "(--array)"), ("-a0-3", "(-a0-3)"), ("--dependency=singleton", "(--dependency)"),
    ("-dafterany:1", "would replace"),
])
def test_sbatch_options_that_could_inject_or_replace_are_refused_before_any_submission(tmp_path, fake_sbatch,
                                                                                        option, problem):
    from pathkit_bench.suite.slurm import submit

    with pytest.raises(PathkitError) as info:
        submit(tmp_path / "s.toml", tmp_path / "ws", "tiny", 2, options=["--partition=gpu", option])
    assert problem in str(info.value) and "\n" not in str(info.value).replace(repr(option), "")
    assert not fake_sbatch.exists() and not (tmp_path / "ws").exists()


@pytest.mark.parametrize("name", ["a\nb", "\x1b[2J", "../x"])
def test_a_suite_name_with_control_characters_or_a_way_out_never_names_a_log_folder(tmp_path, fake_sbatch, name):
    from pathkit_bench.suite.slurm import submit

    with pytest.raises(PathkitError, match="suite name"):
        submit(tmp_path / "s.toml", tmp_path / "ws", name, 2)
    assert not fake_sbatch.exists()


def test_paths_quoting_user_input_are_printed_as_written(tmp_path, cli):
    rows = [(f"c{i}", float(i + 1), i % 2) for i in range(8)]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"id": c, "risk": -t}) + "\n" for c, t, _ in rows))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps({"id": c, "time": t, "event": e}) + "\n" for c, t, e in rows))
    out = tmp_path / "[bold]res[/bold]"
    result = cli("score", "--metric", "survival", "-p", tmp_path / "p.jsonl", "-r", tmp_path / "r.jsonl",
                 "--out", out, "--option", "n_resamples=0")
    assert result.exit_code == 0, result.output
    assert f"results written to {out}" in "".join(result.stdout.split("\n"))


GOOD_REFS = [{"id": f"c{i}", "time": float(i + 1), "event": i % 2} for i in range(6)]
GOOD_PREDS = [{"id": f"c{i}", "risk": float(-i)} for i in range(6)]


@pytest.mark.parametrize("preds, refs, problem", [
    (GOOD_PREDS + GOOD_PREDS[:1], GOOD_REFS, "appear more than once"),
    (GOOD_PREDS, GOOD_REFS + GOOD_REFS[2:3], "appear more than once"),
    ([{**GOOD_PREDS[0], "risk": "NaN"}, *GOOD_PREDS[1:]], GOOD_REFS, "risk 'NaN' is not a finite number"),
    ([{**GOOD_PREDS[0], "risk": [1]}, *GOOD_PREDS[1:]], GOOD_REFS, "risk [1] is not a finite number"),
    (GOOD_PREDS, [{**GOOD_REFS[0], "time": -1}, *GOOD_REFS[1:]], "time -1 is negative"),
    (GOOD_PREDS, [{**GOOD_REFS[0], "event": 2}, *GOOD_REFS[1:]], "event 2 is not 0 (censored) or 1"),
    (GOOD_PREDS, [{"id": "c0", "event": 1}, *GOOD_REFS[1:]], "is not {\"time\""),
    (GOOD_PREDS, [{**GOOD_REFS[0], "event": "[bold]x[/bold]"}, *GOOD_REFS[1:]], "event '[bold]x[/bold]' is not"),
])
def test_pathkit_score_survival_inputs_are_one_line(tmp_path, cli, preds, refs, problem):
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    result = cli("score", "--metric", "survival", "-p", tmp_path / "p.jsonl", "-r", tmp_path / "r.jsonl",
                 "--option", "n_resamples=0")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert problem in result.stderr and len(result.stderr.strip().splitlines()) == 1
