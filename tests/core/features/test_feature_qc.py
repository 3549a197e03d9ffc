"""QC statistics against hand-computed values, and the fail-closed verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pathkit_core.features import qc as QC


def test_statistics_match_hand_computation():
    # Per-dimension values {1,3,1,3} and {0,0,2,2}: population variance 1 and 1 -> mean 1.
    feats = torch.tensor([[1.0, 0.0], [3.0, 0.0], [1.0, 2.0], [3.0, 2.0]])
    r = QC.compute_qc(feats, expected_tiles=4)
    assert r.status == "ok" and r.failures == []
    assert r.mean_variance == pytest.approx(1.0)
    norms = [1.0, 3.0, math.sqrt(5), math.sqrt(13)]
    assert r.l2_norm_mean == pytest.approx(sum(norms) / 4)
    assert r.l2_norm_std == pytest.approx(float(np.std(norms)))
    assert (r.l2_norm_min, r.l2_norm_max) == (pytest.approx(1.0), pytest.approx(math.sqrt(13)))
    assert r.nan_fraction == 0 and r.inf_fraction == 0 and r.zero_vector_fraction == 0
    # cos([1,0],[3,0]) = 1 > 0.999: one near-duplicate pair among 6.
    assert r.near_duplicate_fraction == pytest.approx(1 / 6) and r.near_duplicate_sample == 4


def test_chunked_variance_equals_numpy_over_many_rows():
    rng = np.random.default_rng(3)
    feats = rng.normal(loc=5.0, scale=rng.uniform(0.1, 3.0, size=24), size=(10_000, 24)).astype(np.float32)
    r = QC.compute_qc(torch.from_numpy(feats).half())
    expected = feats.astype(np.float16).astype(np.float64).var(axis=0).mean()
    assert r.mean_variance == pytest.approx(expected, rel=1e-9)


def test_constant_features_are_degenerate_and_fail():
    r = QC.compute_qc(torch.full((50, 8), 0.25))
    assert r.status == "failed"
    assert "degenerate" in r.reason and r.mean_variance == pytest.approx(0.0)
    assert r.near_duplicate_fraction == pytest.approx(1.0)
    assert any("near-duplicates" in f for f in r.flags)


def test_variance_just_above_the_threshold_passes():
    # Two values +-d: population variance d^2 per dimension.
    d = 2e-3  # variance 4e-6 > 1e-6
    feats = torch.tensor([[1.0 + d], [1.0 - d]] * 10, dtype=torch.float64)
    assert QC.compute_qc(feats).status == "ok"
    d = 5e-4  # variance 2.5e-7 <= 1e-6
    feats = torch.tensor([[1.0 + d], [1.0 - d]] * 10, dtype=torch.float64)
    assert QC.compute_qc(feats).status == "failed"


def test_nan_inf_zero_vectors_and_row_count():
    feats = torch.randn(10, 4)
    feats[0, 1] = float("nan")
    feats[1, 2] = float("inf")
    feats[2] = 0
    r = QC.compute_qc(feats, expected_tiles=11)
    assert r.status == "failed"
    assert r.nan_fraction == pytest.approx(1 / 40) and r.inf_fraction == pytest.approx(1 / 40)
    assert r.zero_vector_fraction == pytest.approx(1 / 8)  # among the 8 finite rows
    reasons = r.reason
    assert "row count 10 != 11" in reasons and "NaN" in reasons and "Inf" in reasons
    assert any("zero vector" in f for f in r.flags)
    assert r.as_dict()["status"] == "failed"


def test_empty_and_single_tile():
    assert QC.compute_qc(torch.zeros(0, 4)).reason == "no tiles"
    single = QC.compute_qc(torch.ones(1, 4))
    assert single.status == "ok" and any("single tile" in f for f in single.flags)


def test_near_duplicate_sample_is_spread_over_the_slide():
    # The first half of the slide repeats one vector; the second half is random. GOLDMARK's
    # first-64-rows sample would call the whole slide duplicated; the spread sample does not.
    g = torch.Generator().manual_seed(0)
    feats = torch.cat([torch.ones(500, 16), torch.randn(500, 16, generator=g)])
    r = QC.compute_qc(feats, sample_size=64)
    assert 0.2 < r.near_duplicate_fraction < 0.3  # ~ (32 choose 2) / (64 choose 2) = 0.246
