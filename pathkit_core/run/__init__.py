"""`pathkit run` as stage modules over one run state (`pipeline` orders them; docs/user-guide.md).

The package's names are imported when first used (PEP 562): a plugin importing one helper of a
stage module (`pathkit_core.run.dataset.split_statement`) does not import the whole pipeline,
which `pathkit --help` would otherwise pay for at every start."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathkit_core.run.pipeline import run_pipeline
    from pathkit_core.run.spec import RunSpec, load_run_config
    from pathkit_core.run.state import RunResult

_HOME = {"run_pipeline": "pathkit_core.run.pipeline", "RunSpec": "pathkit_core.run.spec",
         "load_run_config": "pathkit_core.run.spec", "RunResult": "pathkit_core.run.state"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["RunResult", "RunSpec", "load_run_config", "run_pipeline"]
