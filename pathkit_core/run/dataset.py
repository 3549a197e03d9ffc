"""Stage 1, dataset: open (or build the demo of) the dataset, take its splits, check its cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pathkit_core.contracts import INPUT_IMAGES, Case, Dataset, PathkitError, Task
from pathkit_core.evaluation.provenance import mark_synthetic
from pathkit_core.run.spec import RunSpec
from pathkit_core.run.state import DatasetStage, RunState
from pathkit_core.workspace import FileLock, content_hash

SPLITS = ("train", "val", "test")


# The unit a split keeps in one part: patients (every case of a patient in one part), slides, or
# images (each image its own unit: images of one slide or patient may sit in two parts).
SPLIT_UNITS = ("patient", "slide", "image", "case")


def _shares(counts: Mapping[str, int]) -> str:
    total = sum(counts.values())
    return "/".join(f"{round(100 * n / total)}" if total else "0" for n in counts.values())


def split_statement(parts: Mapping[str, Sequence[str]], case_units: Mapping[str, str], *, unit: str = "patient",
                    how: str = "") -> dict[str, Any]:
    """What a split holds, as realised: per part its cases and its units (patients, slides or
    images: `case_units` maps a case to its unit, a case missing from it is its own unit), their
    fractions, and one sentence saying it ("statement"), led by `how` it was made.

    The one description of a split every dataset's is built from (terminal, metrics.json "split",
    the report): never the requested fractions alone, which a stratified draw over few patients
    per class can miss by far (HepatoBench's demo: 70/15/15 requested, 50/25/25 of patients)."""
    if unit not in SPLIT_UNITS:
        raise PathkitError(f"split: unknown unit {unit!r} (expected one of {', '.join(SPLIT_UNITS)})")
    names = [p for p in SPLITS if p in parts] + [p for p in parts if p not in SPLITS]
    counts = {p: len(parts[p]) for p in names}
    units = {p: len({case_units.get(c, c) for c in parts[p]}) for p in names}
    total_c, total_u = sum(counts.values()), sum(units.values())
    label = "/".join(names)
    numbers = "/".join(str(n) for n in counts.values())
    if unit in ("image", "case") or units == counts and all(case_units.get(c, c) == c for ids in parts.values()
                                                           for c in ids):
        held = f"{label} {numbers} {unit}s ({_shares(counts)}%)"
    else:
        held = (f"{label} {'/'.join(str(n) for n in units.values())} {unit}s ({_shares(units)}%), "
                f"{numbers} cases ({_shares(counts)}%)")
    kept = {"image": "image-level: images of one slide or patient may sit in two parts",
            "case": "each case its own unit"}.get(unit, f"no {unit} in two parts")
    sentence = f"{how}; " if how else ""
    return {
        "unit": unit,
        "counts": counts,
        "units": units,
        "case_fractions": {p: round(n / total_c, 4) if total_c else 0.0 for p, n in counts.items()},
        "unit_fractions": {p: round(n / total_u, 4) if total_u else 0.0 for p, n in units.items()},
        "statement": f"{sentence}realised {held}; {kept}",
    }


def dataset_options(spec: RunSpec, dataset_cls: type[Dataset], workdir: Path) -> dict[str, Any]:
    """The options a dataset is opened with: the run's, plus the `:view` of `name:view` as
    option "view", plus the run facts the dataset asks for in `run_options` ("encoder", "workdir",
    "skip_missing": `--skip-missing`, so a dataset can leave out rows whose files are missing)."""
    options = dict(spec.dataset_options)
    named = spec.dataset  # `name`, `name:view`, or with its distribution `dist:name[:view]`
    if named != dataset_cls.name and not named.startswith(f"{dataset_cls.name}:"):
        named = named.partition(":")[2]
    view = named.partition(":")[2]
    if view:
        options.setdefault("view", view)
    facts = {"encoder": spec.encoder, "workdir": str(workdir), "skip_missing": spec.skip_missing}
    for name in dataset_cls.run_options:
        if name in facts:
            options.setdefault(name, facts[name])
    return options


def open_dataset(spec: RunSpec, dataset_cls: type[Dataset], workdir: Path) -> Dataset:
    """The dataset at `--dataset-root`, or its synthetic demo built once under the workspace."""
    root = spec.dataset_root
    options = dataset_options(spec, dataset_cls, workdir)
    if root is None and dataset_cls.has_demo():
        demo_dir = workdir / "datasets" / dataset_cls.name
        with FileLock(workdir / "locks" / f"demo-{dataset_cls.name}.lock", timeout=600):
            root = dataset_cls(None, **options).make_demo(demo_dir)
            mark_synthetic(root, dataset_cls.name)
    dataset = dataset_cls(root, **options)
    dataset.validate()
    return dataset


def split_cases(dataset: Dataset, *, needs_fit: bool) -> dict[str, list[Case]]:
    """The train/val/test cases. A generator that needs no fit only needs a test split."""
    splits = dataset.splits()
    required = SPLITS if needs_fit else ("test",)
    for name in required:
        if name not in splits:
            raise PathkitError(f"dataset {dataset.name!r} has no {name!r} split (has: {', '.join(splits) or 'none'})")
    return {name: list(dataset.cases(name)) if name in splits else [] for name in SPLITS}


def split_unit(cases: dict[str, list[Case]], facts: dict[str, Any]) -> str:
    """The unit no two parts share: the dataset's word (split facts "unit"), else "patient" when
    some case names a patient of its own, else the cases' kind (slide or image)."""
    if facts.get("unit"):
        return str(facts["unit"])
    every = [c for part in cases.values() for c in part]
    if any(c.patient_id != c.case_id for c in every):
        return "patient"
    kinds = {c.input_kind for c in every}
    return "image" if kinds == {INPUT_IMAGES} else "slide"


def realised_split(dataset: Dataset, cases: dict[str, list[Case]], facts: dict[str, Any]) -> dict[str, Any]:
    """The dataset's split facts with what the split holds as realised: units and cases per part,
    their fractions, the unit and the statement (`split_statement`) built from them."""
    parts = {p: [c.case_id for c in cases[p]] for p in SPLITS if cases.get(p)}
    units = {c.case_id: c.patient_id for part in cases.values() for c in part}
    how = str(facts.get("description") or f"the split of dataset {dataset.name!r}")
    return {**facts, **split_statement(parts, units, unit=split_unit(cases, facts), how=how)}


def dataset_stage(spec: RunSpec, dataset_cls: type[Dataset], task: Task, workdir: Path, *,
                  needs_fit: bool) -> DatasetStage:
    """Open and check the dataset, list its cases per split and key them by content (the files
    the dataset read while opening and listing, its options and every case with its inputs)."""
    from pathkit_core.run.identity import dataset_identity
    from pathkit_core.sources import recording

    with recording() as read_files:
        dataset = open_dataset(spec, dataset_cls, workdir)
        cases = split_cases(dataset, needs_fit=needs_fit)
    task.validate_cases(cases, dataset)
    ids = {name: [c.case_id for c in split] for name, split in cases.items()}
    # Cases the dataset left out (filters, QC gating) are counted in the results, never dropped silently.
    facts = realised_split(dataset, cases, dict(dataset.split_facts() or {}))
    return DatasetStage(dataset, cases, content_hash(ids), dataset_identity(dataset, cases, read_files),
                        dict(dataset.excluded_cases()), facts, dict(dataset.summary()))


def stage(state: RunState) -> RunState:
    """Open the dataset, name the run folder by its content (a dataset that fails to open leaves no
    folder behind) and record its cases; a sharded run takes no run lock (shards share the stores)."""
    ctx, spec = state.ctx, state.spec
    needs_fit = ctx.generator_cls.needs_fit and (spec.frozen_from is None or state.shard.count > 1)
    ds = dataset_stage(spec, ctx.dataset_cls, ctx.task, ctx.workdir, needs_fit=needs_fit)
    state.dataset = ds
    ctx.open_folder(ds.data_key, lock=state.shard.count <= 1)
    state.keys["dataset"] = ds.data_key
    if state.shard.count > 1:
        return state
    state.metrics = list(spec.metrics) or list(ctx.dataset_cls.default_metrics)
    if not state.metrics:
        raise PathkitError(f"no metric given and dataset {spec.dataset!r} declares no default; use --metric")
    # what the metrics will wait for (METEOR's JVM) starts now and loads while the slides are tiled
    # and the model trains
    from pathkit_core.evaluation.runner import prepare_metrics

    prepare_metrics(state.metrics, dataset=spec.dataset, context={"metric_options": dict(spec.metric_options)})
    ctx.log(f"run folder: {ctx.run_dir}")
    if ctx.marker("dataset") is not None and ctx.done("dataset", ds.data_key) is None:
        ctx.log("the dataset's content changed since this folder's last run: every stage is redone")
    ctx.mark("dataset", ds.data_key, {"n_cases": {k: len(v) for k, v in ds.ids.items()},
                                      "root": str(ds.dataset.root), "n_excluded": len(ds.excluded)})
    ctx.log(f"split: {ds.split['statement']}")  # how it was made and what it holds, as realised
    if ds.excluded:
        ctx.log(f"the dataset excluded {len(ds.excluded)} case(s) (filters and QC; reasons in metrics.json)")
    for warning in ds.summary.get("warnings", []):
        ctx.log(f"WARNING: {warning}")
    return state
