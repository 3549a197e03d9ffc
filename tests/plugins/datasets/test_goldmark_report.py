"""The goldmark plugin's report sections: cross-site results in a cell's run report, encoder rank-sums
in the matrix report, each read from what `pathkit crossval` wrote."""

from __future__ import annotations

import json
from types import SimpleNamespace

import polars as pl
import pytest
from pathkit_datasets._goldmark_crossval import aggregate, write_crossval
from pathkit_datasets._goldmark_ranksum import encoder_rank_sums

from pathkit_bench.report.matrix import write_matrix_report
from pathkit_core.report.html import write_run_report
from tests.core.report._runs import slide_classification_run


def _fold_rows(setting: str, values: list[float]) -> list[dict]:
    return [{"dataset": "goldmark:COAD-MSI", "encoder": "tiny-vit", "generator": "gma-mil", "setting": setting,
             "train_cohort": "TCGA", "test_cohort": "TCGA" if setting.endswith("CV") else "MSKCC", "fold": k + 1,
             "checkpoint": "best", "epoch": 3, "metric": "classification", "key": "AUROC", "value": v,
             "run_dir": "x"} for k, v in enumerate(values)]


def test_cross_site_results_join_the_cell_report(tmp_path):
    workdir = tmp_path / "ws"
    run = slide_classification_run(workdir / "runs" / "goldmark_COAD-MSI" / "tiny-vit" / "gma-mil" / "k1")
    provenance = json.loads((run / "provenance.json").read_text())
    provenance["config"].update(workdir=str(workdir), generator="gma-mil")
    (run / "provenance.json").write_text(json.dumps(provenance))
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["run"]["generator"] = "gma-mil"
    (run / "metrics.json").write_text(json.dumps(metrics))
    # no crossval results yet: no section
    assert 'id="section-cross-site"' not in write_run_report(run).read_text()
    rows = _fold_rows("TCGA-CV", [0.8, 0.9]) + _fold_rows("TCGA->MSKCC", [0.7, 0.6])
    write_crossval(workdir / "crossval" / "goldmark_COAD-MSI" / "tiny-vit" / "gma-mil", rows, aggregate(rows))
    html = write_run_report(run).read_text()
    assert 'id="section-cross-site"' in html and "TCGA-&gt;MSKCC" in html
    bars = pl.read_csv(run / "figures" / "cross_site_auroc.csv")
    assert bars.filter(pl.col("setting") == "TCGA-CV")["mean"][0] == pytest.approx(0.85)


def test_rank_sums_join_the_matrix_report(tmp_path):
    from pathkit_bench.report.matrix import write_leaderboard
    from pathkit_core.workspace import atomic_write_with

    workdir = tmp_path / "ws"
    results = []
    for k, encoder in enumerate(("enc-a", "enc-b")):
        run = slide_classification_run(workdir / "runs" / "goldmark_COAD-MSI" / encoder / "gma-mil" / f"k{k}")
        summary = json.loads((run / "metrics.json").read_text())["metrics"]
        results.append((encoder, "gma-mil", SimpleNamespace(run_dir=run, summary=summary)))
    board = write_leaderboard(results, workdir, "goldmark:COAD-MSI")
    scores = [{"task": t, "encoder": e, "setting": "TCGA-CV", "value": v}
              for t, values in (("COAD-MSI", (0.9, 0.8)), ("BRCA-ER", (0.7, 0.75))) for e, v in zip(
                  ("enc-a", "enc-b"), values, strict=True)]
    table = encoder_rank_sums(scores)
    atomic_write_with(workdir / "leaderboards" / "crossval" / "encoder_ranksum_gma-mil_all.csv",
                      pl.DataFrame(table).write_csv)
    html = write_matrix_report(board).read_text()
    assert 'id="section-rank-sums"' in html and "rank-sum ↓" in html
    ranks = pl.read_csv(board / "figures" / "ranksum_gma-mil_all.csv")
    assert sorted(ranks["rank_sum"].to_list()) == [3.0, 3.0]
