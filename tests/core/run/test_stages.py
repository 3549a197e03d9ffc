"""Each stage of `pathkit run` on its own, over a toy run state (`stage(state) -> state`)."""

from __future__ import annotations

import json
import time

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_core.run import dataset, features, fit, pipeline, predict, report, score
from pathkit_core.run.context import RunContext
from pathkit_core.run.spec import RunSpec
from pathkit_core.run.state import RunState
from pathkit_core.shard import current_shard
from tests.core._toy import write_toy_features
from tests.core.test_pipeline_orchestration import DIM, N_TILES, MeanPool, toy_plugin


@pytest.fixture
def toy_spec(fresh_registry, tmp_path):
    fresh_registry({"toy": toy_plugin()})
    root = write_toy_features(tmp_path / "toy", 30, N_TILES, DIM, "case")
    return RunSpec(dataset="toy-cohort", encoder="precomputed", generator="mean-pool", dataset_root=str(root),
                   workdir=str(tmp_path / "ws"), cpu=True)


def new_state(spec: RunSpec, logs: list[str] | None = None) -> RunState:
    out = logs if logs is not None else []
    return RunState(RunContext(spec, out.append), current_shard(spec.shard), time.perf_counter())


def test_the_pipeline_is_the_six_stages_in_data_flow_order():
    assert pipeline.STAGES == (dataset.stage, features.stage, fit.stage, predict.stage, score.stage, report.stage)


def test_a_stage_before_the_stages_it_reads_is_a_wiring_error(toy_spec):
    state = new_state(toy_spec)
    with pytest.raises(RuntimeError, match="dataset"):
        features.stage(state)
    state = dataset.stage(state)
    with pytest.raises(RuntimeError, match="features, items"):
        fit.stage(state)
    state.ctx.close()


def test_each_stage_adds_its_part_of_the_state(toy_spec):
    state = dataset.stage(new_state(toy_spec))
    try:
        ds = state.dataset
        assert {k: len(v) for k, v in ds.ids.items()} == {"train": 18, "val": 6, "test": 6}
        assert state.keys == {"dataset": ds.data_key}
        run_dir = state.ctx.run_dir
        assert json.loads((run_dir / "stages.json").read_text())["dataset"]["key"] == ds.data_key
        # the run lock is held from the dataset stage on: a second run of the cell is refused
        with pytest.raises(PathkitError):
            dataset.stage(new_state(toy_spec))

        state = features.stage(state)
        assert {k: len(v) for k, v in state.items.items()} == {"train": 18, "val": 6, "test": 6}
        assert state.facts.run_dir == run_dir and len(state.train_targets) == 18
        assert (run_dir / "features_qc.csv").exists() and set(state.keys) == {"dataset", "features"}
        # the test items never carry their targets
        assert all(item["target"] is None for item in state.items["test"])

        MeanPool.built = 0
        state = fit.stage(state)
        assert state.plan is not None and state.plan.stage_key == state.keys["fit"]
        assert (run_dir / "checkpoints" / "best.safetensors").exists() and MeanPool.built == 1

        state = predict.stage(state)
        assert state.checkpoints[0] == "best" and "predict" in state.keys
        assert sorted(state.evaluated["best"].predictions) == [f"case{i:02d}" for i in range(24, 30)]

        state = score.stage(state)
        assert state.result is None
        assert state.scores["summary"]["toy-accuracy"]["accuracy"] == 1.0

        state = report.stage(state)
        assert state.result.summary == state.scores["summary"]
        inputs = json.loads((run_dir / "provenance.json").read_text())["inputs"]
        assert set(inputs["stage_keys"]) == {"dataset", "features", "fit", "predict", "score"}
    finally:
        state.ctx.close()


def test_a_finished_run_stops_at_the_score_stage_without_training_again(toy_spec):
    first = pipeline.run_pipeline(toy_spec, log=lambda _: None)
    logs: list[str] = []
    state = new_state(toy_spec, logs)
    MeanPool.built = 0
    try:
        for stage in (dataset.stage, features.stage, fit.stage, predict.stage):
            state = stage(state)
            assert state.result is None
        assert MeanPool.built == 0  # neither trained nor rebuilt: the predictions are reused
        state = score.stage(state)
    finally:
        state.ctx.close()
    assert state.result is not None and state.result.summary == first.summary
    assert "this cell is finished; reusing its results" in logs
