"""Repeated patient-level splits and reciprocal cross-site testing: runs the folds, aggregates mean/std.

For a train cohort A and a test cohort B the four settings of GOLDMARK's Figure 3 are
A-CV (train on fold k of A, test on its held-out part), A->B (the fold-k weights of A,
frozen, applied to every slide of B), and reciprocally B-CV and B->A. Each is a normal
`run_pipeline` cell (the frozen ones with `frozen_from`), so everything resumes and caches.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathkit_core.contracts import PathkitError
from pathkit_core.workspace import DEFAULT_WORKDIR, atomic_write_json, atomic_write_with

FOLD_COLUMNS = ("dataset", "encoder", "generator", "setting", "train_cohort", "test_cohort", "fold", "checkpoint",
                "epoch", "metric", "key", "value", "run_dir")


@dataclass(frozen=True)
class Setting:
    """Train on `train_cohort`; test on its own held-out part (CV) or, frozen, on `test_cohort`."""

    train_cohort: str | None
    test_cohort: str | None

    @property
    def external(self) -> bool:
        return self.test_cohort is not None and self.test_cohort != self.train_cohort

    @property
    def label(self) -> str:
        if not self.external:
            return f"{self.train_cohort}-CV" if self.train_cohort else "CV"
        return f"{self.train_cohort}->{self.test_cohort}"


# Encoder rank-sum tables (`pathkit crossval`) live in this folder under the leaderboards folder.
RANKSUM_SUBDIR = "crossval"


def crossval_dir(workdir: str | Path, dataset: str, encoder: str, generator: str) -> Path:
    """Where `pathkit crossval` keeps one dataset x encoder x generator's folds and summary."""
    from pathkit_core.workspace import confined

    return confined(Path(workdir) / "crossval", dataset.replace(":", "_"), encoder, generator,
                    what=f"crossval folder of {dataset} x {encoder} x {generator}")


def settings_for(train_cohort: str | None, test_cohort: str | None, reciprocal: bool = True) -> list[Setting]:
    """A-CV and A->B, then (reciprocal) B-CV and B->A: the four settings of GOLDMARK Figure 3."""
    if test_cohort is not None and train_cohort is None:
        raise PathkitError("crossval: --test-cohort needs --train-cohort (which cohort the weights come from)")
    out = [Setting(train_cohort, train_cohort)]
    if test_cohort is not None and test_cohort != train_cohort:
        out.append(Setting(train_cohort, test_cohort))
        if reciprocal:
            out += [Setting(test_cohort, test_cohort), Setting(test_cohort, train_cohort)]
    return out


@dataclass
class CrossValResult:
    """Per-fold rows, their mean/std per setting, checkpoint and score, and where they were written."""

    rows: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    out_dir: Path
    run_dirs: dict[str, list[Path]] = field(default_factory=dict)


def _fold_rows(base: dict[str, Any], setting: Setting, fold: int, result: Any) -> list[dict[str, Any]]:
    checkpoints = dict(result.checkpoints or {})
    if not checkpoints:
        checkpoints = {"best": {"epoch": None, "metrics": result.summary}}
    rows = []
    for ckpt, entry in checkpoints.items():
        for metric, values in (entry.get("metrics") or {}).items():
            for key, value in values.items():
                rows.append({**base, "setting": setting.label, "train_cohort": setting.train_cohort or "",
                             "test_cohort": (setting.test_cohort or setting.train_cohort or ""), "fold": fold,
                             "checkpoint": ckpt, "epoch": entry.get("epoch"), "metric": metric, "key": key,
                             "value": float(value), "run_dir": str(result.run_dir)})
    return rows


def aggregate(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean, sample standard deviation (ddof 1) and count over folds of every score."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    keys = ("dataset", "encoder", "generator", "setting", "train_cohort", "test_cohort", "checkpoint", "metric", "key")
    for r in rows:
        groups[tuple(r[k] for k in keys)].append(float(r["value"]))
    out = []
    for group, values in groups.items():
        finite = [v for v in values if math.isfinite(v)]
        mean = sum(finite) / len(finite) if finite else math.nan
        sd = (math.sqrt(sum((v - mean) ** 2 for v in finite) / (len(finite) - 1)) if len(finite) > 1 else math.nan)
        out.append({**dict(zip(keys, group, strict=True)), "mean": mean, "std": sd, "n_folds": len(finite)})
    return out


def run_crossval(
    base: Mapping[str, Any],
    *,
    folds: Sequence[int] = (1, 2, 3, 4, 5),
    train_cohort: str | None = None,
    test_cohort: str | None = None,
    reciprocal: bool = True,
    log: Callable[[str], None] = print,
    on_run: Callable[[str], None] | None = None,
) -> CrossValResult:
    """Run every fold of every setting for one dataset x encoder x generator and aggregate.

    `base` is a RunSpec mapping (dataset, encoder, generator, workdir, ...); its
    `dataset_options` get `fold`, `train_cohort` and `test_cohort` per run.
    """
    from pathkit_core.run import RunSpec, run_pipeline

    if not folds:
        raise PathkitError("crossval: no folds given")
    spec0 = RunSpec.from_mapping(dict(base))
    settings = settings_for(train_cohort, test_cohort, reciprocal)
    ident = {"dataset": spec0.dataset, "encoder": spec0.encoder, "generator": spec0.generator}
    rows: list[dict[str, Any]] = []
    run_dirs: dict[str, list[Path]] = defaultdict(list)
    cv_runs: dict[tuple[str | None, int], Path] = {}
    # Cross-validation settings first: the external ones reuse their frozen weights.
    for setting in sorted(settings, key=lambda s: s.external):
        for fold in folds:
            options = dict(spec0.dataset_options)
            options["fold"] = int(fold)
            if setting.train_cohort is not None:
                options["train_cohort"] = setting.train_cohort
                options["test_cohort"] = setting.test_cohort or setting.train_cohort
            values = {**dict(base), "dataset_options": options}
            if setting.external:
                values["frozen_from"] = cv_runs[(setting.train_cohort, int(fold))]
            if on_run is not None:
                on_run(f"{spec0.dataset} / {spec0.encoder} / {spec0.generator}: {setting.label}, fold {fold}")
            result = run_pipeline(RunSpec.from_mapping(values), log=log)
            if not setting.external:
                cv_runs[(setting.train_cohort, int(fold))] = result.run_dir
            run_dirs[setting.label].append(result.run_dir)
            rows.extend(_fold_rows(ident, setting, int(fold), result))
    summary = aggregate(rows)
    out_dir = crossval_dir(spec0.workdir or DEFAULT_WORKDIR, spec0.dataset, spec0.encoder, spec0.generator)
    write_crossval(out_dir, rows, summary, settings=[s.label for s in settings], folds=list(folds))
    return CrossValResult(rows, summary, out_dir, dict(run_dirs))


def write_crossval(out_dir: Path, rows: Sequence[Mapping[str, Any]], summary: Sequence[Mapping[str, Any]],
                   **facts: Any) -> None:
    import polars as pl

    fold_frame = pl.DataFrame([{k: r.get(k) for k in FOLD_COLUMNS} for r in rows],
                              schema_overrides={"epoch": pl.Int64})
    atomic_write_with(out_dir / "folds.csv", fold_frame.write_csv)
    atomic_write_with(out_dir / "summary.csv", pl.DataFrame(list(summary)).write_csv)
    atomic_write_json(out_dir / "summary.json", {"summary": list(summary), **facts})


__all__ = ["CrossValResult", "Setting", "aggregate", "run_crossval", "settings_for", "write_crossval"]
