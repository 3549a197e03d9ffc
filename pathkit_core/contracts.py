"""Component base classes and task types: what a plugin implements and the core relies on."""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
import string
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:  # heavy imports stay out of `pathkit --help`
    import numpy as np
    import polars as pl
    import torch

# What a case's model input comes from (`Case.input_kind`; docs/plugin-authors.md, "Datasets").
INPUT_SLIDES = "slides"
INPUT_FEATURES = "features"
INPUT_IMAGES = "images"


class PathkitError(Exception):
    """An error meant for the user: printed without a traceback by the CLI."""


def brief_list(items: Sequence[Any], limit: int = 20, *, sep: str = ", ") -> str:
    """The first `limit` of `items` and how many more: an error about a million-row table stays
    one readable line."""
    head = sep.join(str(i) for i in items[:limit])
    return head + (f"{sep}... ({len(items) - limit} more)" if len(items) > limit else "")


def repeats_text(places: dict[Any, Sequence[str]], limit: int = 20, per_value: int = 5) -> str:
    """`a (row 2, row 9); b (row 4, row 7, ... (998 more))`: each repeated value with the first
    `per_value` places it was seen, for the first `limit` values."""
    return brief_list([f"{v} ({brief_list(list(p), per_value)})" for v, p in places.items()], limit, sep="; ")


