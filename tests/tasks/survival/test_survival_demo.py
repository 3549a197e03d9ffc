"""`demo-survival` end to end: tiled, extracted, the CoxNet head fitted and scored; it beats the
constant-risk baseline on the same test patients by the paired C-index bootstrap (p < 0.01)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from pathkit_metrics.survival import c_index_statistic

from pathkit_bench.stats import paired_bootstrap


@pytest.mark.slow
def test_demo_survival_coxnet_beats_constant_risk_paired(demo_run):
    run = demo_run("demo-survival", "coxnet")
    model, base = run.scores("survival", "constant-risk")
    assert base["c_index"] == 0.5
    assert model["c_index"] > 0.65 and model["c_index_ci_low"] > 0.5, model
    table = run.per_case
    rows = table.filter(pl.col("source") == "model") if "source" in table.columns else table
    a = np.stack([rows["risk"].to_numpy(), rows["time"].to_numpy(), rows["event"].to_numpy()], axis=1)
    b = a.copy()
    b[:, 0] = 0.0  # the constant-risk baseline on the same patients
    boot = paired_bootstrap(a, b, statistic=c_index_statistic, n_resamples=2000, seed=0)
    assert boot.difference > 0.15 and boot.p_value < 0.01, boot
    assert 'id="section-survival-km"' in run.report and "log-rank p" in run.report
    assert len((run.path / "figures" / "kaplan_meier_risk_groups.csv").read_text().splitlines()) == 61
