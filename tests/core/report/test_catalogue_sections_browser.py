"""The suite report's catalogue sections in headless Chromium: the published scores beside pathkit's
cells, the baselines' paired differences and the cost table with the suite's device-hours, drawn
without console errors and without widening the page."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from ._browser import OVERFLOW_JS

pytest.importorskip("websocket", reason="websocket-client (requirements-dev.txt) drives the browser")


@pytest.fixture(scope="module")
def catalogue_report(planted_suite, tmp_path_factory):
    from pathkit_bench.report.suite import write_suite_report
    from pathkit_bench.suite.analysis import SuiteAnalysis
    from pathkit_bench.suite.runner import COST_COLUMNS

    folder = shutil.copytree(planted_suite, tmp_path_factory.mktemp("catalogue-suite") / "planted")
    record = json.loads((folder / "suite.json").read_text())
    record.update(baselines=["tiny"], reference_scores=[
        {"source": "a published leaderboard", "task": "easy", "score": "AUROC",
         "values": {"strong": 0.97, "small": 0.71, "absent-model": 0.5}}])
    (folder / "suite.json").write_text(json.dumps(record))
    board = pl.read_parquet(folder / "leaderboard.parquet")
    cost = {c: pl.lit(None, dtype=pl.Float64) for c in COST_COLUMNS}
    cost.update(device=pl.lit("CPU: a test processor"), wall_seconds=pl.lit(36.0), features_seconds=pl.lit(20.0),
                n_tiles=pl.lit(4000, dtype=pl.Int64), tiles_per_second=pl.lit(200.0),
                peak_host_memory_mb=pl.lit(1234.5))
    board.with_columns(**cost).write_parquet(folder / "leaderboard.parquet")
    return write_suite_report(SuiteAnalysis(folder, resamples=300))


@pytest.mark.slow  # a second suite report of the planted suite: `make test-suite`
def test_catalogue_sections_render(browser, catalogue_report):
    page = browser.open(catalogue_report)
    for section in ("references", "baselines", "cost"):
        assert page.evaluate(f"!!document.getElementById('section-{section}')"), section
    rows = page.evaluate("Array.from(document.querySelectorAll('#references tbody tr')).map(r => r.innerText)")
    # two published models run, each with 2 generators, and one the suite did not run
    assert len(rows) == 2 * 2 + 1 and any("0.9700" in r and "g1" in r for r in rows)
    assert sum("not run" in r for r in rows) == 1  # the published model the suite did not run
    baseline_rows = page.evaluate("document.querySelectorAll('#baselines tbody tr').length")
    assert baseline_rows == 2 * 2 * 2  # per task: 2 models x 2 generators against the best "tiny" cell
    cost = page.evaluate("document.getElementById('section-cost').innerText")
    # 2 tasks x 3 encoders x 2 generators x 3 seeds = 36 cells of 36 s: 0.36 device-hours
    assert "0.3600 device-hours over 36 cells" in cost and "CPU: a test processor" in cost
    assert page.evaluate(OVERFLOW_JS) <= 1, "the page is wider than the window"
    assert page.errors == []
