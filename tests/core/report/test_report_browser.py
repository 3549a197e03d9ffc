"""Every kind of report rendered in a real browser (headless Chromium): no console errors, every
figure drawn at a visible size, nothing wider than the window, and the per-case tables filter."""

from __future__ import annotations

import polars as pl
import pytest

from ._browser import FIGURES_JS, OVERFLOW_JS, Browser, filter_rows, find_browser

pytest.importorskip("websocket", reason="websocket-client (requirements-dev.txt) drives the browser")


def check_page(browser, path, min_figures: int):
    page = browser.open(path)
    figures = page.evaluate(FIGURES_JS)
    assert len(figures) >= min_figures, figures
    for fig in figures:
        assert fig["complete"] and fig["natural"] > 0, f"{fig['name']} did not load"
        assert fig["width"] >= 60 and fig["height"] >= 40 and fig["visible"], fig
    assert page.evaluate(OVERFLOW_JS) <= 1, "the page is wider than the window"
    assert page.evaluate("document.querySelector('h2').textContent") == "Headline scores"
    return page


@pytest.mark.parametrize("task, min_figures", [("report", 3), ("slide-classification", 8),
                                                # + HepatoBench Figure 2a beside the run
                                                ("patch-classification", 5), ("segmentation", 3),
                                                # capabilities, evidence states, accuracy vs K, accessibility,
                                                # the paper's accuracies
                                                ("multiple-choice-vqa", 5)])
def test_run_report_renders_in_chromium(browser, runs, task, min_figures):
    page = check_page(browser, runs[task] / "report.html", min_figures)
    assert page.errors == []


def test_vqa_and_hepatobench_reports_show_states_k_sweep_and_published_numbers(browser, runs):
    page = browser.open(runs["multiple-choice-vqa"] / "report.html")
    for section in ("evidence-states", "k-sweep", "published-reference"):
        assert page.evaluate(f"!!document.getElementById('section-{section}')"), section
    names = {f["name"].split(".")[0] for f in page.evaluate(FIGURES_JS)}
    assert {"vqa_evidence_states", "vqa_accuracy_vs_k", "published_reference"} <= names, names
    assert page.evaluate("document.querySelectorAll('#k-sweep tr').length") == 5  # header + Overall, ESG, GR, MA
    patch = browser.open(runs["patch-classification"] / "report.html")
    assert patch.evaluate("document.querySelector('#section-published-reference h2').textContent") == \
        "HepatoBench Figure 2a"
    assert page.errors == [] and patch.errors == []


def test_report_cases_filter_by_score_and_text(browser, runs):
    run = runs["report"]
    page = browser.open(run / "report.html")
    per_case = pl.read_parquet(run / "per_case.parquet")
    expected = per_case.filter(pl.col("CRQS") >= 0.5).height
    assert 0 < expected < per_case.height
    assert filter_rows(page, "cases", "CRQS", low=0.5) == expected
    assert page.evaluate("document.querySelector('.f-count').textContent") == f"{expected} of {per_case.height} rows"
    assert filter_rows(page, "cases", "CRQS", low=0.5, high=0.6) == per_case.filter(
        (pl.col("CRQS") >= 0.5) & (pl.col("CRQS") <= 0.6)).height
    texts = [line for line in (run / "test_cases.jsonl").read_text().splitlines()]
    preds = (run / "predictions.jsonl").read_text().splitlines()
    breast = sum("Breast" in a or "Breast" in b for a, b in zip(texts, preds, strict=True))
    assert 0 < breast < per_case.height
    assert filter_rows(page, "cases", "CRQS", text="breast") == breast
    assert filter_rows(page, "cases", "CRQS") == per_case.height
    assert page.errors == []


def test_classification_cases_sort_and_filter(browser, runs):
    page = browser.open(runs["slide-classification"] / "report.html")
    rows = page.evaluate("document.getElementById('cases').tBodies[0].rows.length")
    assert filter_rows(page, "cases", "p(reference)", high=0.5) < rows
    filter_rows(page, "cases", "p(reference)")
    # a click on the p(reference) header sorts ascending
    values = page.evaluate("""(() => { const t = document.getElementById('cases');
        t.tHead.rows[0].cells[4].click();
        return Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[4].dataset.v)); })()""")
    assert values == sorted(values)
    assert page.errors == []


