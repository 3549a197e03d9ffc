"""Stage 2, features: each case's model input, from its feature files, its slides (tiled at the
encoder's tile spec and the task's tiling, then extracted) or its whole images (encoded one image
each). Tiling, extraction and image encoding resume on their own through their caches."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core.contracts import INPUT_FEATURES, INPUT_IMAGES, Case, PathkitError
from pathkit_core.features.qc import QC_COLUMNS, QC_NUMBERS
from pathkit_core.features.store import read_feature_meta_cached
from pathkit_core.run.identity import features_identity, source_identity
from pathkit_core.run.spec import RunSpec
from pathkit_core.run.state import FeatureStage, RunState
from pathkit_core.workspace import atomic_write_json, confined, content_hash

# How often a run waiting for slides another process is extracting looks again.
LOCK_POLL_SECONDS = 2.0


def store_folders(workdir: Path, tile_key: str, tiling: Mapping[str, Any]) -> tuple[Path, Path]:
    """(tile store, feature store): `tiles/<spec>` and `features` for the encoder's own tiling; a
    tiling with overrides (overlap, stride) gets folders of its own, so stores of one slide tiled
    two ways never overwrite each other."""
    if not tiling:
        return workdir / "tiles" / tile_key, workdir / "features"
    suffix = content_hash(dict(tiling), 8)
    return workdir / "tiles" / f"{tile_key}-{suffix}", workdir / f"features-{suffix}"


def slide_values(case: Case, key: str) -> dict[str, Any]:
    """A per-slide value a dataset states in `Case.meta[key]` (`slide_reader`, `tissue_geojson`, `mpp`:
    one value for every slide, or one per slide in `slides` order, None where there is none), by path."""
    given = case.meta.get(key)
    if given is None:
        return {}
    values = list(given) if isinstance(given, list | tuple) else [given] * len(case.slides)
    if len(values) != len(case.slides):
        raise PathkitError(f"case {case.case_id}: meta {key} gives {len(values)} values for {len(case.slides)} slides")
    return {str(s): v for s, v in zip(case.slides, values, strict=True) if v not in (None, "")}


def slide_mpps(case: Case) -> dict[str, float]:
    """The level-0 mpp a dataset states for the case's slides (`slide_values` of "mpp"), by path. It
    overrides what the file says (e.g. REG TIFFs, whose resolution tag is a 72-dpi placeholder)."""
    return {path: float(mpp) for path, mpp in slide_values(case, "mpp").items()}


def slide_tiling_inputs(cases: Sequence[Case]) -> dict[str, Any]:
    """What the cases' datasets state per slide, as `tile_slides` takes it: the level-0 mpp
    (`mpp_overrides`), the reader (`slide_readers`) and the edited tissue mask (`tissue_geojsons`)
    by path (a cohort table's mpp, slide_reader and tissue_geojson columns; docs/wsi.md)."""
    mpps = {path: mpp for c in cases for path, mpp in slide_mpps(c).items()}
    readers = {p: str(v) for c in cases for p, v in slide_values(c, "slide_reader").items()}
    masks = {p: str(v) for c in cases for p, v in slide_values(c, "tissue_geojson").items()}
    return {"mpp_overrides": mpps or None, "slide_readers": readers or None, "tissue_geojsons": masks or None}


def mpp_fix(dataset: Any) -> str:
    """How the user of `pathkit run` gives a slide's mpp: the dataset's mpp option, when it has one."""
    option = next((o for o in dataset.option_table if o.name == "mpp"), None)
    if option is None and dataset.option_table:
        return (f"a dataset that states its slides' mpp (dataset {dataset.name!r} has no mpp option; "
                f"`pathkit info {dataset.name}`)")
    meaning = f" ({option.help})" if option is not None and option.help else ""
    return f"--dataset-option mpp=MPP{meaning}"


def _slide_inputs(spec: RunSpec, encoder_cls: Any, workdir: Path, cases: Sequence[Case],
                  tiling: Mapping[str, Any], log: Callable[[str], None] = print, fix: str | None = None,
                  shard: Any = None) -> tuple[dict[str, Path], dict[str, str]]:
    """Tile and extract every slide the cases need (this `shard`'s only, when given); (usable
    feature file by slide id, failures)."""
    from pathkit_core.features.extract import extract_features
    from pathkit_core.features.store import failed_slides, usable_feature_files
    from pathkit_core.wsi.tiling import TilingParams, low_tissue_note, tile_slides

    slides = sorted({s for c in cases for s in c.slides}, key=str)
    if not slides:
        return {}, {}
    tile_spec = encoder_cls.tile_spec
    try:
        # a field of view in micrometres (`tile_um`) replaces the encoder's tile size in pixels
        base = {"target_mpp": tile_spec.mpp, "tile_px": None if tiling.get("tile_um") else tile_spec.tile_px}
        params = TilingParams(**{**base, **dict(tiling)})
    except TypeError as exc:
        raise PathkitError(f"tiling options {dict(tiling)}: {exc}") from None
    per_slide = slide_tiling_inputs(cases)
    tile_dir, feature_dir = store_folders(workdir, tile_spec.key(), tiling)
    # The run owns the workspace's stores: a manifest made from another version of the slide,
    # another mpp or by other tiling code is replaced (and so its features re-extracted), never
    # reported stale while its old features are used.
    tiled = tile_slides(slides, tile_dir, params, workers=max(spec.extract_workers, 1),
                        mpp_fix=fix, shard=shard, overwrite=True, code_key=tiling_code(params.segmenter),
                        scenes=False, **per_slide)  # a case's slides as its dataset names them
    # the cohort-minimum flag in one line for all the slides (every split's are tiled in this one call)
    note = low_tissue_note(tiled, params)
    if note:
        log(f"note: {note}")
    failed: dict[str, str] = {}
    for r in tiled:
        if r.status == "failed":
            failed[r.slide_id] = f"tiling failed: {r.reason}"
        elif r.n_tiles == 0:
            failed[r.slide_id] = "no tissue tiles"
    manifests = [r.manifest_path for r in tiled if r.status in ("ok", "skipped") and r.n_tiles > 0]
    encoder = encoder_cls()
    while manifests:
        results = extract_features(encoder, manifests, feature_dir, weights_path=spec.weights,
                                   batch_size=spec.extract_batch_size, workers=spec.extract_workers,
                                   device=spec.device, shard=shard, code_key=extraction_code(encoder_cls))
        # Slides another live process is extracting (another run on this workspace, a shard):
        # wait for it rather than report them missing; a dead owner's lock is broken on retry.
        locked = {r.slide_id for r in results if r.status == "locked"}
        if locked:
            owner = next(r.reason for r in results if r.status == "locked")
            log(f"waiting for {len(locked)} slide(s) another process is extracting ({owner})")
            time.sleep(LOCK_POLL_SECONDS)
        manifests = [m for m in manifests if Path(m).stem in locked]
    scanned = failed_slides(feature_dir, encoder_cls.name)
    failed.update(scanned)
    usable = usable_feature_files(feature_dir, encoder_cls.name, failed=scanned)
    # a slide whose tiling failed now has no current features, whatever an earlier run left
    return {sid: path for sid, path in usable.items() if sid not in failed}, failed


def tiling_code(segmenter: str) -> str:
    """A digest of the code that makes a slide's tile manifest: the core's slide handling, the slide
    readers' packages and the package of the tissue segmenter in use (the default `otsu` is `pathkit_tissue`'s)."""
    from pathkit_core.wsi.reader_choice import reader_packages
    from pathkit_core.wsi.segmentation import get_segmenter

    return source_identity("pathkit_core.wsi", *reader_packages(), get_segmenter(segmenter).__module__.split(".")[0])


def extraction_code(encoder_cls: Any) -> str:
    """A digest of the code that makes a slide's features: the core's slide reading and
    extraction, the slide readers' packages and the module that defines the encoder (and its package)."""
    from pathkit_core.wsi.reader_choice import reader_packages

    module = encoder_cls.__module__
    return source_identity("pathkit_core.wsi", "pathkit_core.features", *reader_packages(), module.split(".")[0])


def _image_inputs(spec: RunSpec, encoder_cls: Any, workdir: Path, cases: Sequence[Case],
                  dataset_name: str) -> tuple[dict[str, Any], dict[str, str]]:
    from pathkit_core.features.images import encode_images

    if not cases:
        return {}, {}
    result = encode_images(encoder_cls(), [(c.case_id, c.images[0]) for c in cases],
                           confined(workdir / "image-features", dataset_name.replace(":", "_"),
                                    what=f"image features of dataset {dataset_name!r}"),
                           weights_path=spec.weights, batch_size=spec.extract_batch_size,
                           workers=spec.extract_workers, device=spec.device, code_key=extraction_code(encoder_cls))
    return result.rows, result.failed


def qc_problem(path: Path, workdir: Path) -> str | None:
    """Why a feature file fails QC (NaN/Inf values, degenerate features, no rows), or None.

    A pathkit file whose extraction recorded its QC is judged by that record (its checksum is
    verified whenever it is read); any other file (a dataset's own, an h5 import) is checked once
    and the verdict cached in the workspace by the file's content identity.
    """
    from pathkit_core.run.identity import feature_file_digest

    if path.suffix == ".safetensors":
        try:
            meta = read_feature_meta_cached(path)
        except PathkitError as exc:
            return str(exc)
        if meta.get("status") == "ok" and meta.get("qc"):
            return None
        if meta.get("status") == "failed":
            return f"failed QC when extracted: {meta.get('failure_reason') or 'see its metadata'}"
    cache = workdir / "qc" / f"{content_hash(feature_file_digest(path), 32)}.json"
    try:
        verdict = json.loads(cache.read_text())
    except (OSError, json.JSONDecodeError):
        from pathkit_core.features.qc import compute_qc
        from pathkit_core.features.store import load_feature_file

        report = compute_qc(load_feature_file(path).features)
        verdict = {"status": report.status, "reason": report.reason, "file": str(path)}
        atomic_write_json(cache, verdict)
    return None if verdict.get("status") == "ok" else f"failed QC: {verdict.get('reason')}"


def case_inputs(spec: RunSpec, encoder_cls: Any, workdir: Path, cases: Sequence[Case], tiling: Mapping[str, Any],
                dataset_name: str, log: Callable[[str], None] = print, fix: str | None = None,
                ) -> tuple[dict[str, Any], dict[str, str]]:
    """(usable input by case id, reason by case id for those without one)."""
    from pathkit_core.wsi.slide import slide_id_for

    found: dict[str, Any] = {}
    missing: dict[str, str] = {}
    with_slides = [c for c in cases if c.input_kind not in (INPUT_FEATURES, INPUT_IMAGES)]
    usable, failed = _slide_inputs(spec, encoder_cls, workdir, with_slides, tiling, log, fix)
    images, image_failed = _image_inputs(spec, encoder_cls, workdir,
                                         [c for c in cases if c.input_kind == INPUT_IMAGES], dataset_name)
    for case in cases:
        if case.input_kind == INPUT_FEATURES:
            absent = [p for p in case.features if not Path(p).exists()]
            problems = [f"{Path(p).name}: {why}" for p in case.features if not absent
                        for why in [qc_problem(Path(p), workdir)] if why]
            if absent:
                missing[case.case_id] = f"feature file(s) not found: {', '.join(map(str, absent))}"
            elif problems:
                missing[case.case_id] = "; ".join(problems)
            else:
                found[case.case_id] = tuple(Path(p) for p in case.features)
        elif case.input_kind == INPUT_IMAGES:
            if case.case_id in images:
                found[case.case_id] = images[case.case_id]
            else:
                missing[case.case_id] = image_failed.get(case.case_id, "image not encoded")
        elif not case.slides:
            missing[case.case_id] = "case has neither slides, images nor feature files"
        else:
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


def feature_stage(spec: RunSpec, encoder_cls: Any, workdir: Path, cases: Mapping[str, Sequence[Case]],
                  tiling: Mapping[str, Any], dataset_name: str, log: Callable[[str], None] = print,
                  dataset: Any = None) -> FeatureStage:
    """Inputs for every split; cases without one stop the run unless `skip_missing`. A slide
    without a usable mpp is reported with the fix that fits `pathkit run` on `dataset`."""
    stage = FeatureStage()
    fix = mpp_fix(dataset) if dataset is not None else None
    # every split's slides in one pass: one tiling pool and one encoder load for the whole run
    every = [c for split in cases.values() for c in split]
    found_all, missing_all = case_inputs(spec, encoder_cls, workdir, every, tiling, dataset_name, log, fix)
    for split_name, split in cases.items():
        stage.inputs.update({c.case_id: found_all[c.case_id] for c in split if c.case_id in found_all})
        missing = {c.case_id: missing_all[c.case_id] for c in split if c.case_id in missing_all}
        if missing and not spec.skip_missing:
            listing = "; ".join(f"{cid} ({why})" for cid, why in list(missing.items())[:20])
            more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise PathkitError(
                f"{len(missing)} {split_name} case(s) have no usable features: {listing}{more}. "
                "Fix them or rerun with --skip-missing to leave them out (they are recorded)."
            )
        stage.skipped.update({cid: f"{split_name}: {why}" for cid, why in missing.items()})
    return stage


def _shard_stage(state: RunState, tiling: Mapping[str, Any]) -> RunState:
    """A cluster's feature stage: tile and extract this shard's slides of every split, nothing else;
    the run's result is the shard's failures."""
    from pathkit_core.run.state import RunResult
    from pathkit_core.shard import shard_summary
    from pathkit_core.wsi.slide import slide_id_for

    ctx, ds, outer = state.ctx, state.dataset, state.shard.outer()
    every = [c for split in ds.cases.values() for c in split if c.input_kind not in (INPUT_FEATURES, INPUT_IMAGES)]
    slides = {slide_id_for(s) for c in every for s in c.slides}
    mine = {s for s in slides if outer.owns(s)}
    ctx.log(shard_summary(outer, len(mine), len(slides)))
    _, failed = _slide_inputs(state.spec, ctx.encoder_cls, ctx.workdir, every, tiling, ctx.log, mpp_fix(ds.dataset),
                              state.shard)
    failed = {s: why for s, why in failed.items() if s in mine}
    ctx.log(f"{outer.label()}: features of {len(mine) - len(failed)} of {len(mine)} slide(s) ready"
            + (f", {len(failed)} failed" if failed else "") + "; run without --shard to train and score")
    state.result = RunResult(ctx.run_dir, {}, skipped_cases={s: f"failed: {why}" for s, why in failed.items()})
    return state


def _file_qc(path: Path) -> dict[str, Any]:
    """A feature file's QC as its metadata records it (the header only; a non-pathkit file: none)."""
    row: dict[str, Any] = {"slide_id": path.stem, "file": str(path)}
    if path.suffix != ".safetensors":
        return row
    try:
        meta = read_feature_meta_cached(path)
    except PathkitError as exc:
        return {**row, "status": "failed", "reason": str(exc)}
    try:
        qc = json.loads(meta.get("qc") or "{}")
    except json.JSONDecodeError:
        qc = {}
    tiles = qc.get("n_tiles", meta.get("n_tiles"))
    return {**row, "slide_id": meta.get("slide_id") or path.stem, "n_tiles": None if tiles is None else int(tiles),
            "status": meta.get("status", ""), "reason": meta.get("failure_reason", ""),
            "flags": "; ".join(qc.get("flags") or []), "mean_variance": qc.get("mean_variance"),
            "l2_norm_mean": qc.get("l2_norm_mean"), "zero_vector_fraction": qc.get("zero_vector_fraction"),
            "near_duplicate_fraction": qc.get("near_duplicate_fraction")}


def write_features_qc(path: Path, cases: Mapping[str, Sequence[Case]], stage: FeatureStage) -> Path:
    """`features_qc.csv` of a run: one row per feature file used (its QC statistics as extracted)
    and per case left out (status "skipped" with the reason), for the report's QC section."""
    import polars as pl

    from pathkit_core.workspace import atomic_write_with

    rows: list[dict[str, Any]] = []
    for split, split_cases in cases.items():
        for case in split_cases:
            base = {"case_id": case.case_id, "split": split}
            found = stage.inputs.get(case.case_id)
            if found is None:
                reason = stage.skipped.get(case.case_id, "no usable input").removeprefix(f"{split}: ")
                rows.append({**base, "input": case.input_kind, "status": "skipped", "reason": reason})
            elif isinstance(found, tuple) and all(isinstance(p, Path) for p in found):
                rows.extend({**base, "input": "features", **_file_qc(p)} for p in found)
            else:
                rows.append({**base, "input": "image", "n_tiles": 1, "status": "ok"})
    table = pl.DataFrame([{c: r.get(c) for c in QC_COLUMNS} for r in rows],
                         schema={c: (pl.Float64 if c in QC_NUMBERS else pl.Int64 if c == "n_tiles" else pl.Utf8)
                                 for c in QC_COLUMNS},
                         strict=False)
    return atomic_write_with(path, table.write_csv)


def stage(state: RunState) -> RunState:
    """Every case's model input and the items of each split; in a sharded run, this shard's tiling
    and extraction only (a last run without a shard finds every slide done)."""
    from pathkit_core.run.items import task_items

    state.needs("dataset")
    ctx, spec, ds = state.ctx, state.spec, state.dataset
    tiling = ctx.task.tiling(ds.dataset, spec.tiling)
    if state.shard.count > 1:
        return _shard_stage(state, tiling)
    state.facts = ctx.facts(tiling)
    feats = feature_stage(spec, ctx.encoder_cls, ctx.workdir, ds.cases, tiling, spec.dataset, ctx.log, ds.dataset)
    state.features = feats
    if feats.skipped:
        ctx.log(f"skipping {len(feats.skipped)} case(s) without usable features (recorded in results)")
    write_features_qc(ctx.run_dir / "features_qc.csv", ds.cases, feats)
    state.items = {name: task_items(ctx.task, cases, feats.inputs, ds.dataset, state.facts, targets=name != "test")
                   for name, cases in ds.cases.items()}
    if len(state.items["test"]) == 0:
        raise PathkitError("the test split has no case with usable features")
    state.train_targets = [ctx.task.model_target(c, ds.dataset) for c in ds.cases["train"] if c.case_id in feats.inputs]
    state.keys["features"] = content_hash({"data": ds.data_key, "encoder": spec.encoder,
                                           "inputs": features_identity(state.inputs_of("train", "val", "test"))})
    ctx.mark("features", state.keys["features"], {"skipped": feats.skipped})
    return state

