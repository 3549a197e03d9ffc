"""The retrieval metric on hand-computed cases of Patho-Bench's definitions (docs/retrieval.md)."""

from __future__ import annotations

import numpy as np
import pytest
from pathkit_metrics.retrieval import RetrievalMetric, query_scores

from pathkit_core.contracts import PathkitError


def test_hand_cases():
    # query class 1; retrieved 0, 1, 1, 2, 1: hit at rank 2, 3 and 5
    # AP@5 = (1/2 + 2/3 + 3/5) / 5 (divided by k, not by the 3 hits)
    assert query_scores([0, 1, 1, 2, 1], 1, 5) == pytest.approx((1.0, 1.0, (1 / 2 + 2 / 3 + 3 / 5) / 5))
    assert query_scores([0, 1, 1, 2, 1], 1, 1) == (0.0, 0.0, 0.0)
    # top-3 = 0, 1, 1: the majority is 1; AP@3 = (1/2 + 2/3) / 3
    assert query_scores([0, 1, 1, 2, 1], 1, 3) == pytest.approx((1.0, 1.0, (1 / 2 + 2 / 3) / 3))
    # a tie for most frequent counts for every tied class: 0, 1 -> both are modes
    assert query_scores([0, 1, 2], 1, 2)[1] == 1.0
    assert query_scores([0, 0, 1], 1, 3)[1] == 0.0
    assert query_scores([1, 1, 1], 1, 3)[2] == pytest.approx(1.0)


def test_summary_is_the_mean_over_queries_with_intervals():
    preds = [{"retrieved": [0, 0, 1, 1, 0]}, {"retrieved": [0, 1, 1, 1, 1]}, {"retrieved": [2, 2, 2, 2, 2]}]
    refs = [0, 1, 1]
    result = RetrievalMetric().compute(preds, refs, ids=["a", "b", "c"],
                                       context={"options": {"n_resamples": 200}, "class_names": ["x", "y", "z"]})
    s = result.summary
    assert s["top1_acc"] == pytest.approx(1 / 3) and s["top3_acc"] == pytest.approx(2 / 3)
    ap = [(1 + 1 + 3 / 5) / 5, (1 / 2 + 2 / 3 + 3 / 4 + 4 / 5) / 5, 0.0]
    assert s["mAP@5"] == pytest.approx(np.mean(ap))
    assert s["mv@5_acc"] == pytest.approx(2 / 3)
    assert s["mAP@5_ci_low"] <= s["mAP@5"] <= s["mAP@5_ci_high"]
    assert {r["class"] for r in result.details["per_class_retrieval"]} == {"x", "y"}
    assert result.per_case["mAP@5"].to_list() == pytest.approx(ap)


def test_names_as_references_and_bad_input():
    metric = RetrievalMetric()
    s = metric.compute([{"retrieved": [1]}], ["y"], context={"options": {"n_resamples": 0, "classes": "x,y",
                                                                         "ks": "1"}}).summary
    assert s["top1_acc"] == 1.0
    with pytest.raises(PathkitError, match="needs \"retrieved\""):
        metric.compute([{"label": 1}], [1], context={"options": {"n_resamples": 0}})
    with pytest.raises(PathkitError, match="positive whole numbers"):
        metric.compute([{"retrieved": [1]}], [1], context={"options": {"n_resamples": 0, "ks": "0"}})
