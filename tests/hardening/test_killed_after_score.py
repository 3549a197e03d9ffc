"""Issue 47, reproduction 4: a run killed after its score stage and before its report, then rerun,
writes the report it lacks (it used to say "finished; reusing its results" and name a report.html
that did not exist); a damaged finished score is scored again and the scores come out as before."""

from __future__ import annotations

import json

import pytest

from tests.core._toy import ComponentPlugin
from tests.core.test_run_identity import Accuracy, Head, _weighted_encoder
from tests.core.test_what_reruns import Cohort, Runner, cohort, weights  # noqa: F401 - fixtures


@pytest.mark.slow  # a whole (tiny) run and two reruns: `make test-suite`
def test_a_run_killed_before_its_report_writes_it_on_the_rerun(fresh_registry, cohort, weights, tmp_path,  # noqa: F811
                                                                monkeypatch):
    fresh_registry({"rr": ComponentPlugin(Cohort, _weighted_encoder(), Head, Accuracy)})
    monkeypatch.setattr(Head, "default_train", dict(Head.default_train))
    r = Runner(tmp_path / "ws", cohort, weights[0])
    r.run()
    scores = json.loads((r.run_dir / "metrics.json").read_text())["metrics"]
    (r.run_dir / "report.html").unlink()  # killed after scoring, before the report
    redone, _ = r.run()
    assert "writing the report it lacks" in r.log and "reusing its results" not in r.log
    assert redone == set() and (r.run_dir / "report.html").is_file()
    (r.run_dir / "metrics.json").write_text('{"metrics": {')  # truncated by a kill mid-write
    redone, _ = r.run()
    assert redone == {"score"} and "scoring again" in r.log
    assert json.loads((r.run_dir / "metrics.json").read_text())["metrics"] == scores
