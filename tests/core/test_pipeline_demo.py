"""End to end: the embedded demo through `pathkit run` (small), resume, and the full demo (slow)."""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import pytest

from pathkit_core.run import RunSpec, run_pipeline

SMALL_DEMO = """
[run]
dataset = "demo-reports"
encoder = "tiny-vit"
generator = "wsi-caption"
max_tiles = 16
metrics = ["nlg", "crqs"]

[run.dataset_options]
slides_per_class = 3
workers = 1

[run.hparams]
d_model = 32
d_ff = 64
num_heads = 2
num_layers = 1
max_tokens = 64

[run.train]
max_epochs = 2
lr = 0.002
batch_size = 3
eval_batch_size = 6
progress = false
"""


@pytest.fixture(autouse=True)
def _two_threads():
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_small_demo_runs_end_to_end_and_resumes(cli, tmp_path):
    config = tmp_path / "demo.toml"
    config.write_text(SMALL_DEMO)
    work = tmp_path / "work"
    result = cli("run", "--config", config, "--workdir", work, "--cpu")
    assert result.exit_code == 0, result.output
    assert "most-frequent" in result.output and "baseline" in result.output and "run folder:" in result.output
    run_dir = next((work / "runs" / "demo-reports" / "tiny-vit" / "wsi-caption").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for key in ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L"):
        assert 0.0 <= metrics["metrics"]["nlg"][key] <= 1.0
    assert -0.9 <= metrics["metrics"]["crqs"]["CRQS"] <= 1.0
    assert set(metrics["baselines"]["most-frequent-report"]) == {"nlg", "crqs"}
    assert 0.0 < metrics["distinct_prediction_fraction"] <= 1.0
    predictions = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == 6 and all(isinstance(p["prediction"], str) for p in predictions)
    checkpoint = json.loads((run_dir / "checkpoints" / "best.json").read_text())
    tokenizer = checkpoint["config"]["spec"]["state"]["tokenizer"]
    assert tokenizer["cleaning"] == "none" and tokenizer["max_tokens"] == 64
    assert "Stomach" in tokenizer["vocab"]
    # the demo folder is built once, in the workspace, in the REG release layout
    demo_root = next((work / "datasets" / "demo-reports").iterdir())
    assert len(list((demo_root / "slides").glob("*.tiff"))) == 18 and (demo_root / "reports.json").exists()

    # the same run again is resumed from its stage markers: nothing is retrained or rescored
    stages = json.loads((run_dir / "stages.json").read_text())
    assert {"dataset", "features", "fit", "predict", "score"} <= set(stages)
    values = tomllib.loads(SMALL_DEMO)["run"]
    again = run_pipeline(RunSpec.from_mapping({**values, "workdir": work, "cpu": True}), log=lambda _: None)
    assert again.run_dir == run_dir and "score" in again.resumed_stages
    assert again.summary == metrics["metrics"]
    assert json.loads((run_dir / "stages.json").read_text())["fit"] == stages["fit"]


@pytest.mark.slow
def test_full_demo_beats_the_most_frequent_report_on_crqs(tmp_path):
    start = time.perf_counter()
    from pathkit_datasets.demo_reports import DemoReports

    demo = {**DemoReports.demo_run, "dataset": DemoReports.name}
    result = run_pipeline(RunSpec.from_mapping({**demo, "workdir": tmp_path, "cpu": True}), log=lambda _: None)
    elapsed = time.perf_counter() - start
    model, baseline = result.summary["crqs"]["CRQS"], result.baselines["most-frequent-report"]["crqs"]["CRQS"]
    assert model > baseline + 0.3, (model, baseline)
    assert result.summary["nlg"]["BLEU-4"] > result.baselines["most-frequent-report"]["nlg"]["BLEU-4"]
    print(f"full demo: {elapsed:.0f} s, CRQS {model:.3f} vs most-frequent {baseline:.3f}")
    assert Path(result.run_dir, "report.html").exists()
