"""`demo-retrieval` end to end: no training; the nearest train slides share the query's colour,
ahead of the majority-class baseline on the same queries (paired, p < 0.01)."""

from __future__ import annotations

import pytest

from pathkit_bench.stats import paired_bootstrap


@pytest.mark.slow
def test_demo_retrieval_finds_the_class_and_beats_the_majority_class(demo_run):
    run = demo_run("demo-retrieval", "feature-retrieval")
    model, base = run.scores("retrieval", "majority-class")
    assert model["top1_acc"] > 0.8 and model["mAP@5"] > 0.7, model
    assert base["top1_acc"] == pytest.approx(1 / 3)
    labels = run.per_case["target"].to_numpy()
    majority = (labels == 0).astype(float)  # the baseline retrieves class 0 (the first of three equal classes)
    boot = paired_bootstrap(run.per_case["top1_acc"].to_numpy(), majority, n_resamples=2000, seed=0)
    assert boot.p_value < 0.01, boot
    assert len(run.predictions) == 30 and len(run.predictions[0]["prediction"]["neighbours"]) == 10
    assert 'id="section-retrieval"' in run.report
