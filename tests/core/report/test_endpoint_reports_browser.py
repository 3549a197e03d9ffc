"""The endpoint tasks' run reports (survival, ordinal, retrieval, few-shot) in headless Chromium:
their sections present, every figure drawn at a visible size, no console error, nothing wider than
the window; the retrieval table filters."""

from __future__ import annotations

import pytest

from ._browser import FIGURES_JS, OVERFLOW_JS, filter_rows

pytest.importorskip("websocket", reason="websocket-client (requirements-dev.txt) drives the browser")

SECTIONS = {"survival": ["survival-km"], "ordinal": ["confusion", "ordinal-errors"],
            "retrieval": ["retrieval"], "few-shot": ["few-shot"]}
FIGURES = {"survival": {"kaplan_meier_risk_groups"}, "ordinal": {"grade_errors"}, "retrieval": set(),
           "few-shot": {"few_shot_curve"}}


@pytest.fixture(scope="module")
def endpoint_runs(tmp_path_factory):
    from pathkit_core.report.html import write_run_report

    from ._endpoint_runs import BUILDERS

    root = tmp_path_factory.mktemp("endpoint-runs")
    out = {}
    for name, build in BUILDERS.items():
        out[name] = build(root / name)
        write_run_report(out[name])
    return out


@pytest.mark.parametrize("task", sorted(SECTIONS))
def test_endpoint_report_renders_its_sections_in_chromium(browser, endpoint_runs, task):
    page = browser.open(endpoint_runs[task] / "report.html")
    for section in SECTIONS[task]:
        assert page.evaluate(f"!!document.getElementById('section-{section}')"), section
    figures = page.evaluate(FIGURES_JS)
    for fig in figures:
        assert fig["complete"] and fig["natural"] > 0, f"{fig['name']} did not load"
        assert fig["width"] >= 60 and fig["height"] >= 40 and fig["visible"], fig
    names = {f["name"].split(".")[0] for f in figures}
    assert FIGURES[task] <= names, names
    assert page.evaluate(OVERFLOW_JS) <= 1, "the page is wider than the window"
    assert page.errors == []


def test_few_shot_table_has_a_row_per_k(browser, endpoint_runs):
    page = browser.open(endpoint_runs["few-shot"] / "report.html")
    assert page.evaluate("document.querySelectorAll('#few-shot-curve tbody tr').length") == 5
    assert page.errors == []


def test_retrieval_cases_filter_by_text(browser, endpoint_runs):
    page = browser.open(endpoint_runs["retrieval"] / "report.html")
    total = page.evaluate("document.getElementById('retrieval-cases').tBodies[0].rows.length")
    assert total == 24
    shown = filter_rows(page, "retrieval-cases", "", text="violet")
    assert 8 <= shown < total  # the 8 violet queries, and those that retrieved a violet case
    assert page.errors == []