class Component:
    """Common shape of every registered component: a registry key and a one-line summary."""

    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    # The `describe()` fields `pathkit list <kind>s` shows as columns, besides name and description.
    list_columns: ClassVar[tuple[str, ...]] = ()

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

    @property
    def magnification(self) -> str:
        """The objective magnification this resolution is conventionally called (10 / mpp: 0.5
        um/px is "20x", 0.25 is "40x"), as papers state their tile settings."""
        return f"{10.0 / self.mpp:g}x"


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
    """A tile encoder: the class attributes, `load` and `transform` are documented in
    docs/plugin-authors.md, "Encoders"."""

    kind: ClassVar[str] = "encoder"
    list_columns: ClassVar[tuple[str, ...]] = ("embed_dim", "tile_px", "mpp", "precision")
    embed_dim: ClassVar[int] = 0
    tile_spec: ClassVar[TileSpec] = TileSpec(224, 0.5)
    precision: ClassVar[str] = "fp32"
    weights: ClassVar[PretrainedWeights | None] = None
    is_pathology_model: ClassVar[bool] = True
    joint_space: ClassVar[str | None] = None
    interpolation: ClassVar[str] = "bicubic"
    resize_px: ClassVar[int | None] = None
    crop_px: ClassVar[int | None] = None
    transform_on_device: ClassVar[bool] = False
    random_init_seed: ClassVar[int] = 0

    @property
    def feature_dim(self) -> int:
        """Width of this instance's features (an architecture override may change `embed_dim`)."""
        return self.embed_dim

    def architecture_label(self) -> str:
        """The architecture as written into feature files and error messages."""
        return self.name

    def ships_checkpoint(self) -> bool:
        """False when `load` without a weights path initialises randomly from `random_init_seed`."""
        return True

    def load(self, device: str = "cpu", weights_path: str | Path | None = None) -> torch.nn.Module:
        raise NotImplementedError

    def transform(self, tiles: np.ndarray | torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {**super().describe(), "embed_dim": cls.embed_dim, "tile_px": cls.tile_spec.tile_px,
                "mpp": cls.tile_spec.mpp, "precision": cls.precision,
                "weights": cls.weights.as_dict() if cls.weights else None,
                "is_pathology_model": cls.is_pathology_model, "joint_space": cls.joint_space}


class SlideEncoder(Component):
    """A slide encoder: one slide's patch features (N, D) and level-0 coordinates (N, 2) in, one
    embedding out (docs/plugin-authors.md, "Slide encoders")."""

    kind: ClassVar[str] = "slide-encoder"
    list_columns: ClassVar[tuple[str, ...]] = ("patch_encoder", "magnification", "tile_px", "embed_dim")
    patch_encoder: ClassVar[str | None] = None
    patch_dim: ClassVar[int | None] = None
    embed_dim: ClassVar[int] = 0
    tile_spec: ClassVar[TileSpec | None] = None
    weights: ClassVar[PretrainedWeights | None] = None
    parameters: ClassVar[int] = 0
    precision: ClassVar[str] = "fp32"

    def feature_problem(self, encoder: str, feature_dim: int, tile_px: int | None = None,
                        mpp: float | None = None) -> str | None:
        """Why features of patch encoder `encoder` cannot feed this slide encoder (None: they can)."""
        if self.patch_encoder is not None and encoder != self.patch_encoder:
            return (f"slide encoder {self.name!r} reads {self.patch_encoder!r} patch features, "
                    f"not {encoder!r} ones (extract with --encoder {self.patch_encoder})")
        if self.patch_dim is not None and feature_dim != self.patch_dim:
            return f"slide encoder {self.name!r} reads {self.patch_dim}-d patch features, these are {feature_dim}-d"
        spec = self.tile_spec
        if spec is not None and tile_px is not None and mpp is not None and (
                tile_px != spec.tile_px or abs(mpp - spec.mpp) > 1e-6):
            return (f"slide encoder {self.name!r} was trained on {spec.tile_px} px tiles at {spec.mpp:g} mpp "
                    f"({spec.magnification}); these features are of {tile_px} px tiles at {mpp:g} mpp "
                    f"(tile with --tile-px {spec.tile_px} --mpp {spec.mpp:g})")
        return None

    def load(self, device: str = "cpu", weights_path: str | Path | None = None) -> torch.nn.Module:
        raise NotImplementedError

    def identity(self) -> str:
        """What the slide embeddings depend on besides the patch features: a part of their store key."""
        return self.name

    def embed(self, model: torch.nn.Module, features: torch.Tensor, coords: torch.Tensor | None,
              tile_px_level0: float | None = None) -> torch.Tensor:
        """One slide's float32 embedding (embed_dim,) from its (N, D) features and (N, 2) coordinates."""
        import torch

        c = None if coords is None else coords.to(torch.float32).unsqueeze(0)
        with torch.inference_mode():
            return model(features.to(torch.float32).unsqueeze(0), c)[0].float()

    @classmethod
    def describe(cls) -> dict[str, Any]:
        spec = cls.tile_spec
        return {**super().describe(), "patch_encoder": cls.patch_encoder or "any", "patch_dim": cls.patch_dim,
                "embed_dim": cls.embed_dim, "tile_px": spec.tile_px if spec else "any",
                "mpp": spec.mpp if spec else "any", "magnification": spec.magnification if spec else "any",
                "parameters": cls.parameters, "precision": cls.precision,
                "weights": cls.weights.as_dict() if cls.weights else None}


# --------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class Case:
    """One unit of evaluation: a slide (or a patient's slides), a patch, or a question; each field
    is documented in docs/plugin-authors.md, "Datasets"."""

    case_id: str
    patient_id: str
    target: Any = None
    slides: tuple[Path, ...] = ()
    features: tuple[Path, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    images: tuple[str | Path, ...] = ()

    @property
    def input_kind(self) -> str:
        """What this case's model input comes from: precomputed features, images, or slides."""
        if self.features:
            return INPUT_FEATURES
        if self.images:
            return INPUT_IMAGES
        return INPUT_SLIDES


# Slide ids name files (`<id>.parquet`, `.<id>.safetensors.lock`, `<id>.attention.parquet`), so they
# are short enough that the longest suffix pathkit adds keeps the name within a folder entry's 255 bytes.
_SLIDE_ID_CHARS = frozenset(string.ascii_letters + string.digits + "._-+ ")
ID_MAX_BYTES = 200  # case and slide ids; a folder entry holds 255


def case_id_problem(case_id: Any) -> str | None:
    """Why `case_id` cannot name a case (None when it can): ids name files in the workspace
    (predictions, masks, attention tables), so they are plain names, never paths."""
    if not isinstance(case_id, str) or not case_id.strip():
        return f"case id {case_id!r} is not a non-empty string"
    if case_id in (".", "..") or any(ch in case_id for ch in ("/", "\\", "\x00")):
        return f"case id {case_id!r} must be a plain name (no '/', '\\', NUL, '.' or '..')"
    size = len(case_id.encode("utf-8", "surrogateescape"))
    if size > ID_MAX_BYTES:  # it names files with suffixes added (`<id>.attention.parquet`)
        return f"case id {case_id[:40]!r}... is {size} bytes long; an id is at most {ID_MAX_BYTES}"
    return None


def slide_id_problem(slide_id: Any) -> str | None:
    """Why `slide_id` cannot name a slide's files (None when it can). One rule for every stage
    that names files by slide id (`pathkit tile`, `pathkit extract`, feature stores, attention
    tables), so a slide one stage accepts is never refused by the next."""
    if (not isinstance(slide_id, str) or not slide_id or slide_id[0] in "._-+ "
            or not set(slide_id) <= _SLIDE_ID_CHARS):
        return (f"slide id {slide_id!r} cannot be used as a file name (letters, digits, '.', '_', '-', '+', "
                "spaces, starting with a letter or digit; no path separators)")
    if len(slide_id) > ID_MAX_BYTES:  # ASCII: one byte a character
        return f"slide id {slide_id[:40]!r}... is {len(slide_id)} bytes long; an id is at most {ID_MAX_BYTES}"
    return None


def regular_file_problem(path: str | Path) -> tuple[str, str] | None:
    """(code, message) when `path` is not a readable regular file, else None.

    Codes: not-found, symlink-loop, directory, not-a-file (named pipe, socket, device),
    unreadable. Opening a named pipe blocks until a writer appears, so this looks first.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "not-found", "does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink-loop", "is a symbolic link loop (it resolves to itself)"
        return "unreadable", f"cannot be read: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        return "directory", "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a named pipe" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device")
        return "not-a-file", f"is not a regular file ({kind})"
    return None


_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


@dataclass(frozen=True)
class DatasetOption:
    """One option of a dataset or a metric: name, type, default and meaning (the types are listed in
    docs/plugin-authors.md, "Datasets", "Options")."""

    name: str
    type: str = "str"
    default: Any = None
    help: str = ""

    def parse(self, value: Any, dataset: str, *, owner: str = "dataset") -> Any:
        """`value` as this option's type; an error naming the `owner` ("dataset", "metric"), its
        name, the option and the type."""
        if value is None:
            return None
        where = f"{owner} {dataset!r}: option {self.name}={value!r}"
        kind = self.type
        if kind == "any":
            return value
        if kind == "file":
            if isinstance(value, str | Path):
                problem = regular_file_problem(value)
                if problem is not None:
                    raise PathkitError(f"{where}: {value} {problem[1]}")
            return value
        if kind == "bool":
            return _parse_bool(value, where)
        if kind in ("int", "float"):
            return _parse_number(value, kind, where)
        if "|" in kind:
            choices = kind.split("|")
            if str(value) not in choices:
                raise PathkitError(f"{where}: choose one of {', '.join(choices)}")
        return str(value)


def _parse_bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise PathkitError(f"{where} is not true or false")


def _parse_number(value: Any, kind: str, where: str) -> int | float:
    if isinstance(value, bool):
        raise PathkitError(f"{where} is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PathkitError(f"{where} is not a number") from None
    if kind == "int":
        if number != int(number):
            raise PathkitError(f"{where} is not a whole number")
        return int(number)
    return number


class Dataset(Component):
    """A benchmark dataset rooted at a folder; `cases(split)` yields `Case` records. Its class
    attributes and methods are documented in docs/plugin-authors.md, "Datasets"."""

    kind: ClassVar[str] = "dataset"
    list_columns: ClassVar[tuple[str, ...]] = ("task", "demo")
    task: ClassVar[str] = ""
    license: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    metric_options: ClassVar[dict[str, dict[str, Any]]] = {}
    default_metrics: ClassVar[tuple[str, ...]] = ()
    selection_metric: ClassVar[str | None] = None
    selection_options: ClassVar[dict[str, Any]] = {}
    evaluate_checkpoints: ClassVar[tuple[str, ...]] = ("best",)
    run_options: ClassVar[tuple[str, ...]] = ()
    tiling_options: ClassVar[dict[str, Any]] = {}
    demo_run: ClassVar[dict[str, Any] | None] = None
    option_table: ClassVar[tuple[DatasetOption, ...]] = ()
    layout: ClassVar[str] = ""
    synthetic: ClassVar[bool] = False
    report_cleaning: ClassVar[str | None] = None
    max_report_tokens: ClassVar[int | None] = None
    clinical_schema: ClassVar[Any] = None

    def __init__(self, root: str | Path | None = None, **options: Any) -> None:
        self.root = Path(root) if root is not None else None
        self.options = self.resolve_options(options)

    @classmethod
    def resolve_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """Every option of `option_table`, typed or defaulted, plus the run facts of `run_options`."""
        if not cls.option_table:
            return dict(options)
        table = {o.name: o for o in cls.option_table}
        unknown = sorted(set(options) - set(table) - set(cls.run_options))
        if unknown == ["view"]:
            raise PathkitError(f"dataset {cls.name!r} has no views (`{cls.name}:{options['view']}`); "
                               f"use --dataset {cls.name}")
        if unknown:
            raise PathkitError(f"dataset {cls.name!r} has no option(s) {', '.join(unknown)}; known: "
                               f"{', '.join(sorted(table))} (`pathkit info {cls.name}` says what each does)")
        out = {name: option.default for name, option in table.items()}
        for name, value in options.items():
            out[name] = table[name].parse(value, cls.name) if name in table else value
        return out

    def split_facts(self) -> dict[str, Any]:
        """How the split was made: "source" (given, published or drawn) and "description"."""
        return {}

    def class_names(self) -> tuple[str, ...]:
        """The ordered class names of a classification dataset (empty for tasks without classes)."""
        return ()

    @property
    def task_defaults(self) -> dict[str, Any]:
        """Settings of its task's protocol this dataset fixes (the user's dataset options win)."""
        return {}

    @property
    def train_overrides(self) -> dict[str, Any]:
        """TrainConfig fields this dataset's protocol fixes, over the generator's, under the run's."""
        return {}

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

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts about the opened data (checksums, counts, "warnings") for metrics.json."""
        return {}

    def make_demo(self, path: str | Path) -> Path:
        """Build a synthetic miniature under `path` and return its root (optional)."""
        raise PathkitError(f"dataset {self.name!r} has no synthetic demo")

    @classmethod
    def has_demo(cls) -> bool:
        return cls.make_demo is not Dataset.make_demo

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {**super().describe(), "task": cls.task, "license": cls.license, "citation": cls.citation,
                "demo": cls.has_demo(), "default_metrics": list(cls.default_metrics),
                "selection_metric": cls.selection_metric, "demo_run": dict(cls.demo_run) if cls.demo_run else None,
                "layout": cls.layout, "options": [dataclasses.asdict(o) for o in cls.option_table],
                "run_options": list(cls.run_options)}


# --------------------------------------------------------------------------- generators


@dataclass
class GeneratorSpec:
    """What a generator needs to build its model (each field: docs/plugin-authors.md, "Generators")."""

    task: str
    feature_dim: int
    hparams: dict[str, Any] = field(default_factory=dict)
    train_targets: Sequence[Any] = ()
    dataset: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    class_names: tuple[str, ...] = ()
    train_items: Sequence[dict[str, Any]] = ()
    val_items: Sequence[dict[str, Any]] = ()
    report_cleaning: str | None = None
    max_report_tokens: int | None = None


@runtime_checkable
class ItemsWithTargets(Protocol):
    """Model items that also hold every item's target by case id, read without building the items."""

    @property
    def targets(self) -> Mapping[str, Any]: ...


@runtime_checkable
class ItemsWithFeatureMatrix(Protocol):
    """Whole-image model items that give every item's feature vector as one (N, D) tensor."""

    def feature_matrix(self) -> Any: ...


@runtime_checkable
class ItemsWithBagSpecs(Protocol):
    """Model items of slides (feature bags) that expose the `BagSpec` of each case (`specs`)."""

    specs: Sequence[Any]


@runtime_checkable
class ProbabilityHead(Protocol):
    """A patch-classification model mapping (N, D) features to (N, K) class probabilities in one call."""

    def probabilities(self, features: Any) -> Any: ...


@runtime_checkable
class TaskModel(Protocol):
    """What `Generator.build` returns: a torch module the core trainer drives; its methods and the
    items `collate` receives are documented in docs/plugin-authors.md, "Generators"."""

    def collate(self, items: list[dict[str, Any]]) -> Any: ...

    def training_step(self, batch: Any) -> torch.Tensor: ...

    def predict(self, batch: Any) -> list[Any]: ...

    def export_state(self) -> dict[str, Any]: ...


class Generator(Component):
    """A trainable head over tile features (report generator, MIL classifier, ...); its class
    attributes are documented in docs/plugin-authors.md, "Generators"."""

    kind: ClassVar[str] = "generator"
    list_columns: ClassVar[tuple[str, ...]] = ("tasks", "needs_fit")
    tasks: ClassVar[tuple[str, ...]] = ()
    default_hparams: ClassVar[dict[str, Any]] = {}
    default_train: ClassVar[dict[str, Any]] = {}
    default_max_tiles: ClassVar[int | None] = 10_000
    needs_fit: ClassVar[bool] = True

    def build(self, spec: GeneratorSpec) -> TaskModel:
        raise NotImplementedError

    def key_facts(self, hparams: Mapping[str, Any]) -> dict[str, Any]:
        """What the fitted model depends on besides its items, settings and code: part of the fit's identity."""
        return {}

    def hparams(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        merged = dict(self.default_hparams)
        unknown = sorted(set(overrides or {}) - set(merged))
        if unknown:
            raise PathkitError(f"generator {self.name!r} has no hyperparameter(s) {', '.join(unknown)}; "
                               f"known: {', '.join(sorted(merged))}")
        merged.update(overrides or {})
        return merged

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {**super().describe(), "tasks": list(cls.tasks), "default_hparams": dict(cls.default_hparams),
                "default_train": dict(cls.default_train), "needs_fit": cls.needs_fit}


# --------------------------------------------------------------------------- metrics


class DeferredTable:
    """A dataclass field holding a table, None, or a builder of it: a zero-argument callable called on
    the first read and replaced by what it returns, so a table nobody reads is never built (nor polars
    imported). A builder that raises is called again on the next read. One re-entrant lock makes
    threads reading at once build a table once (a builder may read another deferred table)."""

    _building = threading.RLock()

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the field's default (dataclasses read it from the class)
        value = obj.__dict__.get(self._slot)
        if callable(value):
            with self._building:
                value = obj.__dict__.get(self._slot)  # another thread may have built it meanwhile
                if callable(value):
                    value = value()
                    obj.__dict__[self._slot] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self._slot] = value


@dataclass
class MetricResult:
    """`summary`: named floats; `per_case`: a table (or its builder, `DeferredTable`) of the evidence
    behind each case's score; `details`: JSON-ready results that are not one number
    (docs/plugin-authors.md, "Metrics")."""

    summary: dict[str, float]
    per_case: pl.DataFrame | Callable[[], pl.DataFrame | None] | None = DeferredTable()
    details: dict[str, Any] = field(default_factory=dict)


class Metric(Component):
    """A scorer: `compute` takes aligned lists of predictions and references. Its class attributes
    are documented in docs/plugin-authors.md, "Metrics"."""

    kind: ClassVar[str] = "metric"
    list_columns: ClassVar[tuple[str, ...]] = ("tasks",)
    tasks: ClassVar[tuple[str, ...]] = ()
    higher_is_better: ClassVar[bool] = True
    headline_scores: ClassVar[tuple[str, ...]] = ()
    lower_is_better: ClassVar[tuple[str, ...]] = ()
    informational: ClassVar[tuple[str, ...]] = ()
    score_ranges: ClassVar[dict[str, tuple[float, float]]] = {}
    evaluate_features: ClassVar[Any] = None
    whole_records: ClassVar[bool] = False
    paired_scores: ClassVar[dict[str, tuple[str, str]]] = {}
    case_scores: ClassVar[tuple[str, ...]] = ()
    case_evidence: ClassVar[tuple[str, ...]] = ()
    citation: ClassVar[str] = ""
    option_table: ClassVar[tuple[DatasetOption, ...]] = ()

    @classmethod
    def checked_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """`options` checked against `option_table`: an unknown one warned about and left out, each
        known one parsed; unchanged when the table is empty."""
        if not isinstance(options, Mapping):
            raise PathkitError(f"metric {cls.name!r}: options must be a mapping, got {type(options).__name__}")
        if not cls.option_table:
            return dict(options)
        table = {o.name: o for o in cls.option_table}
        unknown = sorted(set(options) - set(table))
        if unknown:
            # a warning, not an error: one options dict may serve several metrics of one call
            warnings.warn(f"{cls.name}: ignoring unknown option(s) {', '.join(unknown)}; known: "
                          f"{', '.join(table)}", UserWarning, stacklevel=2)
        return {k: table[k].parse(v, cls.name, owner="metric") for k, v in options.items() if k in table}

    def compute(self, predictions: Sequence[Any], references: Sequence[Any], *, ids: Sequence[str] | None = None,
                context: Mapping[str, Any] | None = None) -> MetricResult:
        raise NotImplementedError

    def prepare(self, context: Mapping[str, Any] | None = None) -> None:
        """Start what `compute` will wait for (a JVM, a model) without waiting; must not raise."""

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {**super().describe(), "options": [dataclasses.asdict(o) for o in cls.option_table],
                "tasks": list(cls.tasks), "higher_is_better": cls.higher_is_better,
                "headline_scores": list(cls.headline_scores), "lower_is_better": list(cls.lower_is_better),
                "informational": list(cls.informational),
                "score_ranges": {k: list(v) for k, v in cls.score_ranges.items()}}

    @classmethod
    def is_informational(cls, key: str) -> bool:
        """Whether summary key `key` is a fact about the scored set (a count), not a score."""
        base = key.removesuffix("_ci_low").removesuffix("_ci_high")
        return base in cls.informational or base.startswith("n_")

    @classmethod
    def direction(cls, key: str) -> str:
        """"higher" or "lower": which way summary score `key` is better (its CI bounds follow it);
        "info" for an informational key (`informational`, `n_*` counts), which has no better way."""
        base = key.removesuffix("_ci_low").removesuffix("_ci_high")
        if cls.is_informational(base):
            return "info"
        if base in cls.lower_is_better:
            return "lower"
        return "higher" if cls.higher_is_better else "lower"


# --------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class RunFacts:
    """What a task learns about the run it serves: where it writes, the encoder's tile spec and
    the tiling actually used for slides (`tiling`: TilingParams fields such as overlap)."""

    workdir: Path
    run_dir: Path
    encoder: str
    tile_spec: TileSpec
    tiling: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    max_tiles: int | None = None


class Task(Component):
    """A task type: what its cases carry, what its targets and predictions look like, its
    baselines, how predictions are written and which run facts its metrics receive. Every member
    has a default for bags of tile features with JSON predictions; a task overrides what differs
    (each member and its default: docs/plugin-authors.md, "Tasks")."""

    kind: ClassVar[str] = "task"
    list_columns: ClassVar[tuple[str, ...]] = ("inputs", "baselines")
    inputs: ClassVar[tuple[str, ...]] = (INPUT_SLIDES, INPUT_FEATURES)
    target_format: ClassVar[str] = "any JSON value"
    prediction_format: ClassVar[str] = "any JSON value"
    baselines: ClassVar[tuple[str, ...]] = ()
    generator_tasks: ClassVar[tuple[str, ...]] = ()
    evaluate_inputs: ClassVar[tuple[str, ...]] = ("text", "label", "probabilities", "score")

    @classmethod
    def solved_by(cls, generator: type[Generator]) -> bool:
        """Whether `generator` can serve this task: it names the task, or one of `generator_tasks`."""
        return cls.name in generator.tasks or bool(set(cls.generator_tasks) & set(generator.tasks))

    # ------------------------------------------------------------------ targets

    def check_target(self, case: Case, dataset: Dataset) -> str | None:
        """Why `case.target` does not fit this task (None when it does)."""
        return None

    def model_target(self, case: Case, dataset: Dataset) -> Any:
        """The target as the model's items carry it (a class index for a class name, ...)."""
        return case.target

    def reference(self, case: Case, dataset: Dataset) -> Any:
        """The target as metrics receive it (by default the model target)."""
        return self.model_target(case, dataset)

    # ------------------------------------------------------------------ predictions

    def check_prediction(self, prediction: Any, case: Case, dataset: Dataset) -> str | None:
        """Why a model's prediction does not fit the prediction format (None when it does)."""
        return None

    def output(self, prediction: Any, case: Case, dataset: Dataset) -> Any:
        """A checked prediction as it is written and scored (e.g. with the class name added)."""
        return prediction

    def baseline_predictions(self, name: str, train_targets: Sequence[Any], test_cases: Sequence[Case],
                             dataset: Dataset) -> dict[str, Any] | None:
        """Baseline `name`'s output for every test case from the train targets; None: not made."""
        return None

    # ------------------------------------------------------------------ inputs and items

    def tiling(self, dataset: Dataset, run_tiling: Mapping[str, Any]) -> dict[str, Any]:
        """TilingParams overrides for this dataset's slides: the dataset's, then the run's."""
        return {**dict(dataset.tiling_options), **dict(run_tiling)}

    def items(self, cases: Sequence[Case], inputs: Mapping[str, Any], dataset: Dataset,
              facts: RunFacts, *, targets: bool = True) -> Sequence[dict[str, Any]] | None:
        """The items of `cases` that reach `TaskModel.collate`, without targets when `targets` is
        False (the test split); None: the run's standard items (`pathkit_core.run.items`)."""
        return None

    def predict(self, model: TaskModel, items: Sequence[dict[str, Any]], facts: RunFacts, *,
                batch_size: int, cfg: Any) -> dict[str, Any] | None:
        """Raw predictions by case id (before `output`); None: the trainer's batched predict."""
        return None

    # ------------------------------------------------------------------ outputs

    def write_predictions(self, path: Path, predictions: Mapping[str, Any], ids: Sequence[str],
                          facts: RunFacts) -> Path | None:
        """Write predictions for `ids` to `path`; None: the run's JSON lines `{"id", "prediction"}`."""
        return None

    def read_predictions(self, path: Path) -> dict[str, Any] | None:
        """Predictions by case id as `write_predictions` wrote them; None: the run's JSON lines."""
        return None

    def export_evidence(self, model: TaskModel, items: Sequence[dict[str, Any]], cases: Sequence[Case],
                        out_dir: Path, facts: RunFacts) -> None:
        """Write what a model shows of its reasons for the test predictions under `out_dir`."""

    def metric_context(self, dataset: Dataset, facts: RunFacts) -> dict[str, Any]:
        """Run facts its metrics receive in `context` (tile geometry, class names, budget)."""
        return {}

    def run_summary(self, predictions: Mapping[str, Any], references: Mapping[str, Any]) -> dict[str, Any]:
        """Task-level facts written to metrics.json beside the scores."""
        return {}

    def components(self, dataset: Dataset) -> list[tuple[str, str]]:
        """(kind, name) of components beyond the run's own that decide this task's results."""
        return []

    # ------------------------------------------------------------------ report

    def report_sections(self, run: Any) -> list[Any]:
        """This task's `pathkit_core.report.Section`s of the run report, from `run` (a `RunFolder`)."""
        return []

    # ------------------------------------------------------------------ validation

    def validate_cases(self, splits: Mapping[str, Sequence[Case]], dataset: Dataset) -> None:
        """Every case has a plain, unique id, an accepted input and a target of the right form; else
        an error naming the first bad cases and the expected form."""
        bad: list[str] = []
        count = 0
        seen: dict[str, str] = {}
        for split, cases in splits.items():
            for case in cases:
                problem = case_id_problem(case.case_id)
                if problem is None and case.case_id in seen:
                    problem = f"the case id is also in the {seen[case.case_id]} split"
                if problem is None and case.input_kind not in self.inputs:
                    problem = f"carries {case.input_kind}, but task {self.name!r} takes {' or '.join(self.inputs)}"
                if problem is None:
                    problem = self.check_target(case, dataset)
                seen.setdefault(str(case.case_id), split)
                if problem:
                    count += 1
                    if len(bad) < 5:
                        bad.append(f"{case.case_id} ({split}): {problem}")
        if bad:
            more = f" and {count - len(bad)} more" if count > len(bad) else ""
            raise PathkitError(f"dataset {dataset.name!r} does not fit task {self.name!r}: {'; '.join(bad)}{more}. "
                               f"Expected targets: {self.target_format}")

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {**super().describe(), "inputs": list(cls.inputs), "target_format": cls.target_format,
                "prediction_format": cls.prediction_format, "baselines": list(cls.baselines),
                "generator_tasks": list(cls.generator_tasks)}


# --------------------------------------------------------------------------- tissue segmenters


class TissueSegmenter(Component):
    """Tissue segmentation for tiling: `segment(rgb, mpp)` returns a
    `pathkit_core.wsi.segmentation.TissueMask` (docs/plugin-authors.md, "Tissue segmenters")."""

    kind: ClassVar[str] = "segmenter"
    input_mpp: ClassVar[float | None] = None

    def __init__(self, params: Any) -> None:
        self.params = params

    @classmethod
    def identity(cls, params: Any) -> dict[str, Any]:
        """What else decides its masks (e.g. its weights' sha256): recorded in each manifest."""
        return {}

    def segment(self, rgb: np.ndarray, mpp: float) -> Any:
        raise NotImplementedError


# --------------------------------------------------------------------------- slide readers


class SlideHandle:
    """An open slide of a format OpenSlide does not read, as a `SlideReader.open` returns it:
    OpenSlide-shaped (`dimensions`, `level_count`, `level_dimensions`, `level_downsamples`,
    `properties`, `close`), plus what `pathkit_core.wsi.slide.Slide` asks it for instead of
    OpenSlide (the shipped readers' is `pathkit_readers.base.ReaderHandle`)."""

    # (where the metadata gives it, (mpp_x, mpp_y)); None when it gives none (docs/formats.md)
    mpp_found: tuple[str, tuple[float, float]] | None = None
    vendor: str = "unknown"
    # The associated images (label, macro, ...) by name, each a function reading it.
    associated: Mapping[str, Callable[[], np.ndarray]] = {}

    def read_rgb(self, location: tuple[int, int], level: int, size: tuple[int, int],
                 out: np.ndarray | None = None) -> np.ndarray:
        """RGB uint8 (h, w, 3) of `size` at `level` from `location` (level-0 pixels), white beyond the slide."""
        raise NotImplementedError

    def associated_image(self, name: str) -> np.ndarray:
        """Associated image `name` as RGB uint8 (h, w, 3)."""
        raise NotImplementedError


class SlideReader(Component):
    """A whole-slide file format behind the one `pathkit_core.wsi.slide.Slide` the pipeline uses;
    its members are documented in docs/plugin-authors.md, "Slide readers"."""

    kind: ClassVar[str] = "slide-reader"
    formats: ClassVar[str] = ""
    extra: ClassVar[str] = ""
    modules: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[int] = 100
    list_columns: ClassVar[tuple[str, ...]] = ("order", "formats", "extra", "available")

    @classmethod
    def unavailable(cls) -> str | None:
        """None when the reader's libraries are installed, else which is missing and what to install.
        Looked up, not imported: some take seconds to import."""
        import importlib.util

        for module in cls.modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):  # a parent package that is itself missing or broken
                found = False
            if not found:
                fix = f'pip install "pathkit[{cls.extra}]"' if cls.extra else "reinstall pathkit"
                return f"{module} is not installed; {fix}"
        return None

    @classmethod
    def claims(cls, path: Path) -> bool:
        """A cheap look (name, magic bytes) at whether `path` is this reader's format."""
        return False

    has_scenes: ClassVar[bool] = False

    @classmethod
    def scene_names(cls, path: Path) -> list[str | None]:
        """The name of each scene of `path`, in index order (None for an unnamed one)."""
        return []

    def open(self, path: Path) -> Any:
        raise NotImplementedError

    class DirectLevels(Protocol):
        """What `direct_levels` returns. `read` fills `out` (h, w, 3 uint8) with exactly the pixels
        `pathkit_core.wsi.slide.read_rgb` gives for the region and returns True, or returns False for a
        region to read through the handle instead; `close` frees what it holds."""

        def read(self, level: int, location: tuple[int, int], size: tuple[int, int], out: np.ndarray) -> bool: ...

        def close(self) -> None: ...

    def direct_levels(self, path: Path, handle: Any) -> SlideReader.DirectLevels | None:
        """The levels of `handle` (this reader's open handle of `path`) it decodes faster than the handle
        reads them, for the tile reader; None (the default) when there are none."""
        return None

    @classmethod
    def describe(cls) -> dict[str, Any]:
        why = cls.unavailable()
        return {**super().describe(), "order": str(cls.order), "formats": cls.formats, "extra": cls.extra or "(core)",
                "available": "yes" if why is None else f"no: {why}"}


