"""Component base classes and task types: what a plugin implements and the core relies on."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:  # heavy imports stay out of `pathkit --help`
    import numpy as np
    import polars as pl
    import torch

# Task types (DESIGN.md section 4). Datasets declare one; generators and metrics the ones they handle.
TASK_REPORT = "report"
TASK_SLIDE_CLASSIFICATION = "slide-classification"
TASK_PATCH_CLASSIFICATION = "patch-classification"
TASK_SEGMENTATION = "segmentation"
TASK_MULTIPLE_CHOICE_VQA = "multiple-choice-vqa"
TASK_TYPES: tuple[str, ...] = (
    TASK_REPORT,
    TASK_SLIDE_CLASSIFICATION,
    TASK_PATCH_CLASSIFICATION,
    TASK_SEGMENTATION,
    TASK_MULTIPLE_CHOICE_VQA,
)

COMPONENT_KINDS: tuple[str, ...] = ("encoder", "generator", "dataset", "metric")


class PathkitError(Exception):
    """An error meant for the user: printed without a traceback by the CLI."""


class Component:
    """Common shape of every registered component: a registry key and a one-line summary."""

    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    @classmethod
    def describe(cls) -> dict[str, Any]:
        """JSON-friendly facts shown by `pathkit info` and `pathkit list --json`."""
        return {"name": cls.name, "kind": cls.kind, "description": cls.description}


# --------------------------------------------------------------------------- encoders


@dataclass(frozen=True)
class TileSpec:
    """The field of view an encoder expects: tiles of `tile_px` pixels at `mpp` micrometres/pixel."""

    tile_px: int
    mpp: float

    @property
    def tile_um(self) -> float:
        return self.tile_px * self.mpp

    def key(self) -> str:
        """Folder-safe name shared by every encoder with the same spec (one tiling serves all)."""
        return f"{self.tile_px}px_{self.mpp:g}mpp"


@dataclass(frozen=True)
class PretrainedWeights:
    """Where an encoder's checkpoint comes from and how its inputs are normalised."""

    hf_hub_id: str | None
    filename: str | None
    sha256: str | None = None
    license: str = ""
    citation: str = ""
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)
    input_size: int = 224
    gated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Encoder(Component):
    """A tile encoder. Subclasses set the class attributes and implement `build_model`.

    `load(device, weights_path)` returns an eval-mode torch module mapping a normalised
    batch (B, 3, H, W) to embeddings (B, embed_dim); `transform(tiles)` maps uint8
    tiles (B, H, W, 3) to that normalised batch.
    """

    kind: ClassVar[str] = "encoder"
    embed_dim: ClassVar[int] = 0
    tile_spec: ClassVar[TileSpec] = TileSpec(224, 0.5)
    precision: ClassVar[str] = "fp32"  # autocast dtype on GPU: "bf16", "fp16" or "fp32"
    weights: ClassVar[PretrainedWeights | None] = None
    is_pathology_model: ClassVar[bool] = True

    def load(self, device: str = "cpu", weights_path: str | Path | None = None) -> torch.nn.Module:
        raise NotImplementedError

    def transform(self, tiles: np.ndarray | torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        out.update(
            embed_dim=cls.embed_dim,
            tile_px=cls.tile_spec.tile_px,
            mpp=cls.tile_spec.mpp,
            precision=cls.precision,
            weights=cls.weights.as_dict() if cls.weights else None,
            is_pathology_model=cls.is_pathology_model,
        )
        return out


# --------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class Case:
    """One unit of evaluation: a slide (or a patient's slides), a patch, or a question.

    `slides` are whole-slide image paths to tile; `features` are precomputed feature
    files (pathkit safetensors, CLAM/TRIDENT/STAMP h5) used instead of tiling when present.
    """

    case_id: str
    patient_id: str
    target: Any = None
    slides: tuple[Path, ...] = ()
    features: tuple[Path, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


class Dataset(Component):
    """A benchmark dataset rooted at a folder. `cases(split)` yields `Case` records."""

    kind: ClassVar[str] = "dataset"
    task: ClassVar[str] = ""
    license: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    # Options this dataset hands to a metric, by metric name (e.g. {"crqs": {"clinical_schema":
    # "reg2025"}}); the user's own metric options win over them.
    metric_options: ClassVar[dict[str, dict[str, Any]]] = {}
    # Metrics `pathkit run` scores with when none are given, and the validation score that
    # selects the best epoch, as "metric:summary-key" (e.g. "nlg:BLEU-4"); None: validation loss.
    default_metrics: ClassVar[tuple[str, ...]] = ()
    selection_metric: ClassVar[str | None] = None
    # Metric options used only for that per-epoch selection score (e.g. {"meteor": False}).
    selection_options: ClassVar[dict[str, Any]] = {}
    # Checkpoints scored on the test split ("best" always; GOLDMARK also scores "last").
    evaluate_checkpoints: ClassVar[tuple[str, ...]] = ("best",)
    # Run facts the pipeline passes as options when asked: "encoder", "workdir".
    run_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        self.root = Path(root) if root is not None else None
        self.options = options

    def splits(self) -> dict[str, list[str]]:
        """Named, patient-disjoint case-id lists, e.g. {"train": [...], "val": [...], "test": [...]}."""
        raise NotImplementedError

    def cases(self, split: str) -> Iterator[Case]:
        raise NotImplementedError

    def validate(self) -> None:
        """Raise PathkitError naming what is missing and where; return None when usable."""

    def excluded_cases(self) -> dict[str, str]:
        """Cases left out by filters or QC, with the reason; counted in the results, never dropped silently."""
        return {}

    def make_demo(self, path: str | Path) -> Path:
        """Build a synthetic miniature under `path` and return its root (optional)."""
        raise PathkitError(f"dataset {self.name!r} has no synthetic demo")

    @classmethod
    def has_demo(cls) -> bool:
        return cls.make_demo is not Dataset.make_demo

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        out.update(task=cls.task, license=cls.license, citation=cls.citation, demo=cls.has_demo(),
                   default_metrics=list(cls.default_metrics), selection_metric=cls.selection_metric)
        return out


# --------------------------------------------------------------------------- generators


@dataclass
class GeneratorSpec:
    """What a generator needs to build its model.

    `train_targets` are the train split's targets (reports, labels) so that a generator can
    derive a vocabulary or knowledge bank from training data only; `state` carries what a
    previous build saved (see `TaskModel.export_state`) so a checkpoint rebuilds exactly.
    """

    task: str
    feature_dim: int
    hparams: dict[str, Any] = field(default_factory=dict)
    train_targets: Sequence[Any] = ()
    dataset: str | None = None
    state: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class TaskModel(Protocol):
    """What `Generator.build` returns: a torch module the core trainer drives.

    - `collate(items)` turns a list of items {"case_id", "features" (N, D) tensor,
      "coords" (N, 2) tensor, "target"} into a batch;
    - `training_step(batch)` returns the scalar loss tensor;
    - `predict(batch)` returns one JSON-serialisable prediction per case;
    - `export_state()` returns JSON-serialisable state saved next to the checkpoint.
    """

    def collate(self, items: list[dict[str, Any]]) -> Any: ...

    def training_step(self, batch: Any) -> torch.Tensor: ...

    def predict(self, batch: Any) -> list[Any]: ...

    def export_state(self) -> dict[str, Any]: ...


class Generator(Component):
    """A trainable head over tile features (report generator, MIL classifier, ...)."""

    kind: ClassVar[str] = "generator"
    tasks: ClassVar[tuple[str, ...]] = ()
    default_hparams: ClassVar[dict[str, Any]] = {}
    # Training-loop overrides of the core defaults (pathkit_core.training.TrainConfig fields).
    default_train: ClassVar[dict[str, Any]] = {}
    # Tiles kept per bag when the run does not say (PathBench: the first 10,000; None: every tile).
    default_max_tiles: ClassVar[int | None] = 10_000

    def build(self, spec: GeneratorSpec) -> TaskModel:
        raise NotImplementedError

    def hparams(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        merged = dict(self.default_hparams)
        unknown = sorted(set(overrides or {}) - set(merged))
        if unknown:
            raise PathkitError(
                f"generator {self.name!r} has no hyperparameter(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(merged))}"
            )
        merged.update(overrides or {})
        return merged

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        out.update(tasks=list(cls.tasks), default_hparams=dict(cls.default_hparams),
                   default_train=dict(cls.default_train))
        return out


# --------------------------------------------------------------------------- metrics


@dataclass
class MetricResult:
    """`summary`: named floats; `per_case`: one row per case with the evidence behind each score."""

    summary: dict[str, float]
    per_case: pl.DataFrame | None = None


class Metric(Component):
    """A scorer. `compute` takes aligned lists of predictions and references."""

    kind: ClassVar[str] = "metric"
    tasks: ClassVar[tuple[str, ...]] = ()
    higher_is_better: ClassVar[bool] = True
    # Summary keys shown first in tables and leaderboards, in this order (the paper's columns).
    headline_scores: ClassVar[tuple[str, ...]] = ()
    # Summary keys where lower is better (error rates, calibration error), against `higher_is_better`.
    lower_is_better: ClassVar[tuple[str, ...]] = ()
    # (lowest, highest) value of bounded summary keys, so that scores on different scales can be
    # read apart (CRQS in [-0.857, 1] beside CFC in [0, 1]); shown by `pathkit info`.
    score_ranges: ClassVar[dict[str, tuple[float, float]]] = {}
    # Hugging Face `evaluate` feature types of predictions/references; None: plain values (see
    # pathkit_core.evaluation.hf_evaluate).
    evaluate_features: ClassVar[Any] = None

    def compute(
        self,
        predictions: Sequence[Any],
        references: Sequence[Any],
        *,
        ids: Sequence[str] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> MetricResult:
        raise NotImplementedError

    @classmethod
    def describe(cls) -> dict[str, Any]:
        out = super().describe()
        out.update(tasks=list(cls.tasks), higher_is_better=cls.higher_is_better,
                   headline_scores=list(cls.headline_scores), lower_is_better=list(cls.lower_is_better),
                   score_ranges={k: list(v) for k, v in cls.score_ranges.items()})
        return out

    @classmethod
    def direction(cls, key: str) -> str:
        """"higher" or "lower": which way summary score `key` is better (its CI bounds follow it)."""
        base = key.removesuffix("_ci_low").removesuffix("_ci_high")
        if base in cls.lower_is_better:
            return "lower"
        return "higher" if cls.higher_is_better else "lower"


COMPONENT_BASES: dict[str, type[Component]] = {
    "encoder": Encoder,
    "generator": Generator,
    "dataset": Dataset,
    "metric": Metric,
}
