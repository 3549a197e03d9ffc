"""`pathkit run` orchestration: dataset -> tile -> extract -> fit -> predict -> score, resumably."""

from __future__ import annotations

import json
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from pathkit_core.contracts import (
    TASK_REPORT,
    Case,
    Dataset,
    Encoder,
    Generator,
    GeneratorSpec,
    PathkitError,
)
from pathkit_core.plugins import get_plugin_manager
from pathkit_core.workspace import (
    DEFAULT_WORKDIR,
    FileLock,
    atomic_write_json,
    atomic_write_text,
    atomic_write_with,
    collect_provenance,
    content_hash,
    sha256_file,
)

STAGES = ("dataset", "features", "fit", "predict", "score")

# `pathkit run` with no arguments: the embedded demo (a synthetic miniature of REG 2025).
DEMO_RUN: dict[str, Any] = {
    "dataset": "demo-reports",
    "encoder": "tiny-vit",
    "generator": "wsi-caption",
    # a one-layer WSI-Caption that learns the demo in about a minute on two CPU cores; the
    # benchmark protocol (PathBench) is the generator's and trainer's defaults, not this
    # (docs/report-generation.md, "The embedded demo")
    "hparams": {"d_model": 128, "d_ff": 256, "num_heads": 4, "num_layers": 1, "drop_prob_lm": 0.1},
    "train": {"max_epochs": 25, "lr": 2e-3, "batch_size": 4, "eval_batch_size": 16,
              "early_stop_patience": 6, "plateau_patience": 3},
    "max_tiles": 64,
}


@dataclass
class RunSpec:
    """Everything that determines one benchmark cell; its hash names the run folder."""

    dataset: str
    encoder: str
    generator: str
    metrics: list[str] = field(default_factory=list)
    workdir: Path = DEFAULT_WORKDIR
    dataset_root: Path | None = None
    dataset_options: dict[str, Any] = field(default_factory=dict)
    weights: Path | None = None
    hparams: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
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

    def identity(self) -> dict[str, Any]:
        """The fields that change results (not paths or worker counts)."""
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
            "weights": str(self.weights) if self.weights else None,
            # only when set, so that runs without them keep their folder names
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
        return cls(**data)