@pytest.fixture(scope="module")
def laptop_browser():
    """A narrower window (1024 px): a laptop screen, where wide tables are the first to be cut."""
    if find_browser() is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium; CI installs it)")
    b = Browser(width=1024)
    yield b
    b.close()


def test_matrix_report_renders_in_chromium(browser, laptop_browser, board):
    check_page_matrix(laptop_browser, board / "report.html")
    page = check_page_matrix(browser, board / "report.html")
    links = page.evaluate("Array.from(document.querySelectorAll('#cells a')).map(a => a.href)")
    assert len(links) == 4
    for href in links:  # every cell's run report opens
        cell = browser.open(href.removeprefix("file://"))
        assert cell.evaluate("document.title").startswith("pathkit run")
    assert page.errors == []


def check_page_matrix(browser, path):
    page = browser.open(path)
    figures = page.evaluate(FIGURES_JS)
    assert len(figures) >= 3 and all(f["natural"] > 0 and f["width"] >= 60 for f in figures)
    assert page.evaluate(OVERFLOW_JS) <= 1
    # the summary views fit their column: none is cut and left to scroll sideways
    hidden = page.evaluate("""Array.from(document.querySelectorAll('table.views')).map(
        t => t.parentElement.scrollWidth - t.parentElement.clientWidth)""")
    assert hidden and max(hidden) <= 1, hidden
    return page


def test_broken_pages_are_caught(browser, tmp_path):
    """The checks fail on a page with a script error, a console error and an image that does not load."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><h2>Headline scores</h2><figure><img src='missing.png' width=10 height=10>"
                   "</figure><div style='width:5000px'>wide</div><script>console.error('boom');"
                   "undefinedFunction();</script></body></html>")
    page = browser.open(bad)
    assert any("boom" in e for e in page.errors) and any("undefinedFunction" in e for e in page.errors)
    figures = page.evaluate(FIGURES_JS)
    assert figures[0]["natural"] == 0
    assert page.evaluate(OVERFLOW_JS) > 1


def test_suite_report_renders_with_cd_diagrams_and_links(browser, suite_report):
    page = browser.open(suite_report)
    figures = page.evaluate(FIGURES_JS)
    names = {f["name"] for f in figures}
    assert {"cd_encoder", "cd_generator", "pairwise_easy", "pairwise_hard", "seeds_easy", "seeds_hard"} <= names
    for fig in figures:
        assert fig["complete"] and fig["natural"] > 0 and fig["width"] >= 60 and fig["height"] >= 40, fig
    assert page.evaluate(OVERFLOW_JS) <= 1, "the page is wider than the window"
    assert page.evaluate("document.querySelector('h2').textContent").startswith("Headline")
    # every figure's data beside it, and the links to the cells' run reports resolve
    folder = suite_report.parent
    for name in names:
        assert (folder / "figures" / f"{name}.csv").exists()
    hrefs = page.evaluate("Array.from(document.querySelectorAll('#cells a')).map(a => a.getAttribute('href'))")
    assert len(hrefs) == 6 and all((folder / h).exists() for h in hrefs)
    assert filter_rows(page, "headline", "", text="strong") == 4


def test_a_synthetic_demo_report_shows_its_banners_first(browser, tmp_path):
    """A shared report of a synthetic demo never reads like a real result: its banners are the
    first thing on the page, visible, before the title and the scores."""
    from pathkit_core.report.html import write_run_report

    from ._runs import tiny_synthetic_run

    report = write_run_report(tiny_synthetic_run(tmp_path / "tiny"))
    page = browser.open(report)
    found = page.evaluate("""(() => Array.from(document.querySelectorAll('.banner')).map(b => {
        const r = b.getBoundingClientRect(); const s = getComputedStyle(b);
        return {text: b.textContent, top: r.top, height: r.height, visible: s.display !== 'none'
                && s.visibility !== 'hidden' && r.width > 0, colour: s.backgroundColor}; }))()""")
    assert [b["text"].split(":")[0] for b in found] == ["SYNTHETIC DATA", "RANDOM ENCODER WEIGHTS"]
    title_top = page.evaluate("document.querySelector('h1').getBoundingClientRect().top")
    assert all(b["visible"] and b["height"] > 10 and b["top"] < title_top for b in found), found
    assert found[0]["colour"] == "rgb(204, 0, 0)"
    ci = page.evaluate("document.getElementById('headline-scores').tBodies[0].rows[0].cells[2].textContent")
    assert ci == "not estimable (n=3) · small test set"
    assert page.errors == []
