"""The run state: what one `pathkit run` knows, filled in stage by stage (`pathkit_core.run.pipeline`):
a stage reads what earlier stages put in the state and adds its own part."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import Case, Dataset, Generator, GeneratorSpec

if TYPE_CHECKING:
    from pathkit_core.contracts import RunFacts
    from pathkit_core.run.context import RunContext
    from pathkit_core.shard import Shard


@dataclass
class DatasetStage:
    """The opened dataset, its cases per split, the split's hash, the cases it left out and how
    the split was made (`Dataset.split_facts()`: the user's, the benchmark's, or drawn)."""

    dataset: Dataset
    cases: dict[str, list[Case]]
    split_hash: str
    # The content key of the data (`run.identity.dataset_identity`): names the run folder.
    data_key: str = ""
    excluded: dict[str, str] = field(default_factory=dict)
    split: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)  # Dataset.summary(): checksums, protocol, warnings

    @property
    def ids(self) -> dict[str, list[str]]:
        return {name: [c.case_id for c in cases] for name, cases in self.cases.items()}


@dataclass
class FeatureStage:
    """Usable inputs by case id (feature-file tuples or image-feature rows) and why others have none."""

    inputs: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass
class FitPlan:
    """What the fit and predict stages build the model from, and where its checkpoints are."""

    generator: Generator
    gspec: GeneratorSpec
    train_cfg: Any  # TrainConfig
    checkpoint_dir: Path | None  # None: a generator that needs no fit (no checkpoints)
    selection: str | None
    key_facts: dict[str, Any]
    # The fit key the checkpoints must have been written under (None: frozen or no fit).
    stage_key: str | None = None


@dataclass
class Evaluated:
    """One checkpoint's test predictions (output form) and the epoch it was saved at."""

    predictions: dict[str, Any]
    epoch: int | None = None


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, dict[str, float]]
    # scores of each of the task's baselines ("most-frequent-report", "majority-class", ...)
    baselines: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    skipped_cases: dict[str, str] = field(default_factory=dict)
    resumed_stages: list[str] = field(default_factory=list)
    # summaries of every evaluated checkpoint ({"best": {...}, "last": {...}}), with their epochs
    checkpoints: dict[str, Any] = field(default_factory=dict)
    excluded_cases: dict[str, str] = field(default_factory=dict)


@dataclass
class RunState:
    """One run, as far as it has gone. `keys` holds each finished stage's cache key: each covers
    the settings, code versions and input contents its stage reads."""

    ctx: RunContext
    shard: Shard
    started: float
    # dataset: the opened dataset, its cases per split, its content key
    dataset: DatasetStage | None = None
    # features: every case's model input, the run facts a task sees, the items per split
    features: FeatureStage | None = None
    facts: RunFacts | None = None
    items: dict[str, Any] = field(default_factory=dict)
    train_targets: list[Any] = field(default_factory=list)
    # fit: what the model is built from and where its checkpoints are
    plan: FitPlan | None = None
    # predict: the checkpoints evaluated and their test predictions
    checkpoints: list[str] = field(default_factory=list)
    evaluated: dict[str, Evaluated] = field(default_factory=dict)
    # the metrics (the dataset stage names them and starts what they wait for) and the scores
    metrics: list[str] = field(default_factory=list)
    scores: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    result: RunResult | None = None

    @property
    def spec(self) -> Any:
        return self.ctx.spec

    def inputs_of(self, *splits: str) -> dict[str, Any]:
        """The usable inputs of the cases of `splits`, by case id."""
        inputs = self.features.inputs
        return {c.case_id: inputs[c.case_id] for s in splits for c in self.dataset.cases[s] if c.case_id in inputs}

    def needs(self, *parts: str) -> None:
        """Fail loudly when a stage runs before the stages it reads (a wiring error, not the user's)."""
        missing = [p for p in parts if getattr(self, p) in (None, {}, [])]
        if missing:
            raise RuntimeError(f"run stage order: {', '.join(missing)} not set yet")
