"""Scoring: the metric runner, score rows as every table shows them, and what a result rests on (provenance)."""
