"""Synthetic GOLDMARK-style cohorts: feature bags whose label is planted in a few tiles of each positive slide.

Not pathology data. The planted signal is a fixed direction added to a handful of tiles of every
positive slide, so a MIL head must find those tiles (mean pooling dilutes them); cohorts differ by
a constant shift (a stand-in for scanner/site effects). The writer also plants the bad inputs the
dataset must handle: a frozen-section slide, a duplicate scan, a slide under the tissue minimum, a
degenerate feature file, a failed extraction, and a failed GOLDMARK QC record.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core.workspace import atomic_path, atomic_write_json, atomic_write_text, content_hash

TILE_PX = 256  # level-0 pixels per tile side of the synthetic slides (128 um at 0.5 mpp)


@dataclass(frozen=True)
class SyntheticSpec:
    """What to generate; the hash of these fields names the build, so a rerun reuses it."""

    task: str = "COAD-MSI"
    cohorts: tuple[tuple[str, int], ...] = (("TCGA", 60), ("MSKCC", 48))
    tiles: tuple[int, int] = (80, 160)
    dim: int = 32
    planted: int = 4
    signal: float = 6.0
    positive_rate: float = 0.4
    site_shift: float = 0.5
    slide_jitter: float = 0.1  # per-slide offset shared by its tiles (staining-like); large values invite memorising
    seed: int = 0
    # feature file format per cohort: "safetensors" (pathkit store) or "pt" (GOLDMARK release)
    formats: tuple[tuple[str, str], ...] = (("TCGA", "safetensors"), ("MSKCC", "pt"))
    bad_inputs: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    # the id scheme (`synthetic_ids`); a new scheme rebuilds a demo written under an older one
    ids: str = "SYN-v2"

    def key(self) -> str:
        return content_hash(asdict(self))


def synthetic_ids(cohort: str, index: int, slide: str = "S1") -> tuple[str, str]:
    """(patient, slide) ids of a synthetic case: `SYN-<cohort>-<n>` and `SYN-<cohort>-<n>-<slide>`,
    obviously made up, never shaped like a real TCGA or MSK-IMPACT barcode. The curation facts a
    barcode would carry (frozen section, second scan of one glass slide) are in the manifest's
    `ffpe` and `slide_barcode` columns instead."""
    patient = f"SYN-{cohort.upper()}-{index:04d}"
    return patient, f"{patient}-{slide}"


def write_synthetic_cohort(root: str | Path, spec: SyntheticSpec = SyntheticSpec()) -> dict[str, Any]:
    """Write `manifest.csv`, feature files under `features/`, GOLDMARK tile manifests under
    `tiles/` and `planted.json` (slide id -> planted tile rows); return what was written."""
    import numpy as np
    import torch

    from pathkit_core.features.store import write_features

    root = Path(root)
    done = root / "synthetic.json"
    if done.exists():
        try:
            info = json.loads(done.read_text())
            if info.get("key") == spec.key():
                return info
        except json.JSONDecodeError:
            pass
    rng = np.random.default_rng(spec.seed)
    direction = rng.normal(size=spec.dim)
    direction /= np.linalg.norm(direction)
    site_direction = rng.normal(size=spec.dim)
    site_direction /= np.linalg.norm(site_direction)
    tumour, gene = spec.task.split("-", 1)
    formats = dict(spec.formats)
    features_dir = root / "features"
    tiles_dir = root / "tiles"
    features_dir.mkdir(parents=True, exist_ok=True)
    tiles_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    planted: dict[str, list[int]] = {}
    bad: dict[str, str] = {}

    def bag(n: int, positive: bool, shift: float) -> tuple[np.ndarray, list[int]]:
        x = rng.normal(size=(n, spec.dim)) + rng.normal(scale=spec.slide_jitter, size=spec.dim) + shift * site_direction
        rows_planted: list[int] = []
        if positive:
            rows_planted = sorted(rng.choice(n, size=spec.planted, replace=False).tolist())
            x[rows_planted] += spec.signal * direction
        return x.astype(np.float32), rows_planted

    def grid(n: int) -> np.ndarray:
        side = int(np.ceil(np.sqrt(n)))
        cells = np.arange(n)
        return np.stack([(cells % side) * TILE_PX, (cells // side) * TILE_PX], axis=1).astype(np.int64)

    def write(slide_id: str, cohort: str, feats: np.ndarray, *, qc_status: str = "ok", reason: str = "") -> str:
        coords = grid(len(feats))
        fmt = formats.get(cohort, "safetensors")
        if fmt == "pt":
            tile_csv = "tile_id,x,y,level\n" + "".join(f"{i},{x},{y},0\n" for i, (x, y) in enumerate(coords))
            atomic_write_text(tiles_dir / f"{slide_id}.csv", tile_csv)
            path = features_dir / f"features_{slide_id}.pt"
            payload = {"features": torch.from_numpy(feats).half(), "tile_ids": list(range(len(feats)))}
            with atomic_path(path) as tmp:
                torch.save(payload, tmp)
            variance = float(feats.astype(np.float64).var(axis=0).mean())
            atomic_write_json(features_dir / f"features_{slide_id}.json", {
                "slide_id": slide_id, "encoder": "synthetic", "num_tiles": len(feats),
                "num_features": len(feats) if qc_status == "ok" else len(feats) - 7,
                "feature_dim": spec.dim, "status": qc_status, "failure_reason": reason,
                "embedding_variance": variance, "embedding_degenerate": variance <= 1e-6,
            })
            return str(path.relative_to(root))
        path = features_dir / f"{slide_id}.safetensors"
        write_features(path, feats, coords, {"slide_id": slide_id, "encoder": "synthetic"}, dtype="float16")
        return str(path.relative_to(root))

    index = 0
    for cohort, n_patients in spec.cohorts:
        shift = 0.0 if cohort == spec.cohorts[0][0] else spec.site_shift
        n_pos = max(3, round(spec.positive_rate * n_patients))
        labels = np.array([1] * n_pos + [0] * (n_patients - n_pos))
        rng.shuffle(labels)
        for label in labels:
            index += 1
            patient, slide_id = synthetic_ids(cohort, index)
            n = int(rng.integers(spec.tiles[0], spec.tiles[1] + 1))
            feats, rows_planted = bag(n, bool(label), shift)
            path = write(slide_id, cohort, feats)
            if rows_planted:
                planted[slide_id] = rows_planted
            rows.append({"slide_id": slide_id, "patient_id": patient, "cohort": cohort, "tumor_code": tumour,
                         "tissue_mm2": round(30.0 + 0.5 * n, 2), "mpp": 0.5, gene: int(label),
                         "feature_path": path})
    tcga_rows = [r for r in rows if r["cohort"] == "TCGA"]
    if spec.bad_inputs and len(tcga_rows) >= 2:
        first = tcga_rows[0]
        # a frozen-section slide of the first patient: excluded by the diagnostic (FFPE) filter
        patient, _ = first["patient_id"], first["slide_id"]
        _, frozen_id = synthetic_ids(first["cohort"], int(patient.rsplit("-", 1)[1]), "S2-FROZEN")
        feats, _ = bag(60, bool(first[gene]), 0.0)
        rows.append({**first, "slide_id": frozen_id, "slide_barcode": frozen_id, "ffpe": 0,
                     "feature_path": write(frozen_id, "TCGA", feats)})
        bad[frozen_id] = "frozen section"
        # a second, lower-resolution scan of the second slide: a duplicate scan
        second = tcga_rows[1]
        dup_id = second["slide_id"] + "-RESCAN"
        feats, _ = bag(60, bool(second[gene]), 0.0)
        rows.append({**second, "slide_id": dup_id, "slide_barcode": second["slide_id"], "mpp": 0.51,
                     "feature_path": write(dup_id, "TCGA", feats)})
        bad[dup_id] = "duplicate scan"
        # too little tissue
        index += 1
        patient, small_id = synthetic_ids("TCGA", index)
        feats, _ = bag(30, False, 0.0)
        rows.append({"slide_id": small_id, "patient_id": patient, "cohort": "TCGA", "tumor_code": tumour,
                     "tissue_mm2": 10.0, "mpp": 0.5, gene: 0, "feature_path": write(small_id, "TCGA", feats)})
        bad[small_id] = "tissue"
        # degenerate features: every tile identical
        index += 1
        patient, degenerate_id = synthetic_ids("TCGA", index)
        feats = np.tile(rng.normal(size=(1, spec.dim)).astype(np.float32), (50, 1))
        rows.append({"slide_id": degenerate_id, "patient_id": patient, "cohort": "TCGA", "tumor_code": tumour,
                     "tissue_mm2": 40.0, "mpp": 0.5, gene: 1,
                     "feature_path": write(degenerate_id, "TCGA", feats)})
        bad[degenerate_id] = "degenerate"
        # a failed extraction, marked the GOLDMARK way (file renamed with a FAILED suffix)
        index += 1
        patient, failed_id = synthetic_ids("TCGA", index)
        feats, _ = bag(40, False, 0.0)
        failed_rel = write(failed_id, "TCGA", feats)
        failed_path = root / failed_rel
        renamed = failed_path.with_name(
            failed_path.name.replace(".safetensors", ".FAILED_tile_count_mismatch.safetensors"))
        failed_path.replace(renamed)
        rows.append({"slide_id": failed_id, "patient_id": patient, "cohort": "TCGA", "tumor_code": tumour,
                     "tissue_mm2": 40.0, "mpp": 0.5, gene: 0, "feature_path": ""})
        bad[failed_id] = "failed extraction"
    if spec.bad_inputs and len(spec.cohorts) > 1:
        # an external slide whose GOLDMARK QC record says the extraction was truncated
        second_cohort = spec.cohorts[1][0]
        index += 1
        patient, trunc_id = synthetic_ids(second_cohort, index)
        feats, _ = bag(40, False, spec.site_shift)
        rows.append({"slide_id": trunc_id, "patient_id": patient, "cohort": second_cohort, "tumor_code": tumour,
                     "tissue_mm2": 40.0, "mpp": 0.5, gene: 0,
                     "feature_path": write(trunc_id, second_cohort, feats, qc_status="failed",
                                           reason="tile_count_mismatch_features_33_tiles_40")})
        bad[trunc_id] = "failed QC record"
    for r in rows:
        r.setdefault("slide_barcode", r["slide_id"])
        r.setdefault("ffpe", 1)
    columns = ["slide_id", "patient_id", "cohort", "tumor_code", "tissue_mm2", "mpp", gene, "feature_path",
               "slide_barcode", "ffpe"]
    lines = [",".join(columns)] + [",".join(str(r.get(c, "")) for c in columns) for r in rows]
    atomic_write_text(root / "manifest.csv", "\n".join(lines) + "\n")
    atomic_write_json(root / "planted.json", planted)
    info = {"key": spec.key(), "spec": asdict(spec), "n_slides": len(rows), "bad_inputs": bad,
            "direction": direction.tolist()}
    atomic_write_json(done, info)
    return info
