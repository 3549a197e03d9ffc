"""Task `survival`: its target and prediction forms, the cohort reader's refusals (file and row),
the Kaplan-Meier section, and `pathkit compare` of two survival runs (paired C-index bootstrap)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from lifelines.statistics import multivariate_logrank_test

from pathkit_core.contracts import Case, PathkitError
from pathkit_tasks.survival.task import SurvivalTask
from tests.tasks._cohort import write_slide_table


def _case(target):
    return Case("SYN-1", "SYN-1", target)


@pytest.mark.parametrize(("target", "problem"), [
    ({"time": 3.0, "event": 1}, None),
    ({"time": 0, "event": "0"}, None),
    ({"time": -2, "event": 1}, "negative"),
    ({"time": float("nan"), "event": 1}, "not finite"),
    ({"time": "", "event": 1}, "missing"),
    ({"time": "soon", "event": 1}, "not a number"),
    ({"time": 4, "event": 2}, "not 0"),
    (5.0, "is not"),
])
def test_check_target(target, problem):
    got = SurvivalTask().check_target(_case(target), None)
    assert (got is None) if problem is None else (problem in got)


def test_prediction_forms_and_baseline():
    task = SurvivalTask()
    assert task.output(0.7, _case(None), None) == {"risk": 0.7}
    assert task.output({"risk": 2}, _case(None), None) == {"risk": 2.0}
    assert "not a finite number" in task.check_prediction({"risk": None}, _case(None), None)
    base = task.baseline_predictions("constant-risk", [{"time": 1, "event": 1}], [_case(None)], None)
    assert base == {"SYN-1": {"risk": 0.0}}


def _table(root: Path, rows: list[str]) -> Path:
    return write_slide_table(root, "survival.csv", "time,event,patient_id", [f"{r},P{i}" for i, r in enumerate(rows)])


def _open(root: Path, **options):
    from pathkit_datasets.slides_survival import SlidesSurvival

    ds = SlidesSurvival(root, **options)
    return ds, ds.splits()


@pytest.mark.parametrize(("bad", "message"), [("-3,1", "time '-3' is negative"), (",1", "missing"),
                                               ("5,2", "event '2' is not 0"), ("5,", "event '' is not 0")])
def test_cohort_table_refuses_bad_rows_with_file_and_row(tmp_path, bad, message):
    root = _table(tmp_path, ["4,1", bad, "6,0"])
    with pytest.raises(PathkitError) as info:
        _open(root)
    text = str(info.value)
    assert "survival.csv" in text and "line 3" in text and message in text


def test_cohort_table_reads_targets_and_stratifies_the_drawn_split(tmp_path):
    rows = [f"{1 + i % 9},{i % 2}" for i in range(40)]
    ds, parts = _open(_table(tmp_path, rows), test_fraction=0.25, val_fraction=0.25)
    cases = {c.case_id: c for split in parts for c in ds.cases(split)}
    assert cases["S3"].target == {"time": 4.0, "event": 1}
    assert "time" not in cases["S3"].meta and "event" not in cases["S3"].meta  # the answer stays out
    for split in ("train", "val", "test"):
        events = [cases[c].target["event"] for c in parts[split]]
        assert 0 < sum(events) < len(events)
    assert SurvivalTask().metric_context(ds, None)["train_survival"][0][1] in (0, 1)


class _Figures:
    def __init__(self):
        self.names = []

    def figure(self, name, fig, caption, data=None):
        self.names.append(name)
        self.data = data
        return f"<figure>{caption}</figure>"


class _Run:
    def __init__(self, risk, time, event):
        ids = [f"SYN-{i}" for i in range(len(risk))]
        self.predictions = {i: {"risk": float(r)} for i, r in zip(ids, risk, strict=True)}
        self.refs = {i: {"time": float(t), "event": int(e)} for i, t, e in zip(ids, time, event, strict=True)}
        self.figures = _Figures()

    def references(self):
        return self.refs


def test_kaplan_meier_section_has_both_groupings_and_the_logrank_p():
    from pathkit_tasks.survival.sections import risk_groups, survival_sections

    rng = np.random.default_rng(0)
    risk = rng.normal(size=60)
    time = rng.exponential(np.exp(-risk))
    event = rng.integers(0, 2, 60)
    run = _Run(risk, time, event)
    [section] = survival_sections(run)
    assert run.figures.names == ["kaplan_meier_risk_groups"]
    assert sorted(set(run.figures.data["tercile"])) == [0, 1, 2]
    expected = multivariate_logrank_test(time, risk_groups(risk, 2), event).p_value
    assert f"{expected:.3g}"[:4] in section.body or f"{expected:.3f}" in section.body
    assert "median split" in section.body and "terciles" in section.body


def _survival_run(run_dir: Path, risk, time, event) -> Path:
    from pathkit_core.evaluation.runner import score, write_results
    from pathkit_core.run.score import write_test_cases

    ids = [f"SYN-{i:03d}" for i in range(len(risk))]
    preds = {i: {"risk": float(r)} for i, r in zip(ids, risk, strict=True)}
    refs = {i: {"time": float(t), "event": int(e)} for i, t, e in zip(ids, time, event, strict=True)}
    result = score(["survival"], preds, refs, ids=ids, context={"options": {"n_resamples": 0}})
    run_dir.mkdir(parents=True)
    write_test_cases(run_dir / "test_cases.jsonl", [Case(i, i, refs[i]) for i in ids], refs)
    write_results(result, run_dir, extra={"run": {"dataset": "x", "encoder": run_dir.name, "generator": "g",
                                                  "seed": 0}, "task": "survival"})
    return run_dir


def test_compare_bootstraps_the_c_index_difference_on_the_same_patients(tmp_path):
    from lifelines.utils import concordance_index

    from pathkit_bench.compare import compare_runs
    from pathkit_core.report.run_folder import RunFolder

    rng = np.random.default_rng(1)
    n = 80
    truth = rng.normal(size=n)
    time = np.round(rng.exponential(np.exp(-truth)), 2)
    event = (rng.random(n) < 0.7).astype(int)
    good, bad = truth + rng.normal(0, 0.3, n), rng.normal(size=n)
    a = _survival_run(tmp_path / "A", good, time, event)
    b = _survival_run(tmp_path / "B", bad, time, event)
    [row], _ = compare_runs(RunFolder(a), RunFolder(b), ["c_index"], n_resamples=300)
    expected = concordance_index(time, -good, event) - concordance_index(time, -bad, event)
    assert row.test == "paired bootstrap" and row.difference == pytest.approx(expected, abs=1e-12)
    assert row.ci_low < expected < row.ci_high and row.p_value < 0.01
    metrics = json.loads((a / "metrics.json").read_text())
    assert metrics["metrics"]["survival"]["c_index"] == pytest.approx(concordance_index(time, -good, event))


def test_pathkit_score_reads_risk_and_time_event_records(cli, tmp_path):
    from lifelines.utils import concordance_index

    risk, time, event = [2.0, 1.0, 1.0, 0.5], [1.0, 2.0, 2.0, 3.0], [1, 0, 1, 1]
    pred, ref = tmp_path / "p.json", tmp_path / "r.json"
    pred.write_text(json.dumps([{"id": f"c{i}", "risk": r} for i, r in enumerate(risk)]))
    ref.write_text(json.dumps([{"id": f"c{i}", "time": t, "event": e}
                               for i, (t, e) in enumerate(zip(time, event, strict=True))]))
    result = cli("score", "--metric", "survival", "-p", pred, "-r", ref, "--option", "n_resamples=0", "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    scores = json.loads(result.stdout)
    c_index = scores["survival"]["c_index"]
    assert c_index == pytest.approx(concordance_index(time, [-r for r in risk], event), abs=1e-12)
