"""QC statistics of a slide's feature matrix and the fail-closed integrity verdict (GOLDMARK paper,
"Integrity checks" and Figure 4; public code `_summarize_embeddings`): which statistics, and which of
them fail a slide or only flag it, docs/encoders.md, "Integrity (fail-closed)".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathkit_core.contracts import PathkitError
from pathkit_core.features.store import FEATURE_SUFFIX, STATUS_FILE, read_features, read_status
from pathkit_core.workspace import sha256_file

if TYPE_CHECKING:
    import torch

DEGENERATE_VARIANCE = 1e-6
NEAR_DUPLICATE_COSINE = 0.999
NEAR_DUPLICATE_SAMPLE = 256
NEAR_DUPLICATE_WARN = 0.5
_CHUNK_ROWS = 4096
# The columns of a run's `features_qc.csv` (one row per case input), and those holding numbers.
QC_COLUMNS = ("case_id", "split", "input", "slide_id", "n_tiles", "status", "reason", "flags", "mean_variance",
              "l2_norm_mean", "zero_vector_fraction", "near_duplicate_fraction", "file")
QC_NUMBERS = ("mean_variance", "l2_norm_mean", "zero_vector_fraction", "near_duplicate_fraction")


@dataclass
class QCReport:
    """Per-slide QC statistics; `failures` decide the status, `flags` are warnings."""

    n_tiles: int
    embed_dim: int
    expected_tiles: int | None = None
    nan_fraction: float = 0.0
    inf_fraction: float = 0.0
    mean_variance: float | None = None
    l2_norm_mean: float | None = None
    l2_norm_std: float | None = None
    l2_norm_min: float | None = None
    l2_norm_max: float | None = None
    zero_vector_fraction: float = 0.0
    near_duplicate_fraction: float | None = None
    near_duplicate_sample: int = 0
    sha256: str = ""
    failures: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "failed" if self.failures else "ok"

    @property
    def reason(self) -> str:
        return "; ".join(self.failures)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def _welford_merge(count: int, mean: torch.Tensor, m2: torch.Tensor,
                   chunk: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
    """Chan et al. pairwise update of per-dimension mean and sum of squared deviations."""
    n_b = chunk.shape[0]
    mean_b = chunk.mean(dim=0)
    m2_b = ((chunk - mean_b) ** 2).sum(dim=0)
    if count == 0:
        return n_b, mean_b, m2_b
    total = count + n_b
    delta = mean_b - mean
    mean = mean + delta * (n_b / total)
    m2 = m2 + m2_b + delta**2 * (count * n_b / total)
    return total, mean, m2


def compute_qc(features: torch.Tensor, *, expected_tiles: int | None = None,
               sample_size: int = NEAR_DUPLICATE_SAMPLE) -> QCReport:
    """QC of an (N, D) feature matrix, in float64, chunk by chunk (memory stays bounded)."""
    import torch

    if features.ndim != 2:
        raise ValueError(f"features must be 2-D, got shape {tuple(features.shape)}")
    n, d = int(features.shape[0]), int(features.shape[1])
    report = QCReport(n_tiles=n, embed_dim=d, expected_tiles=expected_tiles)
    if expected_tiles is not None and expected_tiles != n:
        report.failures.append(f"row count {n} != {expected_tiles} tiles in the manifest")
    if n == 0:
        report.failures.append("no tiles")
        return report

    nan = inf = zero = 0
    count, mean, m2 = 0, torch.zeros(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    norm_sum = norm_sq = 0.0
    norm_min, norm_max = math.inf, -math.inf
    finite_rows = 0
    for start in range(0, n, _CHUNK_ROWS):
        chunk = features[start : start + _CHUNK_ROWS].to(torch.float64)
        nan += int(torch.isnan(chunk).sum())
        inf += int(torch.isinf(chunk).sum())
        finite = torch.isfinite(chunk).all(dim=1)
        chunk = chunk[finite]
        if chunk.shape[0] == 0:
            continue
        finite_rows += int(chunk.shape[0])
        count, mean, m2 = _welford_merge(count, mean, m2, chunk)
        norms = torch.linalg.vector_norm(chunk, dim=1)
        zero += int((norms == 0).sum())
        norm_sum += float(norms.sum())
        norm_sq += float((norms**2).sum())
        norm_min = min(norm_min, float(norms.min()))
        norm_max = max(norm_max, float(norms.max()))

    total = n * d
    report.nan_fraction = nan / total
    report.inf_fraction = inf / total
    if nan:
        report.failures.append(f"{nan} NaN value(s) ({report.nan_fraction:.3g} of all values)")
    if inf:
        report.failures.append(f"{inf} Inf value(s) ({report.inf_fraction:.3g} of all values)")
    if finite_rows:
        report.mean_variance = float((m2 / finite_rows).mean())
        report.l2_norm_mean = norm_sum / finite_rows
        report.l2_norm_std = math.sqrt(max(norm_sq / finite_rows - report.l2_norm_mean**2, 0.0))
        report.l2_norm_min, report.l2_norm_max = norm_min, norm_max
        report.zero_vector_fraction = zero / finite_rows
        if zero:
            report.flags.append(f"{zero} zero vector(s)")
        if finite_rows == 1:
            report.flags.append("single tile: embedding variance is not informative")
        elif report.mean_variance <= DEGENERATE_VARIANCE:
            report.failures.append(
                f"degenerate features: mean per-dimension variance {report.mean_variance:.3g} "
                f"<= {DEGENERATE_VARIANCE:g}"
            )
        _near_duplicates(features, report, sample_size)
    return report


def _near_duplicates(features: torch.Tensor, report: QCReport, sample_size: int) -> None:
    """Fraction of tile pairs in an evenly spaced sample with cosine similarity > 0.999 (GOLDMARK's
    code samples the first 64 rows instead: docs/encoders.md, "Integrity (fail-closed)")."""
    import torch

    n = features.shape[0]
    take = min(sample_size, n)
    if take < 2:
        return
    index = torch.linspace(0, n - 1, take).round().long().unique()
    sample = features[index].to(torch.float64)
    sample = sample[torch.isfinite(sample).all(dim=1)]
    norms = torch.linalg.vector_norm(sample, dim=1)
    sample = sample[norms > 0] / norms[norms > 0, None]
    m = sample.shape[0]
    if m < 2:
        return
    cosine = sample @ sample.T
    upper = torch.triu(torch.ones(m, m, dtype=torch.bool), diagonal=1)
    pairs = cosine[upper]
    report.near_duplicate_fraction = float((pairs > NEAR_DUPLICATE_COSINE).double().mean())
    report.near_duplicate_sample = m
    if report.near_duplicate_fraction > NEAR_DUPLICATE_WARN:
        report.flags.append(
            f"{report.near_duplicate_fraction:.0%} of sampled tile pairs are near-duplicates "
            f"(cosine > {NEAR_DUPLICATE_COSINE})"
        )


# --------------------------------------------------------------------------- auditing a store


def _encoder_folders(folder: Path, encoder: str | None) -> list[tuple[str, Path]]:
    """(encoder, its store folder) under `folder`: the folder itself, one named encoder's, or each one."""

    def is_store(p: Path) -> bool:
        return (p / STATUS_FILE).is_file() or any(p.glob(f"*{FEATURE_SUFFIX}"))

    if encoder is not None:
        if folder.name == encoder and is_store(folder):
            return [(encoder, folder)]
        return [(encoder, folder / encoder)] if (folder / encoder).is_dir() else []
    if is_store(folder):
        return [(folder.name, folder)]
    return [(p.name, p) for p in sorted(folder.iterdir()) if p.is_dir() and is_store(p)]


