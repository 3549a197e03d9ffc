"""`demo-fewshot` end to end: SimpleShot and the logistic probe over the same stored episodes, the
curve rising with k, each head ahead of the majority-class baseline on the same test cases (paired,
p < 0.01), and the report's curve section."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_demo_fewshot_curve_beats_the_majority_class_with_the_same_episodes_for_both_heads(cli, tmp_path):
    import polars as pl
    import torch

    from pathkit_bench.stats import paired_bootstrap

    torch.set_num_threads(2)
    folders = {}
    for generator in ("simpleshot", "few-shot-logistic"):
        result = cli("run", "--dataset", "demo-fewshot", "--encoder", "tiny-vit", "--generator", generator,
                     "--workdir", tmp_path / "ws", "--cpu")
        assert result.exit_code == 0, result.stdout + result.stderr
        folders[generator] = next((tmp_path / "ws" / "runs" / "demo-fewshot" / "tiny-vit" / generator).iterdir())
    episodes = [json.loads((f / "episodes.json").read_text()) for f in folders.values()]
    assert episodes[0] == episodes[1]  # the same support sets, whatever the head
    assert episodes[0]["ks"] == [1, 2, 4, 8, 16, 32] and len(episodes[0]["support"]["32"]) == 100
    for generator, run_dir in folders.items():
        metrics = json.loads((run_dir / "metrics.json").read_text())
        model, base = metrics["metrics"]["few-shot"], metrics["baselines"]["majority-class"]["few-shot"]
        assert model["acc@32shot"] > model["acc@1shot"] > 0.5, (generator, model)
        assert model["acc@1shot_episode_low"] < model["acc@1shot"] < model["acc@1shot_episode_high"]
        assert base["acc@4shot"] == pytest.approx(1 / 3)
        table = pl.read_parquet(run_dir / "per_case.parquet")
        majority = (table["target"].to_numpy() == 0).astype(float)  # the baseline predicts class 0 everywhere
        for k in (1, 4, 32):
            boot = paired_bootstrap(table[f"acc@{k}shot"].to_numpy(), majority, n_resamples=2000, seed=0)
            assert boot.difference > 0 and boot.p_value < 0.01, (generator, k, boot)
        assert 'id="section-few-shot"' in (run_dir / "report.html").read_text()
