"""What a run cost: `cost.json` in its folder, written when the run's stages ran (not when it was found
finished); what it holds and how suites read it: docs/comparisons.md, "Cost columns"."""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Any

COST_FILE = "cost.json"
COST_FORMAT = "pathkit.cost"
COST_VERSION = 1


def start() -> None:
    """Reset the GPU peak-memory counter when torch is loaded with a GPU (no import otherwise)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.reset_peak_memory_stats()


def device(cpu_only: bool = False) -> str:
    """The GPU's name when the run could use one, else the CPU's model."""
    torch = sys.modules.get("torch")
    if not cpu_only and torch is not None and torch.cuda.is_available():
        return f"GPU: {torch.cuda.get_device_name(0)}"
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"CPU: {model}"


def _peak_memory_mb() -> tuple[float | None, float | None]:
    """(host resident-set peak of the process, the run's GPU peak) in MiB."""
    peak_host = None
    try:
        import resource

        scale = 1024.0 if sys.platform != "darwin" else 1024.0 * 1024.0  # Linux: KiB; macOS: bytes
        peak_host = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale
    except (ImportError, OSError):
        pass
    torch = sys.modules.get("torch")
    peak_gpu = None
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        peak_gpu = torch.cuda.max_memory_allocated() / 2**20
    return peak_host, peak_gpu


def _tiles(run_dir: Path) -> int | None:
    """Tiles of the run's cases (features_qc.csv: one row per feature file or image)."""
    import polars as pl

    path = run_dir / "features_qc.csv"
    if not path.is_file():
        return None
    try:
        table = pl.read_csv(path, infer_schema_length=0)
    except (OSError, pl.exceptions.PolarsError):
        return None
    if "n_tiles" not in table.columns:
        return None
    return int(table["n_tiles"].cast(pl.Int64, strict=False).fill_null(0).sum())


def write_cost(run_dir: Path, stages: dict[str, float], *, cpu_only: bool = False,
               resumed: list[str] | None = None) -> Path:
    """`<run_dir>/cost.json` of a run whose stages just ran (seconds per stage)."""
    from pathkit_core.workspace import atomic_write_json

    peak_host, peak_gpu = _peak_memory_mb()
    tiles = _tiles(run_dir)
    features_s = stages.get("features")
    record: dict[str, Any] = {
        "format": COST_FORMAT, "format_version": COST_VERSION,
        "stages": {k: round(v, 4) for k, v in stages.items()},
        "wall_seconds": round(sum(stages.values()), 4),
        "n_tiles": tiles,
        "tiles_per_second": round(tiles / features_s, 3) if tiles and features_s else None,
        "peak_host_memory_mb": None if peak_host is None else round(peak_host, 1),
        "peak_gpu_memory_mb": None if peak_gpu is None else round(peak_gpu, 1),
        "device": device(cpu_only),
        "resumed_stages": list(resumed or []),
    }
    return atomic_write_json(Path(run_dir) / COST_FILE, record)


def read_cost(run_dir: Path | str | None) -> dict[str, Any]:
    """The run's cost record, or {} when it has none (a run of an older pathkit) or it is damaged."""
    from pathkit_core.contracts import PathkitError
    from pathkit_core.readers import read_json_file

    if not run_dir or not (Path(run_dir) / COST_FILE).is_file():
        return {}
    try:
        found = read_json_file(Path(run_dir) / COST_FILE, "cost record")
    except PathkitError:
        return {}
    return found if found.get("format") == COST_FORMAT else {}


__all__ = ["COST_FILE", "device", "read_cost", "start", "write_cost"]
