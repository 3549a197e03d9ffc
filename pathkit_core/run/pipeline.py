"""`pathkit run`: dataset -> features -> fit -> predict -> score -> report, resumably (docs/user-guide.md).

Each stage is `stage(state) -> state` over one `RunState`, entered once, in data-flow order; a
stage that finds the run finished (or a shard's work done) sets the state's result and the
later stages do not run.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pathkit_core.run import dataset, features, fit, predict, report, score
from pathkit_core.run.context import RunContext
from pathkit_core.run.spec import RunSpec
from pathkit_core.run.state import RunResult, RunState

STAGES = (dataset.stage, features.stage, fit.stage, predict.stage, score.stage, report.stage)


def run_pipeline(spec: RunSpec, *, log: Callable[[str], None] = print) -> RunResult:
    """Run (or resume) one dataset x encoder x generator cell and return its scores."""
    from pathkit_core.run import cost
    from pathkit_core.shard import current_shard

    state = RunState(RunContext(spec, log), current_shard(spec.shard), time.perf_counter())
    cost.start()
    seconds: dict[str, float] = {}  # wall time per stage that ran (cost.json)
    try:
        for stage in STAGES:
            began = time.perf_counter()
            state = stage(state)
            seconds[stage.__module__.rsplit(".", 1)[-1]] = time.perf_counter() - began
            if state.result is not None:
                if "report" in seconds and "score" not in state.result.resumed_stages:  # its stages ran
                    try:
                        cost.write_cost(state.result.run_dir, seconds, cpu_only=bool(spec.cpu),
                                        resumed=list(state.result.resumed_stages))
                    except OSError as exc:  # the results are written; a cost record must not fail the run
                        state.ctx.log(f"[yellow]cost.json could not be written ({exc})[/]")
                return state.result
    finally:
        state.ctx.close()
    raise RuntimeError("the report stage sets the run's result")
