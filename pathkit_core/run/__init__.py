"""`pathkit run` as stage modules over one run state (`state.RunState`): dataset, features, fit,
predict, score, report, each `stage(state) -> state`; `spec` and `context` hold the settings and
the run folder; `pipeline` runs the stages in data-flow order (docs/user-guide.md)."""

from pathkit_core.run.pipeline import run_pipeline
from pathkit_core.run.spec import RunSpec, load_run_config
from pathkit_core.run.state import RunResult

__all__ = ["RunResult", "RunSpec", "load_run_config", "run_pipeline"]
