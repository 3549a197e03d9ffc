"""The run report, the matrix report and `pathkit report`: what each shows, from what is on disk."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from pathkit_core import hookimpl
from pathkit_core.contracts import PathkitError
from pathkit_core.evaluation.scores import score_rows
from pathkit_core.report.html import write_run_report
from pathkit_core.report.run_folder import RunFolder
from pathkit_tasks.report.sections import field_accuracy
from pathkit_tasks.vqa.sections import wilson

from ._runs import report_run, tiny_synthetic_run


def _sections(html: str) -> list[str]:
    return re.findall(r'<section id="section-([^"]+)"', html)


# --------------------------------------------------------------------------- score rows


def test_score_rows_put_headline_first_fold_intervals_and_give_directions():
    summary = {"classification": {"n_cases": 10.0, "ECE": 0.1, "AUROC": 0.8, "AUROC_ci_low": 0.7,
                                  "AUROC_ci_high": 0.9, "macro_F1": 0.6, "F1": 0.5},
               "toy": {"F1": 0.4}}
    baselines = {"prior": {"classification": {"AUROC": 0.5, "AUROC_ci_low": 0.5, "AUROC_ci_high": 0.5}}}
    rows = score_rows(summary, baselines)
    # the metrics' headline scores first (a metric that declares none: all its scores), then the rest
    assert [(r.metric, r.key) for r in rows if r.headline] == [("classification", "AUROC"),
                                                               ("classification", "macro_F1"), ("toy", "F1")]
    assert [r.key for r in rows[3:]] == ["n_cases", "ECE", "F1"]
    auroc = rows[0]
    assert auroc.ci == (0.7, 0.9) and auroc.direction == "higher" and auroc.baselines == {"prior": 0.5}
    assert auroc.baseline_cis["prior"] == (0.5, 0.5)
    assert not any(r.key.endswith(("_ci_low", "_ci_high")) for r in rows)
    ece = next(r for r in rows if r.key == "ECE")
    assert ece.direction == "lower" and ece.ci is None
    # a key two metrics share is labelled with its metric; a metric no plugin registers has no direction
    assert {r.label for r in rows if r.key == "F1"} == {"F1 (classification)", "F1 (toy)"}
    assert next(r for r in rows if r.metric == "toy").direction is None


def test_field_accuracy_counts_partial_agreement_in_part():
    per_case = pl.DataFrame({
        "matched": [["organ"], ["organ", "grade"], []],
        "missed": [["grade"], [], ["organ"]],
        "hallucinated": [[], ["margin"], ["margin"]],
        "discordant": [["diagnosis"], ["diagnosis"], []],
        "partial": ['{"diagnosis": 0.5}', "{}", "{}"],
    })
    rows = {r["field"]: r for r in field_accuracy(per_case)}
    assert rows["organ"]["cases_in_reference"] == 3 and rows["organ"]["accuracy"] == pytest.approx(2 / 3)
    assert rows["organ"]["missed"] == pytest.approx(1 / 3)
    # one diagnosis agrees by half, one not at all: accuracy 0.25, discordant 0.75
    assert rows["diagnosis"]["accuracy"] == pytest.approx(0.25) and rows["diagnosis"]["discordant"] == 0.75
    assert rows["grade"]["accuracy"] == 0.5 and rows["grade"]["missed"] == 0.5
    assert rows["margin"]["cases_in_reference"] == 0 and rows["margin"]["accuracy"] is None
    assert rows["margin"]["hallucinated_cases"] == 2 and rows["margin"]["hallucinated_rate"] == pytest.approx(2 / 3)


def test_wilson_interval_matches_the_published_example():
    # 8 of 10 at 95%: [0.4902, 0.9433] (Newcombe 1998, Table I)
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 0) is None and wilson(0, 5)[0] == 0.0


# --------------------------------------------------------------------------- run reports


def test_report_run_shows_headline_scores_first_and_every_case(runs):
    run = runs["report"]
    html = (run / "report.html").read_text()
    sections = _sections(html)
    assert sections[0] == "scores" and sections.index("cases") < sections.index("training") < sections.index("qc")
    assert sections[-1] == "provenance"
    headline = html[html.index('id="headline-scores"'):html.index("</table>", html.index('id="headline-scores"'))]
    metrics = json.loads((run / "metrics.json").read_text())
    crqs = metrics["metrics"]["crqs"]
    # one row per headline score with its CI, the baseline beside it and the direction
    assert f"[{crqs['CRQS_ci_low']:.4f}, {crqs['CRQS_ci_high']:.4f}]" in headline
    assert "baseline: most-frequent-report" in headline and "↑ higher" in headline
    assert "CFC" not in headline and "_ci_low" not in html
    # per case: reference and prediction text, the CRQS evidence as labels
    reference = json.loads((run / "test_cases.jsonl").read_text().splitlines()[0])["reference"]
    assert reference in html and '<span class="tag missed">' in html
    table = pl.read_csv(run / "figures" / "per_case_reports.csv")
    assert table.height == 12 and {"reference", "prediction", "CRQS", "BLEU-4", "matched"} <= set(table.columns)
    for name in ("crqs_fields", "training_curves", "case_score_distribution"):
        assert (run / "figures" / f"{name}.png").stat().st_size > 1000 and (run / "figures" / f"{name}.csv").exists()
    assert "distinct" in sections and "0.5000</b> of the test predictions are distinct" not in html
    assert f"<b>{metrics['distinct_prediction_fraction']:.3f}</b>" in html
    # the QC section names the case left out and why
    assert "tiling failed: unreadable slide" in html and "carry QC flags" in html
    # the selected epoch is marked on the training curves
    assert "selected at epoch 4" in html


def test_classification_reports_draw_curves_calibration_confusion_and_attention(runs):
    slide = (runs["slide-classification"] / "report.html").read_text()
    assert {"roc-pr", "calibration", "confusion", "attention", "cases"} <= set(_sections(slide))
    roc = pl.read_csv(runs["slide-classification"] / "figures" / "roc_pr.csv")
    assert set(roc["curve"]) == {"roc", "pr"} and set(roc["class"]) == {"MSI-H"}
    assert slide.count('class="picture"') == 6  # three best and three worst slides' heatmaps
    patch = (runs["patch-classification"] / "report.html").read_text()
    assert {"confusion", "per-class", "confused", "cases"} <= set(_sections(patch))
    assert "TUM predicted as INF: 4 case(s)" in patch and "NOR predicted as FIB: 2 case(s)" in patch
    confusion = pl.read_csv(runs["patch-classification"] / "figures" / "confusion_matrix.csv")
    tum = confusion.filter(pl.col("reference") == "TUM")
    assert tum.filter(pl.col("predicted") == "INF")["count"][0] == 4
    assert tum.filter(pl.col("predicted") == "TUM")["row_share"][0] == pytest.approx(6 / 10)


def test_segmentation_and_vqa_reports(runs):
    seg = (runs["segmentation"] / "report.html").read_text()
    assert {"slides", "masks", "composition"} <= set(_sections(seg))
    composition = pl.read_csv(runs["segmentation"] / "figures" / "tissue_composition.csv")
    assert composition.group_by("slide").agg(pl.col("fraction").sum())["fraction"].to_list() == pytest.approx([1] * 5)
    vqa = (runs["multiple-choice-vqa"] / "report.html").read_text()
    assert {"capabilities", "accessibility", "budget", "cases"} <= set(_sections(vqa))
    accuracy = pl.read_csv(runs["multiple-choice-vqa"] / "figures" / "vqa_accuracy.csv")
    per_case = pl.read_parquet(runs["multiple-choice-vqa"] / "per_case.parquet")
    ma = accuracy.filter(pl.col("capability") == "MA")
    assert ma["questions"][0] == 12 and ma["accuracy"][0] == pytest.approx(
        per_case.filter(pl.col("capability") == "MA")["correct"].mean())
    access = pl.read_csv(runs["multiple-choice-vqa"] / "figures" / "evidence_accessibility.csv")
    assert set(access["selector"]) == {"this run (pathoargus)", "uniform", "pathoargus"}
    metrics = json.loads((runs["multiple-choice-vqa"] / "metrics.json").read_text())["metrics"]["vqa"]
    row = access.filter((pl.col("selector") == "uniform") & (pl.col("capability") == "GR"))
    assert row["accessibility"][0] == pytest.approx(metrics["evidence_accessibility@uniform:GR"])
    # accuracy per evidence state (ESG rows), against the reader budget K, and the paper's numbers
    assert {"evidence-states", "k-sweep", "published-reference"} <= set(_sections(vqa))
    states = pl.read_csv(runs["multiple-choice-vqa"] / "figures" / "vqa_evidence_states.csv")
    for row in states.iter_rows(named=True):
        assert row["accuracy"] == pytest.approx(metrics[f"{row['capability']}@{row['state']}"])
    assert sorted(states["state"].to_list()) == ["absent", "set1", "set2", "set3"]
    sweep = pl.read_csv(runs["multiple-choice-vqa"] / "figures" / "vqa_accuracy_vs_k.csv")
    overall = sweep.filter(pl.col("capability") == "Overall").sort("K")
    assert overall["K"].to_list() == [64, 128, 256] and overall["accuracy"][2] == pytest.approx(metrics["Overall"])
    assert overall["accuracy"][0] == pytest.approx(metrics["Overall@K=64"])
    published = pl.read_csv(runs["multiple-choice-vqa"] / "figures" / "published_reference.csv")
    gr = published.filter((pl.col("model") == "GPT-5.6") & (pl.col("column") == "GR"))
    assert gr["published"][0] == 0.852 and gr["this_run"][0] == pytest.approx(metrics["GR"])
    patch = (runs["patch-classification"] / "report.html").read_text()
    assert "published-reference" in _sections(patch) and "HepatoBench Figure 2a" in patch
    fig2a = pl.read_csv(runs["patch-classification"] / "figures" / "published_reference.csv")
    assert fig2a.filter((pl.col("model") == "UNI") & (pl.col("column") == "BACC"))["published"][0] == 0.913
    assert len(fig2a) == 9 and not fig2a["comparable"].any()  # the synthetic run uses no paper encoder
    # the budget is the VQA section's, not shown twice
    assert vqa.count("retention") == 1
    assert "retention (selected / available)" in vqa and "Which finding is seen in region 3?" in vqa
    assert 'id="section-tables"' not in vqa


def test_a_failing_task_section_is_reported_and_the_rest_is_kept(runs, monkeypatch, tmp_path):
    from pathkit_tasks.report.task import ReportTask

    def broken(self, run):
        raise ValueError("no such column")

    monkeypatch.setattr(ReportTask, "report_sections", broken)
    html = write_run_report(runs["report"]).read_text()
    assert "could not be drawn: ValueError: no such column" in html
    assert 'id="section-scores"' in html and 'id="section-training"' in html


def test_plugins_add_sections_through_the_hook(runs, fresh_registry):
    from pathkit_core.report import Section

    class Extra:
        @hookimpl
        def report_sections(self, run):
            return [Section("From a plugin", f"<p>{run.dataset} has {len(run.predictions)} predictions</p>",
                            key="extra", order=250)]

    class Broken:
        @hookimpl
        def report_sections(self, run):
            raise RuntimeError("plugin bug")

    registry = fresh_registry({"extra": Extra(), "broken": Broken()})
    html = write_run_report(runs["slide-classification"], registry=registry).read_text()
    assert "goldmark:COAD-MSI has 20 predictions" in html
    assert "Section of plugin broken" in html and "plugin bug" in html


def test_not_a_run_folder_is_a_clear_error(tmp_path):
    with pytest.raises(PathkitError, match="is not a run folder: it has no metrics.json"):
        RunFolder(tmp_path)
    (tmp_path / "metrics.json").write_text("[1, 2")
    with pytest.raises(PathkitError, match="metrics.json is not a readable JSON object"):
        _ = RunFolder(tmp_path).metrics


def test_a_run_without_references_or_history_still_gets_its_report(tmp_path):
    run = report_run(tmp_path / "old")
    for name in ("test_cases.jsonl", "features_qc.csv", "stages.json"):
        (run / name).unlink()
    (run / "checkpoints" / "history.json").unlink()
    html = write_run_report(run).read_text()
    assert "has no test_cases.jsonl" in html and 'id="section-training"' not in html


# --------------------------------------------------------------------------- matrix and CLI


def test_matrix_report_shows_both_views_every_cell_and_links(board):
    html = (board / "report.html").read_text()
    assert {"per-generator", "per-encoder", "heatmap", "cells"} <= set(_sections(html))
    links = re.findall(r'<a href="([^"]+/report.html)">run report</a>', html)
    assert len(links) == 4 and all((board / link).resolve().exists() for link in links)
    view = html[html.index('id="section-per-generator"'):html.index('id="section-per-encoder"')]
    by_gen = pl.read_csv(board / "by_generator.csv")
    crqs = by_gen.filter(pl.col("generator") == "gen-x").row(0, named=True)
    nb = "\u00a0"  # no-break spaces keep "mean ± sd" and "[low, high]" whole when a cell wraps
    assert (f"{crqs['CRQS']:.4f}{nb}±{nb}{crqs['CRQS_sd']:.4f} [{crqs['CRQS_ci_low']:.3f},{nb}"
            f"{crqs['CRQS_ci_high']:.3f}]") in view
    assert "CRQS ↑" in view
    cells = pl.read_csv(board / "figures" / "cells_demo-reports.csv")
    assert cells.height == 4 and "CRQS" in cells.columns


def test_pathkit_report_rebuilds_runs_boards_and_workspaces(cli, runs, board, tmp_path):
    run = runs["patch-classification"]
    (run / "report.html").unlink()
    result = cli("report", run)
    assert result.exit_code == 0 and (run / "report.html").exists()
    assert cli("report", board).exit_code == 0
    workspace = board.parents[1]
    (board / "report.html").unlink()
    result = cli("report", workspace)
    assert result.exit_code == 0 and result.stdout.count("report written to") == 5
    assert (board.parent / "report.html").exists()  # the report of every leaderboard of the workspace
    empty = cli("report", tmp_path)
    assert empty.exit_code == 2 and "neither a run folder" in empty.stderr
    assert "does not exist" in cli("report", tmp_path / "nowhere").stderr


def test_score_prints_the_metric_its_ci_and_direction(cli, tmp_path):
    preds = tmp_path / "p.jsonl"
    refs = tmp_path / "r.jsonl"
    preds.write_text("".join(json.dumps({"id": f"c{i}", "prediction": {"probabilities": [1 - p, p]}}) + "\n"
                             for i, p in enumerate([0.1, 0.4, 0.35, 0.8, 0.9, 0.7])))
    refs.write_text("".join(json.dumps({"id": f"c{i}", "label": y}) + "\n"
                            for i, y in enumerate([0, 0, 1, 1, 1, 0])))
    result = cli("score", "-m", "classification", "-p", preds, "-r", refs)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "metric" in line)
    assert "CI" in header and "better" in header and "score" not in header
    auroc = next(line for line in lines if "AUROC" in line)
    assert "0.7778" in auroc and "[" in auroc and "higher" in auroc
    assert "lower" in next(line for line in lines if " ECE " in line)
    # headline scores first
    assert lines.index(auroc) < lines.index(next(line for line in lines if " ECE " in line))


def test_qc_of_files_without_recorded_statistics(tmp_path):
    # feature files of a dataset's own release (.pt, .h5) carry no QC metadata: every number is empty
    run = report_run(tmp_path / "release")
    pl.DataFrame({"case_id": ["R00", "R01"], "split": ["test", "test"], "input": ["features"] * 2,
                  "slide_id": ["R00", "R01"], "status": [None, None], "file": ["R00.pt", "R01.pt"]}).write_csv(
        run / "features_qc.csv")
    html = write_run_report(run).read_text()
    assert 'id="section-qc"' in html and "could not be drawn" not in html


def test_a_report_failure_is_logged_and_the_run_keeps_its_results(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import pathkit_core.report.html as report_html
    from pathkit_core.run.report import report_stage
    from pathkit_core.run.spec import RunSpec

    def broken(run_dir):
        raise KeyError("metrics")

    monkeypatch.setattr(report_html, "write_run_report", broken)
    logged = []
    ctx = SimpleNamespace(run_dir=tmp_path, resumed=[], log=logged.append,
                          registry=SimpleNamespace(distributions=lambda: {}))
    report_stage(ctx, RunSpec(dataset="d", encoder="e", generator="g"), {}, 1.0)
    assert (tmp_path / "provenance.json").exists()
    assert "report.html could not be written (KeyError" in logged[0] and f"pathkit report {tmp_path}" in logged[0]


def test_a_score_key_two_metrics_share_keeps_its_metric_and_direction(tmp_path):
    """The leaderboard names the second metric's copy of a key `metric:key`; the matrix report must
    name the columns alike, or the shared key loses its metric (and its direction arrow)."""
    from types import SimpleNamespace

    from pathkit_bench.report.matrix import Leaderboards, write_leaderboard

    results = []
    for k, enc in enumerate(("enc-a", "enc-b")):
        run_dir = tmp_path / "runs" / enc
        run_dir.mkdir(parents=True)
        summary = {"nlg": {"BLEU-4": 0.5 + k / 10, "n_cases": 12.0}, "crqs": {"CRQS": 0.4 + k / 10, "n_cases": 11.0}}
        (run_dir / "metrics.json").write_text(json.dumps({"metrics": summary}))
        results.append((enc, "gen", SimpleNamespace(run_dir=run_dir, summary=summary)))
    board = Leaderboards(write_leaderboard(results, tmp_path, "demo-reports"))
    scores = [c for c in board.frame.columns if c not in ("dataset", "encoder", "generator", "run_dir")]
    assert scores == ["BLEU-4", "n_cases", "CRQS", "crqs:n_cases"]
    assert {c: board.metric_of.get(c) for c in scores} == {"BLEU-4": "nlg", "n_cases": "nlg", "CRQS": "crqs",
                                                           "crqs:n_cases": "crqs"}
    assert board.header("CRQS") == "CRQS ↑"
    # counts are informational: no arrow in the matrix either
    assert board.header("n_cases") == "n_cases" and board.header("crqs:n_cases") == "crqs:n_cases"


# --------------------------------------------------------------------------- honest statements


def test_counts_are_informational_and_get_no_arrow():
    summary = {"classification": {"n_cases": 10.0, "n_positive": 4.0, "prevalence": 0.4, "AUROC": 0.8},
               "toy": {"n_items": 3.0, "score": 0.5}}
    rows = {r.label: r for r in score_rows(summary)}
    assert rows["n_cases"].direction == "info" and rows["n_cases"].better == ""
    assert rows["prevalence"].better == "" and rows["n_positive"].better == ""
    assert rows["AUROC"].better == "↑ higher"
    # an uninstalled metric: its n_* keys are still counts, kept out of the headline
    assert rows["n_items"].better == "" and not rows["n_items"].headline and rows["score"].headline


def test_a_three_case_synthetic_run_says_so_beside_every_score(tmp_path):
    run = tiny_synthetic_run(tmp_path / "tiny")
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["provenance"]["synthetic_data"] and metrics["provenance"]["encoder_weights"] == "random"
    html = write_run_report(run).read_text()
    body = html[html.index("<body>"):]
    # the banners open the page, before the title
    assert body.index('class="banner provenance"') < body.index("<h1>")
    assert "SYNTHETIC DATA: the cases of slides-csv" in html and "RANDOM ENCODER WEIGHTS: encoder tiny-vit" in html
    headline = html[html.index('id="section-scores"'):html.index('id="all-scores"')]
    assert "not estimable (n=3) · small test set" in headline
    assert "[1.0000, 1.0000]" not in html
    assert "Small test set (classification):" in headline and "3 test case(s) (fewer than 20)" in headline
    # the proportions hidden under "All scores" carry their own (wide) intervals
    scores = html[html.index('id="all-scores"'):]
    assert re.search(r"sensitivity.*?0\.0000.*?\[0\.0000, 0\.6576\]", scores, re.S)


def test_the_terminal_prints_banners_and_the_small_sample_warning(tmp_path):
    from rich.console import Console

    from pathkit_core.cli.common import print_scores
    from pathkit_core.evaluation.provenance import banners

    run = tiny_synthetic_run(tmp_path / "tiny")
    metrics = json.loads((run / "metrics.json").read_text())
    console = Console(width=200, record=True)
    print_scores("test scores", metrics["metrics"], headline_only=True, target=console,
                 details=metrics["details"])
    text = console.export_text()
    auroc = next(line for line in text.splitlines() if "AUROC" in line)
    assert "1.0000" in auroc and "not estimable (n=3) · small test set" in auroc and "[1.0000" not in auroc
    assert "WARNING (classification): small test set: 3 test case(s) (fewer than 20)" in text
    assert [b.split(":")[0] for b in banners(metrics)] == ["SYNTHETIC DATA", "RANDOM ENCODER WEIGHTS"]


def test_the_matrix_report_names_synthetic_cells(tmp_path):
    from types import SimpleNamespace

    from pathkit_bench.report.matrix import write_leaderboard

    results = []
    for enc in ("enc-a", "enc-b"):
        run = tiny_synthetic_run(tmp_path / "runs" / enc)
        summary = json.loads((run / "metrics.json").read_text())["metrics"]
        results.append((enc, "gen", SimpleNamespace(run_dir=run, summary=summary)))
    board = write_leaderboard(results, tmp_path, "slides-csv")
    html = (board / "report.html").read_text()
    assert "SYNTHETIC DATA: 2 of 2 cell(s) ran on synthetic cases (slides-csv)" in html
    assert "RANDOM ENCODER WEIGHTS: 2 of 2 cell(s)" in html
    # the cells' AUROC bootstrap could not vary: "not estimable", never "[nan, nan]" or "[1.000, 1.000]"
    cells = html[html.index('id="cells"'):]
    assert "1.0000 not estimable" in cells and "nan" not in cells.lower().replace("nan-", "")


def test_matrix_banners_count_the_cells():
    from pathkit_bench.report.matrix import matrix_banners

    synthetic = {"provenance": {"dataset": "hepatobench", "synthetic_data": True, "encoder": "tiny-vit",
                                "encoder_weights": "random"}}
    real = {"provenance": {"dataset": "hepatobench", "synthetic_data": False, "encoder": "uni",
                           "encoder_weights": "checkpoint"}}
    found = matrix_banners([synthetic, real, {}])
    assert found[0].startswith("SYNTHETIC DATA: 1 of 3 cell(s) ran on synthetic cases (hepatobench)")
    assert found[1].startswith("RANDOM ENCODER WEIGHTS: 1 of 3 cell(s) used randomly initialised encoder weights "
                               "(tiny-vit)")
    assert matrix_banners([real]) == []


def test_the_split_section_gives_realised_parts(tmp_path):
    run = tiny_synthetic_run(tmp_path / "tiny")
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["split"] = {"source": "drawn", "description": "drawn, requested train/val/test 70/15/15",
                        "statement": "drawn, requested train/val/test 70/15/15; realised train/val/test 14/7/7 "
                                     "patients (50/25/25%), 177/90/88 cases (50/25/25%); no patient in two parts",
                        "unit": "patient", "counts": {"test": 88, "train": 177, "val": 90},
                        "units": {"test": 7, "train": 14, "val": 7}}
    (run / "metrics.json").write_text(json.dumps(metrics))
    html = write_run_report(run).read_text()
    split = html[html.index('id="section-split"'):]
    split = split[:split.index("</section>")]
    assert "realised train/val/test 14/7/7 patients (50/25/25%), 177/90/88 cases" in split
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", split)
    assert cells[:15] == ["train", "14", "50%", "177", "50%", "val", "7", "25%", "90", "25%",
                          "test", "7", "25%", "88", "25%"]
