"""The example plugin's new task type, end to end through `pathkit run`, installed as a user would."""

from __future__ import annotations

import pytest


# a convergence check (the demo's whole training): `make test-suite`, which CI runs after `make test`
@pytest.mark.slow
def test_slide_regression_runs_end_to_end_and_beats_the_train_mean(installed_registry, demo_run):
    run = demo_run("demo-purity", "mean-pool-regressor")
    model, baseline = run.scores("regression", "train-mean")
    assert model["MAE"] < 0.5 * baseline["MAE"], (model, baseline)
    assert model["pearson_r"] > 0.8
    assert len(run.predictions) == 6 and all(set(p["prediction"]) == {"value"} for p in run.predictions)
    assert (run.path / "report.html").exists() and (run.path / "checkpoints" / "best.safetensors").exists()
    # the third-party task's own report section, with its figure's data beside it
    assert 'id="section-regression"' in run.report and "Predicted against reference" in run.report
    assert len((run.path / "figures" / "predicted_vs_reference.csv").read_text().splitlines()) == 7


def test_a_bad_purity_value_is_named_before_any_tiling(installed_registry, cli, tmp_path):
    from pathkit_example_plugin.purity_demo import write_demo

    root = write_demo(tmp_path / "demo")
    table = root / "purity.csv"
    lines = table.read_text().splitlines()
    lines[3] = lines[3].split(",")[0] + ",lots,train"
    table.write_text("\n".join(lines) + "\n")
    result = cli("run", "-d", "demo-purity", "-e", "tiny-vit", "-g", "mean-pool-regressor", "--dataset-root", root,
                 "--workdir", tmp_path / "ws", "--cpu")
    assert result.exit_code == 2
    message = result.stderr.replace("\n", "")
    assert "PUR_train_02 (train): target 'lots' is not a finite number" in message
    assert not (tmp_path / "ws" / "tiles").exists()
