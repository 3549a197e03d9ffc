"""`pathkit run` as stage modules: spec, context, dataset, features, items, fit, predict, score,
report, and the orchestration in `pipeline` that reads as DESIGN.md section 5's data flow."""

from pathkit_core.run.pipeline import RunResult, run_pipeline
from pathkit_core.run.spec import RunSpec, load_run_config

__all__ = ["RunResult", "RunSpec", "load_run_config", "run_pipeline"]
