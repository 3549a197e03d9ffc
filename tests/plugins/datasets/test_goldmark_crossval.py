"""Cross-validation settings, fold aggregation and GOLDMARK Table 2 encoder rank-sums, by hand."""

from __future__ import annotations

import math

import pytest
from pathkit_datasets._goldmark_crossval import aggregate, settings_for
from pathkit_datasets._goldmark_ranksum import encoder_rank_sums, top_tasks

from pathkit_core.contracts import PathkitError


def test_the_four_settings_of_figure_3():
    labels = [s.label for s in settings_for("TCGA", "MSKCC")]
    assert labels == ["TCGA-CV", "TCGA->MSKCC", "MSKCC-CV", "MSKCC->TCGA"]
    assert [s.external for s in settings_for("TCGA", "MSKCC")] == [False, True, False, True]
    assert [s.label for s in settings_for("TCGA", "MSKCC", reciprocal=False)] == ["TCGA-CV", "TCGA->MSKCC"]
    assert [s.label for s in settings_for(None, None)] == ["CV"]
    assert [s.label for s in settings_for("TCGA", "TCGA")] == ["TCGA-CV"]
    with pytest.raises(PathkitError, match="needs --train-cohort"):
        settings_for(None, "MSKCC")


def test_fold_aggregation_mean_and_sample_sd():
    base = {"dataset": "goldmark:COAD-MSI", "encoder": "uni", "generator": "gma-mil", "setting": "TCGA-CV",
            "train_cohort": "TCGA", "test_cohort": "TCGA", "checkpoint": "best", "metric": "classification",
            "key": "AUROC"}
    rows = [{**base, "fold": k, "value": v} for k, v in enumerate([0.70, 0.80, 0.90, 0.60, 0.50], start=1)]
    rows.append({**base, "checkpoint": "last", "fold": 1, "value": 0.65})
    rows.append({**base, "key": "AUROC_ci_low", "fold": 1, "value": math.nan})
    out = {(r["checkpoint"], r["key"]): r for r in aggregate(rows)}
    best = out[("best", "AUROC")]
    assert best["mean"] == pytest.approx(0.70) and best["n_folds"] == 5
    assert best["std"] == pytest.approx(math.sqrt(0.1 / 4))  # squares .01+.01+.04+.01+.04 over n-1
    assert out[("last", "AUROC")]["mean"] == 0.65 and math.isnan(out[("last", "AUROC")]["std"])
    assert out[("best", "AUROC_ci_low")]["n_folds"] == 0 and math.isnan(out[("best", "AUROC_ci_low")]["mean"])


def test_encoder_rank_sums_by_hand():
    table = {
        "T1": {"A": 0.90, "B": 0.80, "C": 0.70},
        "T2": {"A": 0.60, "B": 0.65, "C": 0.60},  # A and C tie for ranks 2 and 3 -> 2.5 each
        "T3": {"A": 0.75, "B": 0.70},  # C missing: not complete coverage, left out
    }
    rows = [{"setting": "TCGA-CV", "task": t, "encoder": e, "value": v} for t, per in table.items()
            for e, v in per.items()]
    result = {r["encoder"]: r for r in encoder_rank_sums(rows)}
    assert result["A"]["rank_sum"] == 1 + 2.5 and result["B"]["rank_sum"] == 2 + 1
    assert result["C"]["rank_sum"] == 3 + 2.5
    assert result["A"]["mean_score"] == pytest.approx((0.90 + 0.60) / 2) and result["A"]["n_tasks"] == 2
    ordered = [r["encoder"] for r in encoder_rank_sums(rows)]
    assert ordered == ["B", "A", "C"]  # lower rank-sum is better
    # the top tasks by median score over encoders and settings
    assert top_tasks(rows, 1) == ["T1"] and top_tasks(rows, 2) == ["T1", "T3"]
    only_t2 = {r["encoder"]: r["rank_sum"] for r in encoder_rank_sums(rows, tasks=["T2"])}
    assert only_t2 == {"A": 2.5, "B": 1.0, "C": 2.5}
