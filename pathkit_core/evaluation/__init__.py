"""Scoring: prediction/reference files, the metric runner, confidence intervals, leaderboards."""