def stored_features_problem(path: Path, *, expected_tiles: int | None = None) -> str:
    """Why a stored feature file cannot be reused ('' when it can): it fails to read or its
    checksum, or QC recomputed from its tensors fails (NaN/Inf, degenerate, row count)."""
    try:
        ff = read_features(path, verify=True)
    except PathkitError as exc:
        return str(exc).removeprefix(f"feature file {path} ")
    failures = compute_qc(ff.features, expected_tiles=expected_tiles).failures
    return f"fails QC ({'; '.join(failures)})" if failures else ""


def audit_file(path: Path, status_record: dict[str, Any] | None = None) -> dict[str, Any]:
    """Full check of one feature file: checksum, shapes, manifest row count, recomputed QC."""
    sid = path.name.split(".safetensors")[0]
    record: dict[str, Any] = {"slide_id": sid, "path": str(path), "problems": []}
    try:
        record["sha256"] = sha256_file(path)
        ff = read_features(path, verify=True)
    except (PathkitError, OSError) as exc:
        record.update(status="failed", problems=[str(exc)])
        return record
    expected = None
    manifest_path = ff.meta.get("manifest_path")
    if manifest_path:
        expected, problem = _manifest_rows(Path(manifest_path), ff.meta.get("manifest_sha256", ""))
        if problem:
            record["problems"].append(problem)
    qc = compute_qc(ff.features, expected_tiles=expected)
    qc.sha256 = record["sha256"]
    record.update({k: v for k, v in qc.as_dict().items() if k not in ("failures", "flags", "status")})
    record["problems"] = qc.failures + record["problems"] + qc.flags
    failed = bool(qc.failures)
    if ff.meta.get("status") == "failed":
        failed = True
        record["problems"].insert(0, f"marked failed: {ff.meta.get('failure_reason', '')}")
    if status_record and status_record.get("status") == "failed":
        failed = True
        record["problems"].insert(0, f"extraction failed: {status_record.get('reason', '')}")
    record["status"] = "failed" if failed else "ok"
    return record


def _manifest_rows(path: Path, recorded_sha: str) -> tuple[int | None, str]:
    """Rows of the tile manifest the features were made from, and a problem if any."""
    if not path.is_file():
        return None, f"manifest {path} not found: row count not checked"
    try:
        from pathkit_core.wsi.manifest import read_manifest

        manifest = read_manifest(path)
    except PathkitError as exc:
        return None, f"manifest unreadable: {exc}"
    if recorded_sha and sha256_file(path) != recorded_sha:
        return manifest.n_tiles, f"manifest {path} changed since extraction (re-extract)"
    return manifest.n_tiles, ""


def audit_store(folder: str | Path, *, encoder: str | None = None) -> list[dict[str, Any]]:
    """QC records of every feature file and every failed extraction under `folder`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PathkitError(f"{folder} is not a folder")
    out: list[dict[str, Any]] = []
    for name, enc_dir in _encoder_folders(folder, encoder):
        status = read_status(enc_dir.parent, name) if enc_dir.name == name else {}
        seen = set()
        for path in sorted(enc_dir.glob(f"*{FEATURE_SUFFIX}")):
            rec = audit_file(path, status.get(path.name[: -len(FEATURE_SUFFIX)]))
            rec["encoder"] = name
            seen.add(rec["slide_id"])
            out.append(rec)
        for sid, srec in sorted(status.items()):
            if sid in seen or srec.get("status") != "failed":
                continue
            out.append({"encoder": name, "slide_id": sid, "status": "failed", "n_tiles": srec.get("n_tiles", ""),
                        "problems": [f"extraction failed: {srec.get('reason', '')}"]})
    return out
