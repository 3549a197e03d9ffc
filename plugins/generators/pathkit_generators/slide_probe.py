"""Slide-embedding probes: a slide encoder (or `mean-<encoder>`) named where a MIL head would be.

For every slide encoder of the encoders distribution this registers a generator of the same name
(`pathkit run --generator titan`, a suite's `generators = ["gma-mil", "mean-tiny-vit"]`): each
case's slide embedding is computed from its tile bag once and kept in the feature store
(`<features>/slide-embeddings/<slide-encoder>/<case>.safetensors`, keyed by the bag's features and
the slide encoder's identity), and a logistic regression is fitted on the train (+ validation)
embeddings with the protocol of `logistic-regression` (UNI's linear probe: L-BFGS, C = D*K/100).
The probe sees the same items and folds as the MIL heads of the run. docs/encoders.md, "Slide
embeddings in slide tasks".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pathkit_core import hookimpl
from pathkit_core.contracts import GeneratorSpec, PathkitError, TaskModel
from pathkit_generators.logistic_regression import PROBE_HPARAMS, LinearProbeHead
from pathkit_tasks import TASK_SLIDE_CLASSIFICATION

STORE_FOLDER = "slide-embeddings"


class SlideEmbeddingProbe(LinearProbeHead):
    """Logistic regression on the slide embeddings of `slide_encoder` (set per subclass)."""

    slide_encoder: ClassVar[str] = ""
    tasks: ClassVar[tuple[str, ...]] = (TASK_SLIDE_CLASSIFICATION,)
    default_hparams: ClassVar[dict[str, Any]] = {**PROBE_HPARAMS, "weights": None}
    default_train: ClassVar[dict[str, Any]] = {"batch_size": 64}

    def key_facts(self, hparams: dict[str, Any]) -> dict[str, Any]:
        """What the fit depends on besides the items: the slide encoder's architecture and the
        content of its weights file (a run-identity part: another checkpoint refits)."""
        return encoder_facts(self.slide_encoder, hparams.get("weights"))

    def build(self, spec: GeneratorSpec) -> TaskModel:
        import torch
        from pathkit_encoders.slide_store import embed_items

        from pathkit_generators._patch import PatchHead

        hp = self.hparams(spec.hparams)
        encoder = _slide_encoder(self.slide_encoder)
        parts = [spec.train_items, *([spec.val_items] if hp["combine_trainval"] and len(spec.val_items) else [])]
        if not len(spec.train_items):
            raise PathkitError(f"{self.name}: no training slides (the probe is fitted on the train split)")
        for part in parts:
            check_items(encoder, part)
        store = store_folder(spec.train_items)
        model = encoder.load("cpu", hp["weights"])
        embedded = [embed_items(encoder, model, part, store) for part in parts]
        feats = torch.cat([e for e, _ in embedded])
        labels = torch.as_tensor([int(item["target"]) for part in parts for item in part], dtype=torch.long)
        weight, bias, fit = self.fit_probe(feats, labels, spec, hp, "slide")
        statuses = [s for _, part in embedded for s in part]
        fitted = {"C": fit["C"], "n_iter": fit["n_iter"], "slide_encoder": encoder.name, "identity": encoder.identity(),
                  "embedded_at_fit": {"computed": statuses.count("computed"), "reused": statuses.count("reused")}}
        name = self.name

        class SlideProbe(PatchHead):
            def __init__(self) -> None:
                super().__init__()
                self.name = name
                self.register_buffer("weight", weight)
                self.register_buffer("bias", bias)

            def collate(self, items: list[dict[str, Any]]) -> dict[str, Any]:
                check_items(encoder, items)
                embeddings, _ = embed_items(encoder, model, items, store)
                targets = [item["target"] for item in items]
                target = None if any(t is None for t in targets) else torch.as_tensor([int(t) for t in targets])
                return {"case_id": [item["case_id"] for item in items], "features": embeddings, "target": target}

            def probabilities(self, features: torch.Tensor) -> torch.Tensor:
                return (features.to(self.weight.device) @ self.weight.T + self.bias).softmax(dim=1)

            def export_state(self) -> dict[str, Any]:
                return dict(fitted)

        return SlideProbe()


def encoder_facts(name: str, weights: Any) -> dict[str, Any]:
    """A slide encoder's architecture and the content identity of its weights file: the one given,
    else the one the weights resolution finds on this machine ($PATHKIT_WEIGHTS_DIR, the hub cache;
    never a download), else None (a seeded model, or a checkpoint still to be provided: loading
    then says where to put it)."""
    from pathkit_core.features.weights import find_weights
    from pathkit_core.sources import path_identity

    encoder = _slide_encoder(name)
    label = encoder.architecture_label() if hasattr(encoder, "architecture_label") else encoder.name
    found = weights
    if not found and encoder.weights is not None and encoder.weights.filename:
        found, _ = find_weights(type(encoder), None)
    return {"slide_encoder": {"name": encoder.name, "architecture": label,
                              "weights": path_identity(found) if found else None}}


def _slide_encoder(name: str) -> Any:
    from pathkit_core.plugins import get_component

    return get_component("slide-encoder", name)()


def store_folder(items: Any) -> Path | None:
    """`<features>/slide-embeddings` beside the encoder folders the bags' feature files are in;
    None when the items do not say where their files are (embeddings are then not kept)."""
    from pathkit_core.contracts import ItemsWithBagSpecs

    specs = items.specs if isinstance(items, ItemsWithBagSpecs) else None
    if not specs or not specs[0].feature_files:
        return None
    return Path(specs[0].feature_files[0]).parent.parent / STORE_FOLDER


def check_items(encoder: Any, items: Sequence[Any]) -> None:
    """Refuse, with the file and the reason, bags whose patch features cannot feed `encoder`
    (another patch encoder, width or tile spec), before any embedding is computed."""
    from pathkit_core.contracts import ItemsWithBagSpecs
    from pathkit_core.features.store import read_feature_meta

    specs = items.specs if isinstance(items, ItemsWithBagSpecs) else None
    if specs:
        for spec in specs:
            for path in spec.feature_files:
                meta = read_feature_meta(path)
                tile_px, mpp = meta.get("tile_px"), meta.get("target_mpp")
                problem = encoder.feature_problem(meta.get("encoder", ""), int(meta.get("embed_dim", "0")),
                                                  int(float(tile_px)) if tile_px else None,
                                                  float(mpp) if mpp else None)
                if problem:
                    raise PathkitError(f"{path}: {problem}")
        return
    for item in items:
        width = int(item["features"].shape[-1])
        if encoder.patch_dim is not None and width != encoder.patch_dim:
            raise PathkitError(f"case {item['case_id']}: slide encoder {encoder.name!r} reads "
                               f"{encoder.patch_dim}-d patch features, these are {width}-d")


def probe_class(slide_encoder: type) -> type[SlideEmbeddingProbe]:
    """The generator named like `slide_encoder`: its probe."""
    reads = slide_encoder.patch_encoder or "any patch encoder"
    return type(f"{slide_encoder.__name__}Probe", (SlideEmbeddingProbe,), {
        "name": slide_encoder.name, "slide_encoder": slide_encoder.name, "__module__": __name__,
        "description": f"logistic regression on {slide_encoder.name} slide embeddings (over {reads} features)"})


def _probe_classes() -> list[type[SlideEmbeddingProbe]]:
    try:
        from pathkit_encoders import slide_encoders
    except ImportError:  # the encoders distribution is not installed: no slide encoders to probe
        return []
    return [probe_class(cls) for cls in (*slide_encoders.NAMED.values(), *slide_encoders.MEAN_ENCODERS.values())]


PROBES = {cls.name: cls for cls in _probe_classes()}
globals().update({cls.__name__: cls for cls in PROBES.values()})  # importable by name (pickling)


@hookimpl
def register_generators(register):
    for cls in PROBES.values():
        register(cls)
