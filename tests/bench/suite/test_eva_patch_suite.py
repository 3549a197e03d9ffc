"""The shipped eva-patch suite on replicas of the seven public patch benchmarks (the layouts of
tests/plugins/datasets/catalogue_replicas.py) with two tiny encoders and, with `baselines = true`, the
truncated ResNet-50 (random weights in its published layout): every cell runs, and the report shows
datasets x encoders beside the baseline, balanced accuracy compared case by case, the
critical-difference diagram across the datasets, the cost, and eva's published numbers beside the cells."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from tests.core.report._browser import FIGURES_JS, OVERFLOW_JS, filter_rows
from tests.core.report.conftest import browser  # noqa: F401  (headless Chromium, skips without one)
from tests.plugins.datasets import catalogue_replicas as replicas

REPO = Path(__file__).resolve().parents[3]
SUITE = REPO / "examples" / "suites" / "eva-patch.toml"
FOLDERS = {"bach": "bach", "crc": "crc", "mhist": "mhist", "pcam": "pcam", "breakhis": "breakhis",
           "bracs": "bracs", "unitopatho": "unitopatho"}


def replica_suite(tmp_path: Path) -> Path:
    """eva-patch.toml as shipped, with the replicas as roots, two tiny encoders, one seed and fewer
    steps (the protocol's other lines unchanged)."""
    text = SUITE.read_text()
    for folder, build in FOLDERS.items():
        root = getattr(replicas, build)(tmp_path / "replicas" / folder)
        text = text.replace(f'dataset_root = "/data/{folder}"', f'dataset_root = "{root}"')
    assert "\"/data/" not in text  # every task's root replaced
    text = re.sub(r"(?ms)^encoders = \[.*?\]\n", 'encoders = ["tiny-vit", "tiny-vit-wide"]\nbaselines = true\n',
                  text, count=1)
    text = text.replace("seeds = [0, 1, 2, 3, 4]", "seeds = [0]")
    text = text.replace("max_steps = 12500", "max_steps = 40").replace("val_every_steps = 250", "val_every_steps = 20")
    text = text.replace("lr = 0.0003", "lr = 0.01")
    path = tmp_path / "eva-patch.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def eva_suite(tmp_path_factory):
    """(the bench command's result, the suite folder) of one run of the replica suite, shared by
    the module's tests."""
    from typer.testing import CliRunner

    from pathkit_core.cli import build_app
    from pathkit_core.plugins import get_plugin_manager

    tmp_path = tmp_path_factory.mktemp("eva-patch")
    config, work = replica_suite(tmp_path), tmp_path / "work"
    # the baseline ResNet-50 (truncated after stage 3) with random weights in the published layout,
    # found where a user's torchvision weights would be ($PATHKIT_WEIGHTS_DIR/resnet50-trunc/)
    baseline = get_plugin_manager().get("encoder", "resnet50-trunc")()
    baseline.random_checkpoint(tmp_path / "weights" / "resnet50-trunc" / baseline.weights.filename, seed=5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATHKIT_WEIGHTS_DIR", str(tmp_path / "weights"))
        result = CliRunner().invoke(build_app(), ["bench", "--config", str(config), "--workdir", str(work), "--cpu"],
                                    catch_exceptions=False)
    return result, work / "suites" / "eva-patch"


@pytest.mark.slow  # 21 cells: `make test-suite`
def test_eva_patch_suite_on_replicas(eva_suite):
    result, folder = eva_suite
    assert result.exit_code == 0, result.output
    assert "21 cell(s) finished (0 reused), 0 failed" in " ".join(result.output.split())  # 7 x (2 + baseline)
    board = pl.read_parquet(folder / "leaderboard.parquet")
    compared = board.filter(pl.col("score") == "balanced_accuracy")
    assert compared.height == 21 and set(compared["encoder"]) == {"tiny-vit", "tiny-vit-wide", "resnet50-trunc"}
    assert set(compared["dataset"]) == {"bach", "crc-100k", "mhist", "pcam", "breakhis", "bracs", "unitopatho"}
    comparisons = pl.read_csv(folder / "comparisons.csv")
    assert comparisons.height == 21 and set(comparisons["score"]) == {"balanced_accuracy"}  # 3 pairs per dataset
    report = (folder / "report.html").read_text()
    assert "Published scores beside pathkit&#x27;s" in report or "Published scores beside pathkit's" in report
    assert "eva leaderboard" in report and "0.9150" in report and "not run" in report
    assert "Critical-difference diagram of the encoders" in report
    assert (folder / "figures").is_dir() and any((folder / "figures").glob("cd_encoder*"))
    # cost columns: every cell's device, time per stage, throughput and memory; the suite's device-hours
    cells = board.unique(subset=["task", "encoder", "generator", "seed"])
    assert cells.height == 21 and cells["wall_seconds"].min() > 0 and cells["features_seconds"].min() > 0
    assert cells["tiles_per_second"].min() > 0 and cells["device"].str.starts_with("CPU: ").all()
    assert (cells["n_tiles"] > 0).all() and cells["peak_host_memory_mb"].min() > 0
    total = cells["wall_seconds"].sum() / 3600
    assert f"{total:.4f} device-hours" in report and f"cost: {total:.4f} device-hours over 21 cell(s)" in \
        " ".join(result.output.split())


@pytest.mark.slow  # the same 21 cells (one run for the module): `make test-suite`
def test_eva_patch_report_in_the_browser(eva_suite, request):
    """The suite's own report as a reader sees it: datasets x encoders in the headline, eva's numbers
    beside the cells, the critical-difference diagram drawn, the cost table, the cells' run reports
    linked; no console error and nothing wider than the window."""
    pytest.importorskip("websocket", reason="websocket-client (requirements-dev.txt) drives the browser")
    result, folder = eva_suite
    assert result.exit_code == 0, result.output
    page = request.getfixturevalue("browser").open(folder / "report.html")
    for section in ("headline", "pairwise", "ranks", "references", "baselines", "cost", "cells"):
        assert page.evaluate(f"!!document.getElementById('section-{section}')"), section
    rows = page.evaluate("Array.from(document.querySelectorAll('#headline tbody tr'))"
                         ".map(r => Array.from(r.cells).map(c => c.innerText))")
    assert len(rows) == 21  # 7 datasets x (2 encoders + the baseline), one generator
    assert {r[0] for r in rows} == {"bach", "crc-100k", "mhist", "pcam", "breakhis", "bracs", "unitopatho"}
    assert {r[2] for r in rows} == {"tiny-vit", "tiny-vit-wide", "resnet50-trunc"}
    assert all("balanced_accuracy" in r[1] for r in rows)
    assert filter_rows(page, "headline", "", text="unitopatho") == 3  # the table filters as a reader types
    baselines = page.evaluate("document.getElementById('section-baselines').innerText")
    assert "resnet50-trunc" in baselines and "tiny-vit-wide" in baselines  # each model beside the baseline
    references = page.evaluate("document.getElementById('section-references').innerText")
    assert "eva leaderboard" in references and "0.9150" in references and "not run" in references
    figures = {f["name"]: f for f in page.evaluate(FIGURES_JS)}
    cd = next(f for name, f in figures.items() if name.startswith("cd_encoder"))
    assert cd["complete"] and cd["natural"] > 0 and cd["width"] > 100 and cd["height"] > 50 and cd["visible"]
    board = pl.read_parquet(folder / "leaderboard.parquet").unique(subset=["task", "encoder", "generator", "seed"])
    cost = page.evaluate("document.getElementById('section-cost').innerText")
    assert f"{board['wall_seconds'].sum() / 3600:.4f} device-hours" in cost and "CPU: " in cost
    links = page.evaluate("Array.from(document.querySelectorAll('#cells a')).map(a => a.href)")
    assert len(links) == 21 and all(link.endswith("/report.html") for link in links)
    assert page.evaluate(OVERFLOW_JS) <= 1, "the page is wider than the window"
    assert page.errors == []
