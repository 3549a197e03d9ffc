"""gma-mil and abmil: gated-attention MIL heads for slide-level biomarker classification (GOLDMARK)."""

from __future__ import annotations

from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import Generator, GeneratorSpec, PathkitError, TaskModel
from pathkit_tasks import TASK_PATCH_CLASSIFICATION, TASK_SLIDE_CLASSIFICATION

# GOLDMARK protocol (public configs/train_task_v2_pub.sh and trainer; docs/goldmark.md):
# 120 epochs, AdamW lr 1e-4 / weight decay 1e-4, one bag per step, gradient-norm clip 5,
# ReduceLROnPlateau(mode="max", factor 0.5, patience 2) on validation AUROC, no early stop;
# validation (and so the plateau step and the best-epoch candidates) only at epochs 2, 5, 10,
# 20, 50, 80 and 120 (EXTRA_VAL_EPOCHS with VAL_INTERVAL=999).
GOLDMARK_VALIDATION_EPOCHS: tuple[int, ...] = (2, 5, 10, 20, 50, 80, 120)
GOLDMARK_TRAIN: dict[str, Any] = {
    "max_epochs": 120,
    "lr": 1e-4,
    "weight_decay": 1e-4,
    "batch_size": 1,
    "grad_clip": 5.0,
    "plateau_on": "selection",
    "plateau_factor": 0.5,
    "plateau_patience": 2,
    "early_stop_patience": None,
    "selection_mode": "max",
    "validation_epochs": GOLDMARK_VALIDATION_EPOCHS,
}


class GatedAttentionMIL(Generator):
    """GOLDMARK's gated-attention MIL head over frozen tile features.

    variant "gma" (default): Linear(D,512)-ReLU-Dropout-Linear(512,512)-ReLU-Dropout, gated
    attention tanh/sigmoid(512->384) with dropout, masked softmax over tiles, Linear(512, C).
    variant "abmil": the CLAM-style single-layer head with `size` "small" (512/256) or "big"
    (512/384). Every tile is used unless `max_tiles` caps the bag (see docs/goldmark.md).
    """

    name: ClassVar[str] = "gma-mil"
    description: ClassVar[str] = "GOLDMARK gated-attention MIL head (variant gma | abmil; padded bags masked)"
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_CLASSIFICATION, TASK_PATCH_CLASSIFICATION)
    default_hparams: ClassVar[dict[str, Any]] = {
        "variant": "gma",
        "size": None,  # None: "big" for gma (GOLDMARK's 512/384), "small" for abmil (CLAM's default)
        "dropout": 0.25,
        "n_classes": None,  # None: from the training labels (at least 2)
        "max_tiles": None,
        "tile_sampling": "random",
    }
    default_train: ClassVar[dict[str, Any]] = dict(GOLDMARK_TRAIN)
    # The pipeline's bag cut (RunSpec.max_tiles="auto") defers to this: all tiles, as GOLDMARK.
    default_max_tiles: ClassVar[int | None] = None

    def build(self, spec: GeneratorSpec) -> TaskModel:
        from pathkit_generators._mil import MILClassifier

        hp = self.hparams(spec.hparams)
        saved = dict(spec.state or {})
        if spec.feature_dim <= 0:
            raise PathkitError(f"{self.name}: feature_dim must be positive, got {spec.feature_dim}")
        n_classes = saved.get("n_classes") or hp["n_classes"] or _classes_from_targets(spec.train_targets, self.name)
        variant = hp["variant"]
        size = hp["size"] or ("big" if variant == "gma" else "small")
        return MILClassifier(spec.feature_dim, int(n_classes), variant=variant, size=size,
                             dropout=float(hp["dropout"]), max_tiles=hp["max_tiles"],
                             tile_sampling=hp["tile_sampling"])


class CLAMStyleABMIL(GatedAttentionMIL):
    """The CLAM-style attention MIL head (gma-mil with variant "abmil"; size small or big)."""

    name: ClassVar[str] = "abmil"
    description: ClassVar[str] = "CLAM-style gated-attention MIL (size small 512/256 | big 512/384)"
    default_hparams: ClassVar[dict[str, Any]] = {**GatedAttentionMIL.default_hparams, "variant": "abmil"}


def _classes_from_targets(targets: Any, name: str) -> int:
    labels = []
    for t in targets:
        if t is None:
            continue
        try:
            value = int(t)
        except (TypeError, ValueError):
            raise PathkitError(f"{name}: training target {t!r} is not a class index") from None
        if value < 0 or value != t:
            raise PathkitError(f"{name}: training target {t!r} is not a non-negative class index")
        labels.append(value)
    if not labels:
        raise PathkitError(f"{name}: no training labels to size the classifier (set hparam n_classes)")
    if len(set(labels)) < 2:
        raise PathkitError(f"{name}: every training case has label {labels[0]}; a classifier needs two classes")
    return max(2, max(labels) + 1)


@hookimpl
def register_generators(register):
    register(GatedAttentionMIL)
    register(CLAMStyleABMIL)
