"""cost.json: the wall time of each stage, the tiles of the run's cases and the features stage's
tiles per second, the peak memory and the device; read back as {} when absent or damaged."""

from __future__ import annotations

import json

import pytest

from pathkit_core.run.cost import read_cost, write_cost


def test_cost_record_adds_up(tmp_path):
    (tmp_path / "features_qc.csv").write_text("case_id,split,input,n_tiles,status\na,train,features,120,ok\n"
                                              "b,test,features,80,ok\nc,test,slides,,skipped\n")
    stages = {"dataset": 0.5, "features": 4.0, "fit": 2.0, "predict": 1.0, "score": 0.25, "report": 0.25}
    write_cost(tmp_path, stages, cpu_only=True, resumed=["dataset"])
    record = json.loads((tmp_path / "cost.json").read_text())
    assert record["wall_seconds"] == pytest.approx(8.0) and record["stages"] == stages
    assert record["n_tiles"] == 200 and record["tiles_per_second"] == pytest.approx(50.0)
    assert record["device"].startswith("CPU: ") and record["peak_host_memory_mb"] > 10
    assert record["resumed_stages"] == ["dataset"]
    assert read_cost(tmp_path) == record


def test_missing_or_damaged_cost_reads_as_nothing(tmp_path):
    assert read_cost(tmp_path) == {} and read_cost(None) == {}
    (tmp_path / "cost.json").write_text("{not json")
    assert read_cost(tmp_path) == {}
    (tmp_path / "cost.json").write_text(json.dumps({"format": "something-else"}))
    assert read_cost(tmp_path) == {}
