"""`demo-ordinal` end to end: the CORAL head beats the majority grade on the same test cases by
the paired kappa bootstrap (p < 0.01), and the report shows the ordinal sections."""

from __future__ import annotations

import numpy as np
import pytest
from pathkit_metrics.ordinal import kappa_statistic

from pathkit_bench.stats import paired_bootstrap


@pytest.mark.slow
def test_demo_ordinal_coral_beats_the_majority_grade_paired(demo_run):
    run = demo_run("demo-ordinal", "coral")
    model, base = run.scores("ordinal", "majority-class")
    assert base["qwk"] == 0.0
    assert model["qwk"] > 0.6 and model["qwk_ci_low"] > 0.3, model
    a = np.stack([run.per_case["target"].to_numpy(), run.per_case["predicted"].to_numpy()], axis=1)
    b = a.copy()
    b[:, 1] = np.bincount(a[:, 0]).argmax()  # one grade for every case: kappa 0
    boot = paired_bootstrap(a, b, statistic=kappa_statistic, n_resamples=2000, seed=0)
    assert boot.p_value < 0.01, boot
    assert 'id="section-ordinal-errors"' in run.report and 'id="section-confusion"' in run.report
