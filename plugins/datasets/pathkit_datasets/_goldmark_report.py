"""Report sections of the goldmark plugin: a cell's cross-validation and cross-site results in its run
report, and the encoder rank-sums across tasks (GOLDMARK Table 2) in the matrix report."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

SHOWN = ("AUROC", "AP", "balanced_accuracy", "F1")


def cross_site_sections(run: Any) -> list[Any]:
    """The mean and sd over folds of every GOLDMARK setting (A-CV, A->B, B-CV, B->A) of this run's
    dataset x encoder x generator, from `<workdir>/crossval/.../summary.json`."""
    import json

    if not run.dataset.startswith("goldmark") or run.workdir is None:
        return []
    from pathkit_datasets._goldmark_crossval import crossval_dir

    folder = crossval_dir(run.workdir, run.dataset, run.encoder, run.generator)
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except (OSError, json.JSONDecodeError):
        return []
    from pathkit_core.report import Section
    from pathkit_core.report.page import table
    from pathkit_sdk.charts import bar_chart

    rows = [r for r in summary.get("summary") or [] if r.get("key") in SHOWN and r.get("metric") == "classification"]
    if not rows:
        return []
    rows.sort(key=lambda r: (r["setting"], r["checkpoint"], SHOWN.index(r["key"])))
    body = table(["setting", "checkpoint", "score", "mean over folds", "sd", "folds"],
                 [[r["setting"], r["checkpoint"], r["key"], r["mean"], r["std"], r["n_folds"]] for r in rows],
                 table_id="cross-site", sortable=True)
    best = [r for r in rows if r["checkpoint"] == "best" and r["key"] == "AUROC"]
    if best:
        def sd(r: dict[str, Any]) -> tuple[float, float] | None:
            return None if r["std"] is None or not math.isfinite(r["std"]) else (r["mean"] - r["std"],
                                                                                 r["mean"] + r["std"])

        fig = bar_chart([r["setting"] for r in best], {"AUROC": [r["mean"] for r in best]},
                        errors={"AUROC": [sd(r) for r in best]}, ylabel="AUROC, mean over folds (± sd)",
                        ylim=(0, 1.05))
        body = run.figures.figure("cross_site_auroc", fig, "AUROC of the validation-selected checkpoint in each "
                                  "GOLDMARK setting: cross-validation within a cohort (CV) and frozen weights "
                                  "applied to the other cohort (A->B)", best) + body
    note = f"<p class=note>From <code>{folder}</code> (`pathkit crossval`).</p>"
    return [Section("Cross-validation and cross-site results", note + body, key="cross-site", order=160)]


def rank_sum_sections(board: Any) -> list[Any]:
    """Encoder rank-sums per setting from `<leaderboards>/crossval/encoder_ranksum_*.csv`."""
    import polars as pl

    from pathkit_datasets._goldmark_crossval import RANKSUM_SUBDIR

    folder = Path(board.leaderboards_root) / RANKSUM_SUBDIR
    files = sorted(folder.glob("encoder_ranksum_*.csv"))
    if not files:
        return []
    from pathkit_core.report import Section
    from pathkit_core.report.page import esc, table
    from pathkit_sdk.charts import bar_chart

    parts = ["<p>Encoders ranked per task by mean AUROC over the folds, ranks summed over the tasks every encoder "
             "has (GOLDMARK Table 2; rank 1 is the best, so a lower rank-sum is better).</p>"]
    for path in files:
        frame = pl.read_csv(path)
        name = path.stem.removeprefix("encoder_ranksum_")
        parts.append(f"<h3>{esc(name)}</h3>")
        parts.append(table(["setting", "encoder", "rank-sum ↓", "mean AUROC ↑", "tasks"],
                           [[r["setting"], r["encoder"], r["rank_sum"], r["mean_score"], r["n_tasks"]]
                            for r in frame.iter_rows(named=True)], table_id=f"ranksum-{name}", sortable=True))
        encoders = sorted(frame["encoder"].unique().to_list())
        settings = frame["setting"].unique(maintain_order=True).to_list()
        series = {e: [next((r["rank_sum"] for r in frame.iter_rows(named=True) if r["encoder"] == e
                            and r["setting"] == s), None) for s in settings] for e in encoders}
        fig = bar_chart(settings, series, ylabel="rank-sum over tasks (lower is better)")
        parts.append(board.figures.figure(f"ranksum_{name}", fig, f"Encoder rank-sums ({name})", frame))
    return [Section("GOLDMARK encoder rank-sums", "".join(parts), key="rank-sums", order=50)]


def suite_rank_sum_sections(suite: Any) -> list[Any]:
    """GOLDMARK's encoder rank-sums (Table 2) over the GOLDMARK tasks of a suite: per setting (the
    generator), encoders ranked per task by AUROC (the mean over the suite's seeds), ranks summed."""
    import polars as pl

    from pathkit_datasets._goldmark_ranksum import encoder_rank_sums

    frame = suite.frame.filter(pl.col("dataset").str.starts_with("goldmark") & (pl.col("score") == "AUROC"))
    if not frame.height:
        return []
    means = frame.group_by(["task", "generator", "encoder"], maintain_order=True).agg(pl.col("value").mean())
    rows = [{"setting": r["generator"], "task": r["task"], "encoder": r["encoder"], "value": r["value"]}
            for r in means.iter_rows(named=True) if r["value"] is not None]
    sums = encoder_rank_sums(rows)
    if not sums:
        return []
    from pathkit_core.report import Section
    from pathkit_core.report.page import table

    body = ("<p>GOLDMARK's own summary (Table 2), kept in its paper form: encoders ranked per task by AUROC (here "
            "the mean over the suite's seeds), ranks summed over the tasks every encoder has; a lower rank-sum is "
            "better. It carries no test: the average ranks, Friedman and critical difference above do.</p>"
            + table(["setting (generator)", "encoder", "rank-sum ↓", "mean AUROC ↑", "tasks"],
                    [[r["setting"], r["encoder"], r["rank_sum"], r["mean_score"], r["n_tasks"]] for r in sums],
                    table_id="goldmark-ranksum", sortable=True))
    if suite.figures is not None:
        suite.figures.write_data("goldmark_rank_sums", sums)
    return [Section("GOLDMARK encoder rank-sums", body, key="goldmark-rank-sums", order=50)]
