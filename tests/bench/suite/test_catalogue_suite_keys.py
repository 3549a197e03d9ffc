"""The suite keys of the public-benchmark catalogue: `[[reference_scores]]` (a source's published
numbers, shown beside pathkit's cells) and `baselines = true` (reference rows, each model's paired
difference from the best baseline)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pathkit_bench.suite.analysis import TaskComparison
from pathkit_bench.suite.config import BASELINE_ENCODERS, load_suite
from pathkit_bench.suite.runner import write_suite_options
from pathkit_core.contracts import PathkitError

SUITE = """
name = "s"
encoders = ["tiny-vit", "tiny-vit-wide"]
generators = ["knn"]
baselines = true
[[tasks]]
dataset = "bracs"
dataset_root = "data"
compare = "balanced_accuracy"
[[reference_scores]]
source = "a leaderboard"
task = "bracs"
score = "balanced_accuracy"
values = { tiny-vit = 0.5, uni = 0.9 }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_baselines_add_the_reference_encoders_and_are_recorded(tmp_path):
    suite = load_suite(write(tmp_path, SUITE))
    assert suite.tasks[0].encoders == ("tiny-vit", "tiny-vit-wide", *BASELINE_ENCODERS)
    assert suite.baselines == BASELINE_ENCODERS and len(suite.cells()) == 3
    assert suite.reference_scores == ({"source": "a leaderboard", "task": "bracs", "score": "balanced_accuracy",
                                       "values": {"tiny-vit": 0.5, "uni": 0.9}},)
    write_suite_options(suite, tmp_path)
    record = json.loads((tmp_path / "suite.json").read_text())
    assert record["baselines"] == list(BASELINE_ENCODERS) and record["reference_scores"][0]["values"]["uni"] == 0.9
    plain = load_suite(write(tmp_path, SUITE.replace("baselines = true\n", "")))
    assert plain.tasks[0].encoders == ("tiny-vit", "tiny-vit-wide") and plain.baselines == ()


@pytest.mark.parametrize("old, new, expected", [
    ('task = "bracs"\nscore', 'task = "nope"\nscore', r"\[\[reference_scores\]\] name task\(s\) \['nope'\]"),
    ("baselines = true", "baselines = 1", r"baselines \(line 5\): Input should be a valid boolean"),
    ("values = { tiny-vit = 0.5, uni = 0.9 }", 'values = { tiny-vit = "high" }', r"reference_scores\[0\]\.values"),
])
def test_bad_reference_and_baseline_keys_are_refused(tmp_path, old, new, expected):
    assert old in SUITE
    with pytest.raises(PathkitError, match=expected):
        load_suite(write(tmp_path, SUITE.replace(old, new)))


class _Result:
    def __init__(self, difference):
        self.difference = np.asarray(difference, dtype=float)


class _Analysis:
    def __init__(self, folder, tasks):
        self.folder, self.tasks, self.alpha, self.correction = folder, tasks, 0.05, "holm"


def test_each_model_is_read_against_the_best_baseline(tmp_path):
    from pathkit_bench.report.baselines import baseline_rows, baselines_section

    (tmp_path / "suite.json").write_text(json.dumps({"baselines": ["resnet50-trunc", "other-base"]}))
    cells = [("uni", "knn"), ("resnet50-trunc", "knn"), ("other-base", "knn"), ("virchow2", "knn")]
    means = {cells[0]: 0.80, cells[1]: 0.70, cells[2]: 0.60, cells[3]: 0.72}
    diff = np.array([[means[a] - means[b] for b in cells] for a in cells])
    p = np.full((4, 4), 0.01)
    p[3, 1] = p[1, 3] = 0.4  # virchow2 vs the best baseline: not significant
    task = TaskComparison("t", "balanced_accuracy", "higher", cells, [0], {c: {0: m} for c, m in means.items()},
                          {c: {0: ""} for c in cells}, result=_Result(diff), p_adjusted=p)
    rows = baseline_rows(_Analysis(tmp_path, [task]))
    assert [(r["encoder"], r["baseline"]) for r in rows] == [("uni", "resnet50-trunc/knn"),
                                                             ("virchow2", "resnet50-trunc/knn")]
    assert rows[0]["difference"] == pytest.approx(0.10) and rows[0]["better"]
    assert rows[1]["difference"] == pytest.approx(0.02) and not rows[1]["better"]
    # a lower-is-better score: the best baseline is the lowest, and "better" is below it
    task.direction = "lower"
    rows = baseline_rows(_Analysis(tmp_path, [task]))
    assert rows[0]["baseline"] == "other-base/knn" and rows[0]["difference"] == pytest.approx(-0.20)
    section = baselines_section(_Analysis(tmp_path, [task]))
    assert section is not None and "resnet50-trunc, other-base" in section.body