def load_run_config(path: str | Path) -> dict[str, Any]:
    """A TOML run config: top-level run options, optional [hparams], [train], [dataset_options]."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PathkitError(f"{path}: no such config file") from None
    except tomllib.TOMLDecodeError as exc:
        raise PathkitError(f"{path}: invalid TOML ({exc})") from exc
    return data.get("run", data)


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, dict[str, float]]
    baseline: dict[str, dict[str, float]] | None = None
    skipped_cases: dict[str, str] = field(default_factory=dict)
    resumed_stages: list[str] = field(default_factory=list)
    # summaries of every evaluated checkpoint ({"best": {...}, "last": {...}}), with their epochs
    checkpoints: dict[str, Any] = field(default_factory=dict)
    excluded_cases: dict[str, str] = field(default_factory=dict)


class RunContext:
    """A run folder and its stage markers: a stage whose marker matches its key is not redone."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.registry = get_plugin_manager()
        self.dataset_cls: type[Dataset] = self.registry.get("dataset", spec.dataset)  # type: ignore[assignment]
        self.encoder_cls: type[Encoder] = self.registry.get("encoder", spec.encoder)  # type: ignore[assignment]
        self.generator_cls: type[Generator] = self.registry.get("generator", spec.generator)  # type: ignore[assignment]
        task = self.dataset_cls.task
        if task not in self.generator_cls.tasks:
            raise PathkitError(
                f"generator {spec.generator!r} solves {', '.join(self.generator_cls.tasks) or 'no task'}, "
                f"not the {task!r} task of dataset {spec.dataset!r}"
            )
        self.task = task
        if spec.max_tiles == "auto":
            spec.max_tiles = self.generator_cls.default_max_tiles
        elif isinstance(spec.max_tiles, str):
            raise PathkitError(f"max_tiles must be a number of tiles, None or \"auto\", not {spec.max_tiles!r}")
        self.workdir = Path(spec.workdir)
        key = content_hash(spec.identity())
        self.run_dir = self.workdir / "runs" / spec.dataset.replace(":", "_") / spec.encoder / spec.generator / key
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.markers_path = self.run_dir / "stages.json"
        self.resumed: list[str] = []

    def marker(self, stage: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.markers_path.read_text()).get(stage)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def mark(self, stage: str, key: str, payload: Mapping[str, Any]) -> None:
        try:
            markers = json.loads(self.markers_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            markers = {}
        markers[stage] = {"key": key, "finished": time.time(), **payload}
        atomic_write_json(self.markers_path, markers)

    def done(self, stage: str, key: str) -> dict[str, Any] | None:
        m = self.marker(stage)
        if m is not None and m.get("key") == key:
            self.resumed.append(stage)
            return m
        return None


# --------------------------------------------------------------------------- stages


def dataset_options(spec: RunSpec, dataset_cls: type[Dataset], workdir: Path) -> dict[str, Any]:
    """The options a dataset is opened with: the run's, plus the `:view` of `name:view` as
    option "view", plus the run facts the dataset asks for in `run_options` ("encoder", "workdir")."""
    options = dict(spec.dataset_options)
    view = spec.dataset.partition(":")[2]
    if view:
        options.setdefault("view", view)
    facts = {"encoder": spec.encoder, "workdir": str(workdir)}
    for name in dataset_cls.run_options:
        if name in facts:
            options.setdefault(name, facts[name])
    return options


def open_dataset(spec: RunSpec, dataset_cls: type[Dataset], workdir: Path) -> Dataset:
    root = spec.dataset_root
    options = dataset_options(spec, dataset_cls, workdir)
    if root is None and dataset_cls.has_demo():
        demo_dir = workdir / "datasets" / dataset_cls.name
        with FileLock(workdir / "locks" / f"demo-{dataset_cls.name}.lock", timeout=600):
            root = dataset_cls(None, **options).make_demo(demo_dir)
    dataset = dataset_cls(root, **options)
    dataset.validate()
    return dataset


def split_cases(dataset: Dataset) -> dict[str, list[Case]]:
    splits = dataset.splits()
    for required in ("train", "val", "test"):
        if required not in splits:
            raise PathkitError(
                f"dataset {dataset.name!r} has no {required!r} split (has: {', '.join(splits)})"
            )
    return {name: list(dataset.cases(name)) for name in ("train", "val", "test")}


def features_for_cases(
    ctx: RunContext, cases: Sequence[Case]
) -> tuple[dict[str, tuple[Path, ...]], dict[str, str]]:
    """Feature files per case id, tiling and extracting slides that need it.

    Returns (features, missing) where `missing` maps case id to the reason it has none.
    """
    spec, encoder_cls = ctx.spec, ctx.encoder_cls
    found: dict[str, tuple[Path, ...]] = {}
    missing: dict[str, str] = {}
    from pathkit_core.wsi.slide import slide_id_for

    need_slides = sorted({s for c in cases if not c.features for s in c.slides}, key=str)
    usable: dict[str, Path] = {}
    failed: dict[str, str] = {}
    if need_slides:
        from pathkit_core.features.extract import extract_features
        from pathkit_core.features.store import failed_slides, usable_feature_files
        from pathkit_core.wsi.tiling import TilingParams, tile_slides

        tile_dir = ctx.workdir / "tiles" / encoder_cls.tile_spec.key()
        params = TilingParams(target_mpp=encoder_cls.tile_spec.mpp, tile_px=encoder_cls.tile_spec.tile_px)
        # a dataset may state its slides' mpp (Case.meta["mpp"], e.g. REG TIFFs whose resolution
        # tag is a 72-dpi placeholder); it overrides what the file says
        mpp_overrides = {str(s): float(c.meta["mpp"]) for c in cases if not c.features and c.meta.get("mpp")
                         for s in c.slides}
        tiled = tile_slides(need_slides, tile_dir, params, workers=max(spec.extract_workers, 1),
                            mpp_overrides=mpp_overrides or None)
        manifests = [r.manifest_path for r in tiled if r.status in ("ok", "skipped") and r.n_tiles > 0]
        for r in tiled:
            if r.status == "failed":
                failed[r.slide_id] = f"tiling failed: {r.reason}"
            elif r.n_tiles == 0:
                failed[r.slide_id] = "no tissue tiles"
        feature_dir = ctx.workdir / "features"
        encoder = encoder_cls()
        extract_features(
            encoder,
            manifests,
            feature_dir,
            weights_path=spec.weights,
            batch_size=spec.extract_batch_size,
            workers=spec.extract_workers,
            device=spec.device,
        )
        usable = usable_feature_files(feature_dir, encoder_cls.name)
        failed.update(failed_slides(feature_dir, encoder_cls.name))
    for case in cases:
        if case.features:
            absent = [p for p in case.features if not Path(p).exists()]
            if absent:
                missing[case.case_id] = f"feature file(s) not found: {', '.join(map(str, absent))}"
            else:
                found[case.case_id] = tuple(Path(p) for p in case.features)
            continue
        if not case.slides:
            missing[case.case_id] = "case has neither slides nor feature files"
            continue
        paths, reasons = [], []
        for slide in case.slides:
            sid = slide_id_for(slide)
            if sid in usable:
                paths.append(usable[sid])
            else:
                reasons.append(f"{sid}: {failed.get(sid, 'no features extracted')}")
        if paths and not reasons:
            found[case.case_id] = tuple(paths)
        else:
            missing[case.case_id] = "; ".join(reasons) or "no features"
    return found, missing


def baseline_predictions(task: str, train_targets: Sequence[Any], ids: Sequence[str]) -> dict[str, Any] | None:
    """The most-frequent train target for every case (most-frequent report / majority class)."""
    if not train_targets:
        return None
    try:
        most_common = Counter(_hashable(t) for t in train_targets).most_common(1)[0][0]
    except TypeError:
        return None
    return {i: most_common for i in ids}


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value


def make_selection(name: str | None, dataset: str, task: str,
                   options: Mapping[str, Any] | None = None) -> Callable | None:
    """`"metric:key"` -> a function scoring validation predictions with that metric plugin,
    passing `options` (the dataset's `selection_options`, e.g. leaving METEOR out per epoch)."""
    if not name:
        return None
    metric_name, _, key = name.partition(":")
    from pathkit_core.evaluation.runner import score

    def selection(preds: Mapping[str, Any], refs: Mapping[str, Any]) -> float:
        ids = list(refs)
        result = score([metric_name], preds, refs, ids=ids, dataset=dataset,
                       context={"options": dict(options or {})})
        values = result.summary[metric_name]
        if key not in values:
            raise PathkitError(f"selection metric {metric_name!r} has no score {key!r} (has: {sorted(values)})")
        return float(values[key])

    return selection


def run_pipeline(spec: RunSpec, *, log: Callable[[str], None] = print) -> RunResult:
    """Run (or resume) one dataset x encoder x generator cell and return its scores."""
    from pathkit_core.evaluation.runner import score, write_results
    from pathkit_core.training.bags import BagDataset, BagSpec
    from pathkit_core.training.trainer import TrainConfig, fit, load_checkpoint, predict, seed_everything

    ctx = RunContext(spec)
    lock = FileLock(ctx.run_dir / "run.lock", timeout=0)
    with lock:
        t_start = time.perf_counter()
        log(f"run folder: {ctx.run_dir}")
        dataset = open_dataset(spec, ctx.dataset_cls, ctx.workdir)
        cases = split_cases(dataset)
        split_ids = {k: [c.case_id for c in v] for k, v in cases.items()}
        split_hash = content_hash(split_ids)
        # Cases the dataset left out (filters, QC gating) are counted in the results, never dropped silently.
        excluded = dict(dataset.excluded_cases())
        ctx.mark("dataset", split_hash, {"n_cases": {k: len(v) for k, v in split_ids.items()},
                                         "root": str(dataset.root), "n_excluded": len(excluded)})
        if excluded:
            log(f"the dataset excluded {len(excluded)} case(s) (filters and QC; reasons in metrics.json)")

        # features (tiling and extraction resume on their own through their caches)
        features: dict[str, tuple[Path, ...]] = {}
        skipped: dict[str, str] = {}
        for split_name, split in cases.items():
            found, missing = features_for_cases(ctx, split)
            features.update(found)
            if missing and not spec.skip_missing:
                listing = "; ".join(f"{cid} ({why})" for cid, why in list(missing.items())[:20])
                more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
                raise PathkitError(
                    f"{len(missing)} {split_name} case(s) have no usable features: {listing}{more}. "
                    "Fix them or rerun with --skip-missing to leave them out (they are recorded)."
                )
            skipped.update({cid: f"{split_name}: {why}" for cid, why in missing.items()})
        ctx.mark("features", content_hash({"split": split_hash, "encoder": spec.encoder}),
                 {"skipped": skipped})
        if skipped:
            log(f"skipping {len(skipped)} case(s) without usable features (recorded in results)")

        def bags(split_name: str) -> BagDataset:
            specs = [BagSpec(c.case_id, features[c.case_id], c.target)
                     for c in cases[split_name] if c.case_id in features]
            return BagDataset(specs, max_tiles=spec.max_tiles, seed=spec.seed)

        train, val, test = bags("train"), bags("val"), bags("test")
        if len(test) == 0:
            raise PathkitError("the test split has no case with usable features")
        feature_dim = int(train[0]["features"].shape[1]) if len(train) else 0
        generator = ctx.generator_cls()
        hparams = generator.hparams(spec.hparams)
        train_targets = [c.target for c in cases["train"] if c.case_id in features]
        gspec = GeneratorSpec(task=ctx.task, feature_dim=feature_dim, hparams=hparams,
                              train_targets=train_targets, dataset=spec.dataset)
        train_cfg = TrainConfig.from_mapping({**generator.default_train, **spec.train,
                                              "seed": spec.seed, "cpu": spec.cpu})
        selection_name = spec.selection or ctx.dataset_cls.selection_metric
        ckpt_dir = ctx.run_dir / "checkpoints"
        fit_id: dict[str, Any] = {"split": split_hash, "skipped": sorted(skipped), "id": spec.identity()}
        if spec.frozen_from is not None:
            ckpt_dir = frozen_checkpoints(Path(spec.frozen_from))
            fit_id["frozen"] = {p.name: sha256_file(p) for p in sorted(ckpt_dir.glob("*.safetensors"))}
        fit_key = content_hash(fit_id)
        checkpoint_names = list(spec.checkpoints or ctx.dataset_cls.evaluate_checkpoints)
        if "best" not in checkpoint_names:
            raise PathkitError(f"checkpoints {checkpoint_names} must include \"best\" (the reported one)")

        metrics = list(spec.metrics) or list(ctx.dataset_cls.default_metrics)
        if not metrics:
            raise PathkitError(f"no metric given and dataset {spec.dataset!r} declares no default; use --metric")
        score_key = content_hash({"fit": fit_key, "metrics": metrics,
                                  **({"checkpoints": checkpoint_names} if checkpoint_names != ["best"] else {})})
        if ctx.done("score", score_key) and (ctx.run_dir / "metrics.json").exists():
            saved = json.loads((ctx.run_dir / "metrics.json").read_text())
            log("this cell is finished; reusing its results")
            return RunResult(ctx.run_dir, saved["metrics"], saved.get("baseline_most_frequent"),
                             saved.get("skipped_cases", {}), ctx.resumed, saved.get("checkpoints", {}),
                             saved.get("excluded_cases", {}))

        model = None
        if spec.frozen_from is not None:
            log(f"frozen weights from {spec.frozen_from}: no training")
        elif not ctx.done("fit", fit_key):
            seed_everything(spec.seed)  # the model's initial weights follow the run seed
            model = generator.build(gspec)
            result = fit(model, train, val, train_cfg, ckpt_dir,
                         selection=make_selection(selection_name, spec.dataset, ctx.task,
                                                   ctx.dataset_cls.selection_options),
                         checkpoint_config={"generator": spec.generator, "spec": _spec_json(gspec, model)})
            ctx.mark("fit", fit_key, {"best_epoch": result.best_epoch, "best_score": result.best_score,
                                      "epochs_run": result.epochs_run, "selection": selection_name or "val_loss"})
        fit_marker = (frozen_fit_marker(Path(spec.frozen_from)) if spec.frozen_from is not None
                      else ctx.marker("fit")) or {}
        log(f"best epoch {fit_marker.get('best_epoch')} ({selection_name or 'val_loss'} "
            f"{fit_marker.get('best_score', float('nan')):.4f})")

        evaluated: dict[str, dict[str, Any]] = {}
        for ckpt_name in checkpoint_names:
            suffix = "" if ckpt_name == "best" else f"_{ckpt_name}"
            predictions_path = ctx.run_dir / f"predictions{suffix}.jsonl"
            weights = ckpt_dir / f"{ckpt_name}.safetensors"
            if not weights.exists():
                raise PathkitError(f"no {ckpt_name!r} checkpoint at {weights}")
            saved = json.loads(weights.with_suffix(".json").read_text())
            if not ctx.done(f"predict{suffix}", fit_key) or not predictions_path.exists():
                gspec.state = saved["config"]["spec"].get("state", {})
                model = generator.build(gspec)
                load_checkpoint(weights, model)
                preds = predict(model, test, batch_size=train_cfg.eval_batch_size or train_cfg.batch_size,
                                cfg=train_cfg)
                lines = [json.dumps({"id": cid, "prediction": preds[cid]}, default=_jsonable)
                         for cid in test.case_ids]
                atomic_write_text(predictions_path, "\n".join(lines) + "\n")
                if spec.export_attention and hasattr(model, "tile_attention"):
                    from pathkit_core.evaluation.attention import export_run_attention

                    export_run_attention(model, test, cases["test"], ctx.run_dir / "attention" / ckpt_name,
                                         tile_dir=ctx.workdir / "tiles" / ctx.encoder_cls.tile_spec.key())
                ctx.mark(f"predict{suffix}", fit_key, {"n": len(lines)})
            predictions = {}
            for line in predictions_path.read_text().splitlines():
                record = json.loads(line)
                predictions[record["id"]] = record["prediction"]
            evaluated[ckpt_name] = {"predictions": predictions,
                                    "epoch": (saved.get("trainer_state") or {}).get("epoch")}
        predictions = evaluated["best"]["predictions"]

        references = test.targets
        ids = test.case_ids
        checkpoint_scores: dict[str, Any] = {}
        for ckpt_name, entry in evaluated.items():
            if ckpt_name == "best":
                continue
            other = score(metrics, entry["predictions"], references, ids=ids, dataset=spec.dataset)
            checkpoint_scores[ckpt_name] = {"epoch": entry["epoch"], "metrics": other.summary}
            if other.per_case is not None:
                atomic_write_with(ctx.run_dir / f"per_case_{ckpt_name}.parquet", other.per_case.write_parquet)
        scored = score(metrics, predictions, references, ids=ids, dataset=spec.dataset)
        if checkpoint_scores:
            checkpoint_scores = {"best": {"epoch": evaluated["best"]["epoch"], "metrics": scored.summary},
                                 **checkpoint_scores}
        baseline_preds = baseline_predictions(ctx.task, train_targets, ids)
        baseline = (score(metrics, baseline_preds, references, ids=ids, dataset=spec.dataset).summary
                    if baseline_preds else None)
        extra: dict[str, Any] = {"run": spec.identity(), "n_test_cases": len(ids),
                                 "skipped_cases": skipped, "baseline_most_frequent": baseline}
        if checkpoint_scores:
            extra["checkpoints"] = checkpoint_scores
        if excluded:
            extra["excluded_cases"] = excluded
            extra["n_excluded_cases"] = len(excluded)
        if ctx.task == TASK_REPORT:
            distinct = len({str(p) for p in predictions.values()})
            extra["distinct_prediction_fraction"] = distinct / max(len(predictions), 1)
        write_results(scored, ctx.run_dir, extra=extra)
        ctx.mark("score", score_key, {})
        provenance = collect_provenance(
            config=_jsonable(asdict(spec)),
            seeds={"seed": spec.seed},
            inputs={"dataset_root": str(dataset.root), "split_hash": split_hash,
                    "feature_files": len(features)},
            plugin_versions=ctx.registry.distributions(),
        )
        provenance["wall_seconds"] = time.perf_counter() - t_start
        provenance["resumed_stages"] = ctx.resumed
        atomic_write_json(ctx.run_dir / "provenance.json", provenance)
        try:
            from pathkit_core.report.html import write_run_report

            write_run_report(ctx.run_dir)
        except ImportError:
            pass
        return RunResult(ctx.run_dir, scored.summary, baseline, skipped, ctx.resumed, checkpoint_scores, excluded)


def frozen_checkpoints(run_dir: Path) -> Path:
    """The checkpoint folder of a finished run whose weights are applied frozen to another cohort."""
    ckpt_dir = Path(run_dir) / "checkpoints"
    if not (ckpt_dir / "best.safetensors").exists():
        raise PathkitError(f"frozen_from: {run_dir} holds no trained checkpoints ({ckpt_dir}/best.safetensors)")
    return ckpt_dir


def frozen_fit_marker(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(run_dir) / "stages.json").read_text()).get("fit")
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _spec_json(gspec: GeneratorSpec, model: Any) -> dict[str, Any]:
    state = model.export_state() if hasattr(model, "export_state") else {}
    return {"task": gspec.task, "feature_dim": gspec.feature_dim, "hparams": gspec.hparams,
            "dataset": gspec.dataset, "state": state}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value
