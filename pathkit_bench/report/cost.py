"""The suite report's "Cost" section: every cell's device, wall time per stage, tiles per second and
peak memory (the cost columns of the tidy leaderboard, from each run's cost.json), and the suite's
total device-hours: the sum of its cells' recorded wall times, reused cells counted at what their
run cost when it ran."""

from __future__ import annotations

from typing import Any

from pathkit_core.report.page import Section, table

STAGES = ("dataset", "features", "fit", "predict", "score", "report")


def cost_rows(analysis: Any) -> list[dict[str, Any]]:
    """One row per cell (task, encoder, generator, seed) with its cost columns; [] when the
    leaderboard has none (a folder of an older pathkit)."""
    frame = analysis.frame
    if "wall_seconds" not in frame.columns:
        return []
    keys = ["task", "encoder", "generator", "seed"]
    cells = frame.unique(subset=keys, keep="first", maintain_order=True)
    return [dict(r) for r in cells.iter_rows(named=True)]


def device_hours(rows: list[dict[str, Any]]) -> float:
    return sum(r["wall_seconds"] or 0.0 for r in rows) / 3600.0


def cost_section(analysis: Any) -> Section | None:
    rows = cost_rows(analysis)
    if not rows:
        return None

    def num(v: Any, digits: int = 1) -> str:
        return "n/a" if v is None else f"{v:.{digits}f}"

    hours = device_hours(rows)
    devices = sorted({r["device"] for r in rows if r.get("device")})
    note = (f"<p class=note>Total: <b>{hours:.4f} device-hours</b> over {len(rows)} cells "
            f"({', '.join(devices) or 'device not recorded'}); the sum of every cell's wall time as its run "
            "recorded it (cost.json; a reused cell counts what it cost when it ran, a cell without a record counts "
            "0). Tiles per second: the tiles of the cell's cases over its features stage (a cell whose features "
            "another cell of the encoder extracted reads them from the store, and shows that speed). Peak host "
            "memory is the process's resident-set peak so far; peak GPU memory the run's own.</p>")
    body = table(["task", "encoder", "generator", "seed", "device", "wall s", *(f"{s} s" for s in STAGES), "tiles",
                  "tiles/s", "peak host MiB", "peak GPU MiB"],
                 [[r["task"], r["encoder"], r["generator"], r["seed"], r.get("device") or "n/a",
                   num(r.get("wall_seconds"), 2), *(num(r.get(f"{s}_seconds"), 2) for s in STAGES),
                   "n/a" if r.get("n_tiles") is None else r["n_tiles"], num(r.get("tiles_per_second")),
                   num(r.get("peak_host_memory_mb")), num(r.get("peak_gpu_memory_mb"))] for r in rows],
                 table_id="cost", sortable=True, filterable=True)
    return Section("Cost: device, time per stage, throughput, memory", note + body, key="cost", order=35)


__all__ = ["cost_rows", "cost_section", "device_hours"]
