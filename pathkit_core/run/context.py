"""A run's components and folder: the resolved plugins, the task, and the stage markers."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pathkit_core.contracts import Dataset, Encoder, Generator, PathkitError, RunFacts, Task
from pathkit_core.plugins import get_plugin_manager
from pathkit_core.run.spec import RunSpec
from pathkit_core.workspace import FileLock, atomic_write_json, content_hash

STAGES = ("dataset", "features", "fit", "predict", "score")


class RunContext:
    """A run folder and its stage markers: a stage whose marker matches its key is not redone."""

    def __init__(self, spec: RunSpec, log: Callable[[str], None] = print) -> None:
        self.spec = spec
        self.log = log
        self.registry = get_plugin_manager()
        self.dataset_cls: type[Dataset] = self.registry.get("dataset", spec.dataset)  # type: ignore[assignment]
        self.encoder_cls: type[Encoder] = self.registry.get("encoder", spec.encoder)  # type: ignore[assignment]
        self.generator_cls: type[Generator] = self.registry.get("generator", spec.generator)  # type: ignore[assignment]
        self.task: Task = self.registry.get("task", self.dataset_cls.task)()  # type: ignore[assignment]
        if not self.task.solved_by(self.generator_cls):
            also = f" (nor {', '.join(self.task.generator_tasks)})" if self.task.generator_tasks else ""
            raise PathkitError(
                f"generator {spec.generator!r} solves {', '.join(self.generator_cls.tasks) or 'no task'}, "
                f"not the {self.task.name!r} task of dataset {spec.dataset!r}{also}"
            )
        # hyperparameters are checked before any work: unknown names, unregistered components
        self.generator_cls().hparams(spec.hparams)
        if spec.max_tiles == "auto":
            spec.max_tiles = self.generator_cls.default_max_tiles
        elif isinstance(spec.max_tiles, str):
            raise PathkitError(f"max_tiles must be a number of tiles, None or \"auto\", not {spec.max_tiles!r}")
        self.workdir = Path(spec.workdir)
        self.cell_dir = self.workdir / "runs" / spec.dataset.replace(":", "_") / spec.encoder / spec.generator
        # The run folder is named once the data is known (`open_folder`): no folder for a dataset
        # that fails to open, and two cohorts (or one cohort before and after an edit) never share one.
        self._run_dir: Path | None = None
        self._lock: FileLock | None = None
        self.data_key = ""
        self.resumed: list[str] = []
        self._markers: dict[str, Any] = {}

    @property
    def run_dir(self) -> Path:
        if self._run_dir is None:
            raise RuntimeError("the run folder is named after the dataset stage (RunContext.open_folder)")
        return self._run_dir

    def open_folder(self, data_key: str, *, lock: bool = True) -> Path:
        """Name and create the run folder from the run's settings and its data's content key; with
        `lock`, hold its run lock until `close` (a second run of the same cell is refused)."""
        self.data_key = data_key
        self._run_dir = self.cell_dir / content_hash({**self.spec.identity(), "data": data_key})
        self._run_dir.mkdir(parents=True, exist_ok=True)
        if lock:
            self._lock = FileLock(self._run_dir / "run.lock", timeout=0)
            self._lock.acquire()
        self.markers_path = self.run_dir / "stages.json"
        self._markers = self._read_markers()
        return self.run_dir

    def close(self) -> None:
        """Release the run lock (if held)."""
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.release()

    # ------------------------------------------------------------------ facts

    def facts(self, tiling: Mapping[str, Any]) -> RunFacts:
        return RunFacts(workdir=self.workdir, run_dir=self.run_dir, encoder=self.spec.encoder,
                        tile_spec=self.encoder_cls.tile_spec, tiling=dict(tiling), seed=self.spec.seed,
                        max_tiles=self.spec.max_tiles)  # type: ignore[arg-type]

    def components(self, metrics: list[str]) -> list[tuple[str, str]]:
        """Every (kind, name) whose code decides this run's results."""
        return [("task", self.task.name), ("dataset", self.spec.dataset), ("encoder", self.spec.encoder),
                ("generator", self.spec.generator), *(("metric", m) for m in metrics)]

    # ------------------------------------------------------------------ markers

    def _read_markers(self) -> dict[str, Any]:
        try:
            markers = json.loads(self.markers_path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.log(f"[yellow]{self.markers_path} is unreadable ({exc}); every stage is checked again "
                     "and training resumes from its checkpoints' own state[/]")
            return {}
        if not isinstance(markers, dict):
            self.log(f"[yellow]{self.markers_path} does not hold stage markers; every stage is checked again[/]")
            return {}
        return markers

    def marker(self, stage: str) -> dict[str, Any] | None:
        return self._markers.get(stage)

    def mark(self, stage: str, key: str, payload: Mapping[str, Any]) -> None:
        self._markers[stage] = {"key": key, "finished": time.time(), **payload}
        atomic_write_json(self.markers_path, self._markers)

    def done(self, stage: str, key: str) -> dict[str, Any] | None:
        m = self.marker(stage)
        if m is not None and m.get("key") == key:
            if stage not in self.resumed:
                self.resumed.append(stage)
            return m
        return None
