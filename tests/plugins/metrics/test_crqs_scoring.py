"""CRQS scoring (`pathkit_metrics._crqs.scoring`): the summary computed from the comparisons' lists
and the per-case table built when read give what the eager polars table gave before."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from pathkit_metrics._crqs.scoring import score_reports, summarise, summary_of_columns
from polars.testing import assert_frame_equal

from pathkit_core.contracts import PathkitError
from pathkit_sdk.bootstrap import bootstrap_ci

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def before():
    """14 synthetic cases (repeated pairs, an empty and a field-less reference, an empty
    prediction, margins outside the REG schema, a U+FFFD) scored by the code before this change:
    its summary (with the variants and a 200-resample bootstrap) and its per-case table."""
    fixture = json.loads((DATA / "crqs_before.json").read_text(encoding="utf-8"))
    return fixture, pl.read_parquet(DATA / "crqs_per_case_before.parquet")


def _scored(fixture):
    return score_reports(fixture["predictions"], fixture["references"], ids=fixture["ids"],
                         context=fixture["context"])


def test_summary_from_lists_is_the_one_the_table_gave(before):
    fixture, _ = before
    summary = _scored(fixture).summary
    assert list(summary) == list(fixture["summary"])  # same keys in the same order
    assert summary == fixture["summary"]  # exact floats: same means, same resamples, same quantiles
    assert summary["n_scored"] == 12 and summary["n_outside_schema"] > 0


def test_per_case_table_built_when_read_is_the_one_built_before(before):
    fixture, table = before
    result = _scored(fixture)
    assert_frame_equal(result.per_case, table)
    assert result.per_case is result.per_case  # built once, then kept


def test_summarise_on_a_table_and_on_its_lists_agree(before):
    fixture, table = before
    context = fixture["context"]
    from_table = summarise(table, context)
    assert from_table == summary_of_columns({c: table[c].to_list() for c in table.columns}, context)
    assert from_table == {k: v for k, v in fixture["summary"].items() if not k.startswith(("n_", "distinct_"))}
    scored = [v for v in table["CRQS"].to_list() if v is not None]
    assert from_table["CRQS"] == pytest.approx(sum(scored) / len(scored), abs=1e-15)
    kir = [v for v in table["KIR"].to_list() if v is not None]
    assert from_table["KIR"] == pytest.approx(sum(kir) / len(kir), abs=1e-15)


def test_each_shared_interval_is_the_one_bootstrap_ci_gives(before):
    """The shared resamples are `bootstrap_ci`'s (same seed), so each column's interval is the one
    it gives alone; an interval of no width is (nan, nan) for every column alike, not [x, x]."""
    fixture, table = before
    summary = _scored(fixture).summary
    scored = table.filter(pl.col("CRQS").is_not_null())
    for name in ("CRQS", "CFC", "HR", "CDS", "CRQS_raw", "CRQS_eq6", "CRQS_eq6_raw"):
        assert (summary[f"{name}_ci_low"], summary[f"{name}_ci_high"]) == bootstrap_ci(
            scored[name].to_list(), 200, seed=3), name
    kir = [v for v in table["KIR"].to_list() if v is not None]
    assert (summary["KIR_ci_low"], summary["KIR_ci_high"]) == bootstrap_ci(kir, 200, seed=3)
    report = "Breast, core biopsy; Invasive carcinoma of no special type, grade II (Tubule formation: 3)"
    perfect = score_reports([report] * 3, [report] * 3).summary
    assert perfect["CRQS"] == 1.0 and perfect["HR"] == 0.0
    assert all(math.isnan(v) for k, v in perfect.items() if "_ci_" in k)


@pytest.mark.parametrize("kir_cases", [range(0, 40), range(5, 45), range(0, 30)])
def test_kir_interval_is_its_own_whether_or_not_it_shares_the_resamples(kir_cases):
    """KIR joins the shared resamples when it is defined on as many cases as CRQS (the draws
    depend on the count alone, not on which cases), else it is drawn alone: either way its
    interval is the one `bootstrap_ci` gives for its values."""
    rng = np.random.default_rng(8)
    crqs = [float(v) if i < 40 else None for i, v in enumerate(rng.uniform(-1, 1, 45))]
    kir = [float(v) if i in kir_cases else None for i, v in enumerate(rng.uniform(0, 1, 45))]
    columns = {"CRQS": crqs, "CFC": crqs, "HR": crqs, "CDS": crqs, "KIR": kir}
    summary = summary_of_columns(columns, {"bootstrap_resamples": 300, "seed": 4})
    defined = [v for v in kir if v is not None]
    assert (summary["KIR_ci_low"], summary["KIR_ci_high"]) == bootstrap_ci(defined, 300, seed=4)
    assert (summary["CRQS_ci_low"], summary["CRQS_ci_high"]) == bootstrap_ci(crqs[:40], 300, seed=4)


def test_summary_of_columns_edges():
    # no scored case: means are NaN, intervals NaN (nothing to resample)
    empty = summary_of_columns({"CRQS": [None], "CFC": [None], "KIR": [None], "HR": [None], "CDS": [None]},
                               {"bootstrap_resamples": 10})
    assert all(math.isnan(v) for v in empty.values()) and "CRQS_ci_low" in empty
    # a column the summary needs is named in the error
    with pytest.raises(PathkitError, match="no column KIR"):
        summary_of_columns({"CRQS": [1.0], "CFC": [1.0], "HR": [0.0], "CDS": [1.0]}, {"bootstrap_resamples": 0})
    with pytest.raises(PathkitError, match="no column CRQS_raw"):
        summary_of_columns({"CRQS": [1.0], "CFC": [1.0], "KIR": [1.0], "HR": [0.0], "CDS": [1.0]},
                           {"bootstrap_resamples": 0, "variants": True})
    with pytest.raises(PathkitError, match="bootstrap_resamples must be an integer"):
        summary_of_columns({}, {"bootstrap_resamples": -1})
    with pytest.raises(PathkitError, match="confidence_level must lie strictly between 0 and 1"):
        summary_of_columns({"CRQS": [1.0, 0.5], "CFC": [1.0, 0.5], "KIR": [1.0, 0.5], "HR": [0.0, 0.1],
                            "CDS": [0.0, 0.1]}, {"confidence_level": 1.5})


@pytest.mark.realdata
def test_reg_pairs_summary_unchanged(realdata, load_benchmark, tmp_path):
    """The 741 REG test reports, each against another (the cold-scoring benchmark's pairs): the
    summary is the one the eager table gave (recorded from the code before this change), and the
    table built afterwards gives it too."""
    bench = load_benchmark("bench_score_cold")
    pairs = json.loads(bench.pairs_file(tmp_path, realdata / "reports" / "reg2025_pathbench_splits.json",
                                        one_line=False).read_text(encoding="utf-8"))
    result = score_reports([p["pred"] for p in pairs.values()], [p["target"] for p in pairs.values()],
                           ids=list(pairs))
    assert result.summary == {
        "CRQS": -0.20894383394383403, "CRQS_ci_low": -0.24634788857063303, "CRQS_ci_high": -0.17094146576759361,
        "CFC": 0.26404776185477935, "CFC_ci_low": 0.2415664115773765, "CFC_ci_high": 0.2850712741611865,
        "KIR": 0.2542285200179937, "KIR_ci_low": 0.2314398710451342, "KIR_ci_high": 0.27595197930724247,
        "HR": 0.2356907225328278, "HR_ci_low": 0.21786437246963564, "HR_ci_high": 0.2541929074823811,
        "CDS": 0.7000706895443737, "CDS_ci_low": 0.6762231767988347, "CDS_ci_high": 0.7246829078572499,
        "n_cases": 741.0, "n_scored": 741.0, "distinct_prediction_fraction": 0.33738191632928477,
        "n_outside_schema": 0.0,
    }
    assert list(result.summary)[:3] == ["CRQS", "CRQS_ci_low", "CRQS_ci_high"]
    table = result.per_case
    assert table.height == 741 and table["id"].to_list() == list(pairs)
    assert summarise(table, {}) == {k: v for k, v in result.summary.items() if not k.startswith(("n_", "distinct"))}
