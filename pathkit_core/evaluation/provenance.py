"""What a result rests on, said where the result is read: synthetic cases and random encoder weights, in
metrics.json "provenance" and as the banners above every score table (docs/reports.md, "Provenance banners")."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pathkit_core.workspace import atomic_write_json

# Written by `pathkit run` into the root of a demo it built (pathkit_core.run.dataset.open_dataset).
SYNTHETIC_MARKER = ".pathkit-synthetic.json"
RANDOM_WEIGHTS_PREFIX = "random-init:"


def mark_synthetic(root: str | Path, dataset: str) -> Path:
    """Mark `root` (a demo pathkit built) as synthetic data of `dataset`."""
    path = Path(root) / SYNTHETIC_MARKER
    if not path.exists():
        atomic_write_json(path, {"dataset": dataset, "synthetic": True,
                                 "why": f"pathkit built them as the synthetic demo of {dataset}"})
    return path


def synthetic_reason(dataset: Any, summary: Mapping[str, Any] | None = None) -> str:
    """Why the cases of the opened `dataset` are synthetic ("" when nothing says they are);
    `summary` is its `Dataset.summary()`, whose "synthetic" may say so."""
    if type(dataset).synthetic:
        return f"dataset {dataset.name!r} is synthetic by design"
    root = dataset.root
    if root is not None:
        marker = Path(root) / SYNTHETIC_MARKER
        try:
            found = json.loads(marker.read_text())
        except FileNotFoundError:
            found = None
        except (OSError, ValueError):
            found = {"why": f"{marker} marks it as a synthetic demo"}
        if isinstance(found, dict):
            return str(found.get("why") or f"{marker} marks it as a synthetic demo")
    declared = (summary or {}).get("synthetic")
    if declared:
        return declared if isinstance(declared, str) else f"dataset {dataset.name!r} declares its data synthetic"
    return ""


def weights_kind(identities: Iterable[str]) -> str:
    """"random" (some feature file was extracted by a randomly initialised encoder), "checkpoint",
    "built-in" (no learned weights) or "unknown" (no feature file records any)."""
    found = [str(i) for i in identities if i]
    if any(i.startswith(RANDOM_WEIGHTS_PREFIX) for i in found):
        return "random"
    if any(i != "built-in" for i in found):
        return "checkpoint"
    return "built-in" if found else "unknown"


def run_provenance(dataset: Any, encoder: str, weights: Iterable[str],
                   summary: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """metrics.json "provenance": synthetic cases (with why), the encoder's weights (the feature
    files' records, `pathkit_core.run.identity.weights_identity`), the banners."""
    weights = sorted({str(w) for w in weights if w})
    why = synthetic_reason(dataset, summary)
    kind = weights_kind(weights)
    out: dict[str, Any] = {"dataset": dataset.name, "synthetic_data": bool(why), "encoder": encoder,
                           "encoder_weights": kind, "weights": weights}
    banners = []
    if why:
        out["synthetic_why"] = why
        banners.append(f"SYNTHETIC DATA: the cases of {dataset.name} in this run are synthetic ({why}); its scores "
                       "say whether the pipeline works, nothing about real tissue.")
    if kind == "random":
        seeds = ", ".join(w.removeprefix(RANDOM_WEIGHTS_PREFIX) for w in weights if w.startswith(RANDOM_WEIGHTS_PREFIX))
        banners.append(f"RANDOM ENCODER WEIGHTS: encoder {encoder} was randomly initialised ({seeds}), not loaded "
                       "from a published checkpoint; its features carry no pretraining.")
    out["banners"] = banners
    return out


def banners(metrics: Mapping[str, Any] | None) -> list[str]:
    """The provenance banners of a run's metrics.json ([] for a run without provenance)."""
    found = (metrics or {}).get("provenance") or {}
    return [str(b) for b in found.get("banners") or []] if isinstance(found, Mapping) else []


__all__ = ["RANDOM_WEIGHTS_PREFIX", "SYNTHETIC_MARKER", "banners", "mark_synthetic", "run_provenance",
           "synthetic_reason", "weights_kind"]