COMPONENT_BASES: dict[str, type[Component]] = {
    "task": Task,
    "segmenter": TissueSegmenter,
    "slide-reader": SlideReader,
    "encoder": Encoder,
    "slide-encoder": SlideEncoder,
    "generator": Generator,
    "dataset": Dataset,
    "metric": Metric,
}

# Names that left the contract in pathkit 0.2, importable with a DeprecationWarning until 0.3
# (docs/plugin-authors.md, "Moved names").
_MOVED = {
    **dict.fromkeys(("TASK_REPORT", "TASK_SLIDE_CLASSIFICATION", "TASK_PATCH_CLASSIFICATION", "TASK_SEGMENTATION",
                     "TASK_MULTIPLE_CHOICE_VQA"), "pathkit_tasks"),
    **dict.fromkeys(("EvidencePool", "Selection", "Selector"), "pathkit_tasks.vqa.selection"),
    "TileAttentionModel": "pathkit_tasks.classification.attention",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from pathkit_core._deprecation import moved_attribute

        return moved_attribute(__name__, name, _MOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "INPUT_SLIDES", "INPUT_FEATURES", "INPUT_IMAGES", "PathkitError", "brief_list", "repeats_text", "Component",
    "TileSpec", "PretrainedWeights", "Encoder", "Case", "case_id_problem", "regular_file_problem", "DatasetOption",
    "Dataset", "GeneratorSpec", "TaskModel", "Generator", "DeferredTable", "MetricResult", "Metric", "RunFacts",
    "Task", "TissueSegmenter", "SlideHandle", "SlideReader", "COMPONENT_BASES",
    "slide_id_problem", "ID_MAX_BYTES",
]
