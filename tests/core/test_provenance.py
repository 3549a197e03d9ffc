"""Provenance banners (pathkit_core.evaluation.provenance): synthetic cases and random encoder
weights are named in metrics.json, the terminal and the reports."""

from __future__ import annotations

from pathkit_core.contracts import Dataset
from pathkit_core.evaluation.provenance import (
    SYNTHETIC_MARKER,
    banners,
    mark_synthetic,
    run_provenance,
    synthetic_reason,
    weights_kind,
)


class _Real(Dataset):
    name = "real-ds"


class _AlwaysSynthetic(Dataset):
    name = "made-up"
    synthetic = True


def test_a_demo_root_is_marked_and_recognised(tmp_path):
    real = _Real(tmp_path)
    assert synthetic_reason(real) == ""
    mark_synthetic(tmp_path, "real-ds")
    assert (tmp_path / SYNTHETIC_MARKER).is_file()
    assert synthetic_reason(real) == "pathkit built them as the synthetic demo of real-ds"
    assert synthetic_reason(_AlwaysSynthetic(None)) == "dataset 'made-up' is synthetic by design"
    assert synthetic_reason(_Real(None), {"synthetic": "simulated slides"}) == "simulated slides"
    (tmp_path / SYNTHETIC_MARKER).write_text("{not json")
    assert "marks it as a synthetic demo" in synthetic_reason(real)


def test_weights_kind_reads_the_feature_files_records():
    assert weights_kind(["random-init:seed=0"]) == "random"
    assert weights_kind(["ab" * 32, "random-init:seed=1"]) == "random"  # any random file taints the run
    assert weights_kind(["ab" * 32]) == "checkpoint"
    assert weights_kind(["built-in"]) == "built-in" and weights_kind([]) == "unknown"


def test_run_provenance_banners(tmp_path):
    mark_synthetic(tmp_path, "real-ds")
    found = run_provenance(_Real(tmp_path), "tiny-vit", ["random-init:seed=0", "random-init:seed=0"])
    assert found["synthetic_data"] and found["encoder_weights"] == "random"
    assert found["weights"] == ["random-init:seed=0"]
    assert [b.split(":")[0] for b in found["banners"]] == ["SYNTHETIC DATA", "RANDOM ENCODER WEIGHTS"]
    assert "randomly initialised (seed=0)" in found["banners"][1]
    assert banners({"provenance": found}) == found["banners"]
    real = run_provenance(_Real(tmp_path / "elsewhere"), "uni", ["cd" * 32])
    assert real["banners"] == [] and not real["synthetic_data"] and real["encoder_weights"] == "checkpoint"
    assert banners({}) == [] and banners(None) == []