def test_reference_scores_sit_beside_pathkits_mean(tmp_path):
    import polars as pl

    from pathkit_bench.report.references import reference_rows, references_section

    (tmp_path / "suite.json").write_text(json.dumps({"reference_scores": [
        {"source": "eva", "task": "t", "score": "balanced_accuracy", "values": {"uni": 0.9, "gigapath": 0.8}}]}))
    frame = pl.DataFrame({"task": ["t"] * 3, "encoder": ["uni"] * 3, "generator": ["knn"] * 3,
                          "score": ["balanced_accuracy"] * 2 + ["AUROC"], "value": [0.8, 0.86, 0.99]})

    class A:
        folder = tmp_path
    A.frame = frame
    rows = reference_rows(A)
    assert rows[0]["pathkit"] == pytest.approx(0.83) and rows[0]["difference"] == pytest.approx(-0.07)
    assert rows[0]["seeds"] == 2 and rows[1]["encoder"] == "gigapath" and rows[1]["pathkit"] is None
    body = references_section(A).body
    assert "not run" in body and "0.9000" in body and "not recomputed" in body


def test_baselines_add_a_random_weight_copy_of_each_foundation_model(tmp_path):
    from pathkit_bench.suite.config import check_registered

    text = SUITE.replace('encoders = ["tiny-vit", "tiny-vit-wide"]', 'encoders = ["uni", "tiny-vit", "virchow2"]')
    suite = load_suite(write(tmp_path, text))
    # tiny-vit is no pathology model (and already random): no copy of it
    assert suite.tasks[0].encoders == ("uni", "tiny-vit", "virchow2", "resnet50-trunc", "uni+random",
                                       "virchow2+random")
    assert suite.baselines == ("resnet50-trunc", "uni+random", "virchow2+random")
    check_registered(suite)  # the copies resolve to their architectures
    cells = {c.encoder: c.run_values(tmp_path) for c in suite.cells()}
    assert cells["uni+random"]["encoder"] == "uni+random" and cells["uni"]["encoder"] == "uni"
    plain = load_suite(write(tmp_path, text.replace("baselines = true\n", "")))
    assert plain.tasks[0].encoders == ("uni", "tiny-vit", "virchow2") and plain.baselines == ()


def test_slide_tasks_compares_panda_on_quadratic_kappa_by_the_statistic_bootstrap():
    from pathkit_metrics.ordinal import OrdinalMetric
    from sklearn.metrics import cohen_kappa_score

    from pathkit_bench.suite.analysis import _compare
    from pathkit_bench.suite.config import check_registered

    suite = load_suite(Path(__file__).resolve().parents[3] / "examples" / "suites" / "slide-tasks.toml")
    panda = next(t for t in suite.tasks if t.dataset == "panda")
    assert panda.compare == "qwk" and panda.generators == ("coral",)
    folds = {(t.dataset, t.run["dataset_options"]["folds"], t.run["dataset_options"]["fold"])
             for t in suite.tasks if t.dataset.startswith("tcga-")}
    assert folds == {(d, 5, f) for d in ("tcga-nsclc", "tcga-rcc") for f in range(5)}  # one task per fold
    check_registered(suite)  # qwk is a score of PANDA's metric (ordinal)
    assert OrdinalMetric.paired_scores["qwk"][0] == "statistic"  # compared as a corpus statistic
    rng = np.random.default_rng(3)
    grades = rng.integers(0, 6, 120)
    close = np.clip(grades + rng.integers(-1, 2, 120), 0, 5)  # off by at most one grade
    far = rng.integers(0, 6, 120)
    rows = np.stack([np.stack([grades, p], axis=-1) for p in (close, far)], axis=1)[None]  # (seeds, cases, cells, 2)
    result, words = _compare("statistic", rows, None, 1, level=0.95, resamples=200, seed=0,
                             statistic=OrdinalMetric.paired_statistic("qwk"))
    expected = [cohen_kappa_score(grades, p, weights="quadratic") for p in (close, far)]
    np.testing.assert_allclose(result.mean, expected, atol=1e-12)
    assert result.difference[0, 1] == pytest.approx(expected[0] - expected[1], abs=1e-12)
    assert result.p_value[0, 1] < 0.001 and result.diff_low[0, 1] > 0 and "statistic recomputed" in words


def test_each_model_is_also_read_against_its_own_random_copy(tmp_path):
    from pathkit_bench.report.baselines import baseline_rows, baselines_section

    (tmp_path / "suite.json").write_text(json.dumps({"baselines": ["resnet50-trunc", "uni+random"]}))
    cells = [("uni", "knn"), ("uni+random", "knn"), ("resnet50-trunc", "knn"), ("virchow2", "knn")]
    means = dict(zip(cells, (0.80, 0.55, 0.70, 0.72), strict=True))
    diff = np.array([[means[a] - means[b] for b in cells] for a in cells])
    p = np.full((4, 4), 0.01)
    p[0, 1] = p[1, 0] = 0.003
    task = TaskComparison("t", "balanced_accuracy", "higher", cells, [0], {c: {0: m} for c, m in means.items()},
                          {c: {0: ""} for c in cells}, result=_Result(diff), p_adjusted=p)
    rows = {r["encoder"]: r for r in baseline_rows(_Analysis(tmp_path, [task]))}
    assert set(rows) == {"uni", "virchow2"}  # the random copy is a reference row, not a model
    assert rows["uni"]["baseline"] == "resnet50-trunc/knn" and rows["uni"]["difference"] == pytest.approx(0.10)
    assert rows["uni"]["random_difference"] == pytest.approx(0.25) and rows["uni"]["random_p"] == 0.003
    assert rows["virchow2"]["random_difference"] is None  # the suite ran no virchow2+random
    body = baselines_section(_Analysis(tmp_path, [task])).body
    assert "+0.2500" in body and "0.003" in body and "—" in body
