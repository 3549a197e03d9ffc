"""GOLDMARK's encoder rank-sums (Table 2 form) in a suite report: AUROC averaged over seeds, encoders
ranked per task within each setting (generator), ranks summed."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl


def test_suite_rank_sums_follow_the_paper_form():
    from pathkit_datasets._goldmark_report import suite_rank_sum_sections

    rows = []
    aurocs = {("T1", "uni"): [0.80, 0.84], ("T1", "virchow2"): [0.70, 0.72],
              ("T2", "uni"): [0.60, 0.60], ("T2", "virchow2"): [0.65, 0.67]}
    for (task, encoder), values in aurocs.items():
        for seed, value in enumerate(values):
            rows.append({"task": task, "dataset": f"goldmark:{task}", "encoder": encoder, "generator": "gma-mil",
                         "seed": seed, "score": "AUROC", "value": value})
    rows.append({"task": "other", "dataset": "hepatobench", "encoder": "uni", "generator": "knn", "seed": 0,
                 "score": "AUROC", "value": 0.99})
    sections = suite_rank_sum_sections(SimpleNamespace(frame=pl.DataFrame(rows), figures=None))
    assert len(sections) == 1 and sections[0].key == "goldmark-rank-sums"
    body = sections[0].body
    # uni: rank 1 on T1, 2 on T2 -> 3; virchow2: 2 + 1 -> 3; mean AUROCs 0.71 and 0.685
    assert body.count('data-v="3.0"') == 2 and "0.7100" in body and "0.6850" in body
    assert "hepatobench" not in body
    assert suite_rank_sum_sections(SimpleNamespace(frame=pl.DataFrame(rows[-1:]), figures=None)) == []
