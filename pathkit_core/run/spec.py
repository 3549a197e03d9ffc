"""What one benchmark cell is: `RunSpec`, read from the command line or a TOML run config."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import DEFAULT_WORKDIR

# Tables of a run config besides the top-level run options.
CONFIG_TABLES = ("hparams", "train", "dataset_options", "tiling", "metric_options")


@dataclass
class RunSpec:
    """Everything that determines one benchmark cell; its identity names the run folder."""

    dataset: str
    encoder: str
    generator: str
    metrics: list[str] = field(default_factory=list)
    # Options per metric ({"crqs": {"variants": True}}) over the dataset's own metric options;
    # they key the score stage only (a change rescores, nothing else reruns).
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    workdir: Path = DEFAULT_WORKDIR
    dataset_root: Path | None = None
    dataset_options: dict[str, Any] = field(default_factory=dict)
    weights: Path | None = None
    hparams: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    # Slide tiling beyond the encoder's tile spec (TilingParams fields: overlap, stride_px, ...),
    # over the dataset's own `tiling_options`.
    tiling: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    # "auto": the generator's `default_max_tiles` if it declares one (gma-mil: None, every tile),
    # else PathBench's first 10,000 tiles; None keeps every tile.
    max_tiles: int | str | None = "auto"
    selection: str | None = None
    skip_missing: bool = False
    extract_batch_size: int = 32
    extract_workers: int = 0
    device: str | None = None
    cpu: bool = False
    # Checkpoints evaluated on the test split (None: the dataset's `evaluate_checkpoints`, else "best").
    checkpoints: list[str] | None = None
    # Evaluate the checkpoints of this earlier run folder instead of training (frozen-weight external test).
    frozen_from: Path | None = None
    export_attention: bool = True
    # "i/N": tile and extract only shard i of N of the slides, then stop (a cluster's feature
    # stage; also read from a Slurm array task); a final run without a shard trains and scores.
    shard: str | None = None

    def identity(self) -> dict[str, Any]:
        """The fields that change results (not paths or worker counts). The weights file is not
        here by path: the sha256 of the weights actually loaded keys the feature and fit stages,
        so the same weights found through --weights or $PATHKIT_WEIGHTS_DIR give the same run."""
        return {
            "dataset": self.dataset,
            "dataset_options": self.dataset_options,
            "encoder": self.encoder,
            "generator": self.generator,
            "hparams": self.hparams,
            "train": self.train,
            "seed": self.seed,
            "max_tiles": self.max_tiles,
            "selection": self.selection,
            # only when set, so that runs without them keep their folder names
            **({"tiling": self.tiling} if self.tiling else {}),
            **({"frozen_from": str(self.frozen_from)} if self.frozen_from else {}),
        }

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> RunSpec:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise PathkitError(f"unknown run option(s) {unknown}; known: {sorted(names)}")
        data = dict(values)
        for key in ("workdir", "dataset_root", "weights", "frozen_from"):
            if data.get(key) is not None:
                data[key] = Path(data[key])
        if isinstance(data.get("metrics"), str):
            data["metrics"] = [m.strip() for m in data["metrics"].split(",") if m.strip()]
        for table in CONFIG_TABLES:
            if not isinstance(data.get(table, {}), Mapping):
                raise PathkitError(f"run option {table!r} must be a table of KEY = VALUE, not {data[table]!r}")
        return cls(**data)


def load_run_config(path: str | Path) -> dict[str, Any]:
    """A TOML run config: top-level run options and optional [hparams], [train],
    [dataset_options], [tiling] and [metric_options.METRIC] tables. Components are named, never
    imported: a config can only choose among the registered plugins (`pathkit list`)."""
    data = read_toml(path, "config")
    return data.get("run", data)


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """A TOML file (a run config, a suite); errors name the file and say what is wrong with it."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PathkitError(f"{path}: no such {what} file") from None
    except IsADirectoryError:
        raise PathkitError(f"{path}: is a folder, not a TOML {what} file") from None
    except tomllib.TOMLDecodeError as exc:
        raise PathkitError(f"{path}: invalid TOML ({exc})") from exc
