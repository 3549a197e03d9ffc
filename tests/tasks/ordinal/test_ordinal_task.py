"""Task `ordinal`: ordered classes from the dataset, the cohort reader's refusal of a grade outside
them (file and row), `pathkit compare` of two graders by the paired kappa bootstrap, and the
grade-error section."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from pathkit_core.contracts import Case, PathkitError
from pathkit_tasks.ordinal.task import OrdinalTask
from tests.tasks._cohort import write_slide_table


def _table(root: Path, labels: list[str]) -> Path:
    return write_slide_table(root, "cohort.csv", "label", labels)


def test_grade_outside_the_ordered_classes_is_refused_with_file_and_row(tmp_path):
    from pathkit_datasets.slides_ordinal import SlidesOrdinal

    root = _table(tmp_path, ["1", "2", "3", "6", "2", "1"] * 4)
    with pytest.raises(PathkitError) as info:
        SlidesOrdinal(root, classes="1,2,3,4,5").splits()
    text = str(info.value)
    assert "cohort.csv" in text and "line 5: '6'" in text and "outside the ordered classes" in text


def test_ordered_classes_reach_the_task_and_the_metric(tmp_path):
    from pathkit_datasets.slides_ordinal import SlidesOrdinal

    ds = SlidesOrdinal(_table(tmp_path, ["1", "3", "2", "10"] * 6), classes="1,2,3,10")
    ds.splits()
    task = OrdinalTask()
    assert task.classes(ds) == ("1", "2", "3", "10")
    case = Case("S1", "S1", "3")
    assert task.check_target(case, ds) is None and task.model_target(case, ds) == 2
    assert task.reference(case, ds) == "3"
    assert "not one of" in task.check_target(Case("S9", "S9", "7"), ds)
    assert task.metric_context(ds, None) == {"class_names": ["1", "2", "3", "10"]}


def _ordinal_run(run_dir: Path, y, p) -> Path:
    from pathkit_core.evaluation.runner import score, write_results
    from pathkit_core.run.score import write_test_cases

    ids = [f"SYN-{i:03d}" for i in range(len(y))]
    preds = {i: {"label": int(v) - 1, "class": str(v)} for i, v in zip(ids, p, strict=True)}
    refs = {i: str(v) for i, v in zip(ids, y, strict=True)}
    result = score(["ordinal"], preds, refs, ids=ids, context={"class_names": ["1", "2", "3", "4", "5"],
                                                               "options": {"n_resamples": 0}})
    run_dir.mkdir(parents=True)
    write_test_cases(run_dir / "test_cases.jsonl", [Case(i, i, refs[i]) for i in ids], refs)
    write_results(result, run_dir, extra={"run": {"dataset": "x", "encoder": run_dir.name, "generator": "g",
                                                  "seed": 0}, "task": "ordinal"})
    return run_dir


@pytest.fixture(scope="module")
def two_graders(tmp_path_factory):
    root = tmp_path_factory.mktemp("graders")
    rng = np.random.default_rng(0)
    y = rng.integers(1, 6, 90)
    good = np.clip(y + rng.integers(-1, 2, 90) * (rng.random(90) < 0.3), 1, 5)
    bad = rng.integers(1, 6, 90)
    return _ordinal_run(root / "A", y, good), _ordinal_run(root / "B", y, bad), y, good, bad


def test_compare_bootstraps_the_kappa_difference(two_graders):
    from pathkit_bench.compare import compare_runs
    from pathkit_core.report.run_folder import RunFolder

    a, b, y, good, bad = two_graders
    rows, _ = compare_runs(RunFolder(a), RunFolder(b), ["qwk", "accuracy"], n_resamples=300)
    by_key = {r.key: r for r in rows}
    expected = cohen_kappa_score(y, good, weights="quadratic") - cohen_kappa_score(y, bad, weights="quadratic")
    assert by_key["qwk"].difference == pytest.approx(expected, abs=1e-12) and by_key["qwk"].p_value < 0.01
    assert by_key["accuracy"].test == "McNemar exact"


def test_grade_error_section_counts_steps(two_graders):
    from pathkit_core.report.run_folder import RunFolder
    from pathkit_tasks.ordinal.sections import ordinal_sections

    a, _, y, good, _ = two_graders
    sections = ordinal_sections(RunFolder(a))
    assert [s.key for s in sections] == ["confusion", "ordinal-errors"]
    data = (a / "figures" / "grade_errors.csv").read_text().splitlines()
    counts = {int(line.split(",")[0]): int(line.split(",")[1]) for line in data[1:]}
    assert counts[0] == int((good == y).sum()) and counts[1] == int((good - y == 1).sum())
