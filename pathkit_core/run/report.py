"""Stage 6, report: provenance.json (how the result was produced) and the run's report.html."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from pathkit_core.run.spec import RunSpec
from pathkit_core.run.state import RunState
from pathkit_core.workspace import atomic_write_json, collect_provenance, json_default


def report_stage(ctx: Any, spec: RunSpec, inputs: dict[str, Any], seconds: float) -> None:
    provenance = collect_provenance(
        config=json.loads(json.dumps(asdict(spec), default=json_default)),  # paths as text, tuples as lists
        seeds={"seed": spec.seed},
        inputs=inputs,
        plugin_versions=ctx.registry.distributions(),
    )
    provenance["wall_seconds"] = seconds
    provenance["resumed_stages"] = ctx.resumed
    atomic_write_json(ctx.run_dir / "provenance.json", provenance)
    try:
        from pathkit_core.report.html import write_run_report
    except ImportError:  # the report needs nothing beyond the core, but a trimmed install may lack it
        return
    try:
        write_run_report(ctx.run_dir)
    except Exception as exc:  # noqa: BLE001 - the results are written; a report bug must not fail the run
        ctx.log(f"[yellow]report.html could not be written ({type(exc).__name__}: {exc}); the results are in "
                f"{ctx.run_dir}; rebuild it with `pathkit report {ctx.run_dir}`[/]")


def stage(state: RunState) -> RunState:
    """provenance.json and report.html; the run's result."""
    import time

    from pathkit_core.run.state import RunResult

    state.needs("dataset", "features", "scores")
    ctx, spec, ds, feats = state.ctx, state.spec, state.dataset, state.features
    report_stage(ctx, spec, {"dataset_root": str(ds.dataset.root), "split_hash": ds.split_hash,
                             "data_key": ds.data_key, "feature_files": len(feats.inputs),
                             "stage_keys": dict(state.keys), **({"dataset": ds.summary} if ds.summary else {})},
                 time.perf_counter() - state.started)
    scores = state.scores
    state.result = RunResult(ctx.run_dir, scores["summary"], scores["baselines"], feats.skipped, ctx.resumed,
                             scores["checkpoints"], ds.excluded)
    return state
