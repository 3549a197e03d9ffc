"""VQA readers for `multiple-choice-vqa`: `random`, `majority-position`, `text-only`, `attention-reader`.

A reader gets each question's selected evidence (at most K features, their candidate set) and
the question and choices from the item meta; never the answer of a test question. The two
fixed readers are the floor every model is compared with; `text-only` is the control that sees
no feature (PathoArgus: a text-only Qwen2.5-7B reaches 24.39%, FGR 30.87%), and
`attention-reader` the question-conditioned attention reader trainable on a CPU (`_vqa.model`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_MULTIPLE_CHOICE_VQA

# Every feature reaches the task, which keeps the budget (the selector), not the bag cut.
_ALL_TILES = None
READER_TRAIN: dict[str, Any] = {"max_epochs": 60, "lr": 1e-3, "weight_decay": 1e-4, "batch_size": 16,
                                "eval_batch_size": 64, "early_stop_patience": 12, "plateau_patience": 5}


class RandomReader(Generator):
    """A uniformly random choice per question, reproducible from (seed, question id)."""

    name: ClassVar[str] = "random"
    description: ClassVar[str] = "VQA floor: a random choice per question (seeded by the question id)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_MULTIPLE_CHOICE_VQA,)
    default_hparams: ClassVar[dict[str, Any]] = {"seed": 0}
    needs_fit: ClassVar[bool] = False
    default_max_tiles: ClassVar[int | None] = _ALL_TILES

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._vqa.fixed import RandomModel

        return RandomModel(int(self.hparams(spec.hparams)["seed"]))  # type: ignore[return-value]


class MajorityPositionReader(Generator):
    """The answer position most frequent on the train split, for every question."""

    name: ClassVar[str] = "majority-position"
    description: ClassVar[str] = "VQA floor: the train split's most frequent answer position"
    tasks: ClassVar[tuple[str, ...]] = (TASK_MULTIPLE_CHOICE_VQA,)
    needs_fit: ClassVar[bool] = False
    default_max_tiles: ClassVar[int | None] = _ALL_TILES

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._vqa.fixed import PositionModel
        from pathkit_tasks._common import most_frequent

        saved = (spec.state or {}).get("position")
        position = saved if saved is not None else most_frequent([t for t in spec.train_targets if t is not None])
        if position is None:
            raise PathkitError("majority-position is fitted on the train split's answers, and there are none "
                               "(a dataset with only a test split has no train answers)")
        return PositionModel(int(position))  # type: ignore[return-value]


class TextOnlyReader(Generator):
    """The text-only control: question and choices, no feature (what the text gives away)."""

    name: ClassVar[str] = "text-only"
    description: ClassVar[str] = "VQA control: scores each choice from the question and choice text only (no features)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_MULTIPLE_CHOICE_VQA,)
    default_hparams: ClassVar[dict[str, Any]] = {"dim": 64, "buckets": 8192, "dropout": 0.1}
    default_train: ClassVar[dict[str, Any]] = dict(READER_TRAIN)
    default_max_tiles: ClassVar[int | None] = _ALL_TILES

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._vqa.model import TextOnlyReader as Model

        hp = self.hparams(spec.hparams)
        return Model(int(hp["buckets"]), int(hp["dim"]), float(hp["dropout"]))  # type: ignore[return-value]


class AttentionReaderGenerator(Generator):
    """Question-conditioned attention over the K selected features, one score per choice."""

    name: ClassVar[str] = "attention-reader"
    description: ClassVar[str] = ("VQA reader: per-choice question-conditioned attention over the selected "
                                  "features and their candidate sets (CPU-trainable)")
    tasks: ClassVar[tuple[str, ...]] = (TASK_MULTIPLE_CHOICE_VQA,)
    default_hparams: ClassVar[dict[str, Any]] = {"dim": 64, "buckets": 8192, "dropout": 0.1, "max_sets": 8}
    default_train: ClassVar[dict[str, Any]] = dict(READER_TRAIN)
    default_max_tiles: ClassVar[int | None] = _ALL_TILES

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._vqa.model import AttentionReader

        hp = self.hparams(spec.hparams)
        if spec.feature_dim <= 0:
            raise PathkitError(f"{self.name}: feature_dim must be positive, got {spec.feature_dim}")
        return AttentionReader(spec.feature_dim, int(hp["buckets"]), int(hp["dim"]), float(hp["dropout"]),
                               int(hp["max_sets"]))  # type: ignore[return-value]


@hookimpl
def register_generators(register):
    for reader in (RandomReader, MajorityPositionReader, TextOnlyReader, AttentionReaderGenerator):
        register(reader)
