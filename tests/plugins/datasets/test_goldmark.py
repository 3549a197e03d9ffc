"""goldmark dataset: task catalogue, curation filters, QC gating, splits across encoders, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from pathkit_datasets._goldmark_synthetic import SyntheticSpec, write_synthetic_cohort
from pathkit_datasets._goldmark_tasks import TASKS, TASKS_BY_KEY, TOP8_TASKS, normalise_task_key
from pathkit_datasets.goldmark import GoldmarkDataset, parse_label

from pathkit_core.contracts import PathkitError

SMALL = SyntheticSpec(cohorts=(("TCGA", 24), ("MSKCC", 16)), tiles=(12, 24), dim=8, seed=3)


@pytest.fixture(scope="module")
def cohort_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("goldmark") / "cohort"
    write_synthetic_cohort(root, SMALL)
    return root


@pytest.fixture
def root(cohort_root, tmp_path) -> Path:
    """A private copy that a test may damage."""
    copy = tmp_path / "cohort"
    shutil.copytree(cohort_root, copy)
    return copy


def open_ds(root, tmp_path=None, **options):
    options.setdefault("view", "COAD-MSI")
    if tmp_path is not None:
        options.setdefault("workdir", str(tmp_path / "ws"))
    return GoldmarkDataset(root, **options)


def test_catalogue_is_table_1():
    assert len(TASKS) == 33 and len(TASKS_BY_KEY) == 33
    assert len({t.tumor_code for t in TASKS}) == 14  # "33 tasks spanning 14 tumour types"
    for t in TASKS:
        assert t.tcga_positive + t.tcga_negative == t.tcga_total
        assert t.mskcc_positive + t.mskcc_negative == t.mskcc_total
    msi = TASKS_BY_KEY["COAD-MSI"]
    assert msi.counts("TCGA") == (405, 70, 335) and msi.counts("MSKCC") == (2959, 350, 2609)
    assert TASKS_BY_KEY["LGG-IDH1"].counts("TCGA") == (491, 382, 109)
    assert TASKS_BY_KEY["PCPG-HRAS"].counts("MSKCC") == (18, 2, 16)
    assert set(TOP8_TASKS) <= set(TASKS_BY_KEY) and len(TOP8_TASKS) == 8
    assert normalise_task_key("coad:msi") == normalise_task_key("COAD_MSI") == "COAD-MSI"
    described = GoldmarkDataset.describe()
    assert len(described["tasks"]) == 33 and described["selection_metric"] == "classification:AUROC"


def test_views_resolve_and_reach_the_dataset(tmp_path):
    from pathkit_core.plugins import get_plugin_manager
    from pathkit_core.run.dataset import dataset_options
    from pathkit_core.run.spec import RunSpec

    assert get_plugin_manager().get("dataset", "goldmark:COAD-MSI") is GoldmarkDataset
    spec = RunSpec(dataset="goldmark:LGG-IDH1", encoder="uni", generator="gma-mil",
                   dataset_options={"fold": 2})
    options = dataset_options(spec, GoldmarkDataset, tmp_path)
    assert options == {"fold": 2, "view": "LGG-IDH1", "encoder": "uni", "workdir": str(tmp_path)}
    assert GoldmarkDataset(None, **options).task_key == "LGG-IDH1"
    # bags: gma-mil keeps every tile (GOLDMARK) where the pipeline's default cut is PathBench's 10,000
    from pathkit_core.run.context import RunContext

    assert RunContext(RunSpec(dataset="goldmark:COAD-MSI", encoder="uni", generator="gma-mil",
                              workdir=tmp_path)).spec.max_tiles is None
    assert RunContext(RunSpec(dataset="goldmark:COAD-MSI", encoder="uni", generator="gma-mil", workdir=tmp_path,
                              max_tiles=500)).spec.max_tiles == 500
    with pytest.raises(PathkitError, match="choose a task"):
        _ = GoldmarkDataset(None).task_key


def test_curation_and_qc_exclusions_are_counted_with_reasons(cohort_root, tmp_path):
    info = json.loads((cohort_root / "synthetic.json").read_text())
    ds = open_ds(cohort_root, tmp_path, test_cohort="MSKCC")
    excluded = ds.excluded_cases()
    expected = {"frozen section": "not diagnostic FFPE", "duplicate scan": "duplicate scan",
                "tissue": "too little tissue", "degenerate": "failed QC: degenerate",
                "failed extraction": "failed QC: extraction marked failed",
                "failed QC record": "failed QC: tile_count_mismatch"}
    assert set(excluded) == set(info["bad_inputs"])
    for slide_id, kind in info["bad_inputs"].items():
        assert excluded[slide_id].startswith(expected[kind]), (kind, excluded[slide_id])
    parts = ds.splits()
    used = set().union(*map(set, parts.values()))
    assert not used & set(excluded)
    # the external test part is every eligible slide of the other cohort
    assert all(sid.startswith("SYN-MSKCC-") for sid in parts["test"]) and len(parts["test"]) == 16
    assert all(sid.startswith("SYN-TCGA-") for sid in parts["train"] + parts["val"])
    cases = {c.case_id: c for part in parts for c in ds.cases(part)}
    patients = {part: {cases[i].patient_id for i in ids} for part, ids in parts.items()}
    assert not patients["train"] & patients["val"]
    first = cases[parts["test"][0]]
    assert first.features[0].name.startswith("features_SYN-MSKCC-") and first.meta["tile_manifests"][0].endswith(
        ".csv")
    # targets are the dataset's class names, in its declared order (index 1: the alteration)
    assert {c.target for c in cases.values()} == {"negative", "positive"}
    assert ds.class_names() == ("negative", "positive")
    summary = ds.summary()
    assert summary["excluded_by_reason"]["failed QC"] == 3 and summary["parts"]["test"]["slides"] == 16
    # duplicate scans: the better (smaller mpp) scan of the glass slide is kept
    dup = next(s for s, k in info["bad_inputs"].items() if k == "duplicate scan")
    kept = dup.removesuffix("-RESCAN")
    assert kept in used and excluded[dup] == f"duplicate scan: {kept} is also scanned as {kept} (kept)"


def test_synthetic_ids_never_imitate_real_barcodes(cohort_root):
    """Every id of the synthetic cohort is SYN-...: no TCGA patient barcode (TCGA-XX-XXXX) nor an
    MSK-IMPACT sample id (P-0000000-T01-IM6) that a reader could take for a real patient."""
    import re

    from pathkit_datasets.goldmark import TCGA_PATIENT, is_tcga

    lines = (cohort_root / "manifest.csv").read_text().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
    ids = [r[c] for r in rows for c in ("slide_id", "patient_id", "slide_barcode")]
    assert ids and all(i.startswith("SYN-") for i in ids)
    assert not any(TCGA_PATIENT.match(i) or is_tcga(i) or re.search(r"P-\d{7}|-DX\d|-IM\d", i) for i in ids)


def test_splits_are_shared_by_encoders_while_qc_is_per_encoder(cohort_root, tmp_path):
    root = tmp_path / "multi"
    shutil.copytree(cohort_root, root)
    manifest = (root / "manifest.csv").read_text().splitlines()
    header = manifest[0].split(",")
    col = header.index("feature_path")
    # two encoders' feature folders; the manifest names none, so features_dir decides
    (root / "manifest.csv").write_text("\n".join([manifest[0]] + [
        ",".join(v if i != col else "" for i, v in enumerate(line.split(","))) for line in manifest[1:]]) + "\n")
    for encoder in ("enc-a", "enc-b"):
        shutil.copytree(root / "features", root / "features" / encoder)
    victim = next(line.split(",")[0] for line in manifest[1:] if line.startswith("SYN-TCGA-0005"))
    from pathkit_core.features.store import write_features

    write_features(root / "features" / "enc-b" / f"{victim}.safetensors", torch.ones(10, 8), torch.zeros(10, 2))
    a = open_ds(root, tmp_path, encoder="enc-a", features_dir="features/{encoder}")
    b = open_ds(root, tmp_path, encoder="enc-b", features_dir="features/{encoder}")
    assert a.split_manifest().content_hash == b.split_manifest().content_hash
    assert a.split_manifest().path == b.split_manifest().path
    assert victim not in a.excluded_cases() and "degenerate" in b.excluded_cases()[victim]
    part = next(p for p, ids in a.splits().items() if victim in ids)
    assert b.splits()[part] == [i for i in a.splits()[part] if i != victim]
    # splits are drawn before QC gating, so a slide failing QC stays in the manifest but not in the run
    gone = set(a.excluded_cases())
    for fold in (1, 2, 3, 4, 5):
        assert open_ds(root, tmp_path, encoder="enc-a", features_dir="features/{encoder}", fold=fold).splits()[
            "test"] == [i for i in a.split_manifest().fold(fold)["test"] if i not in gone]


def test_paper_split_protocol_trains_on_seventy_percent_without_selection(cohort_root, tmp_path):
    validated = open_ds(cohort_root, tmp_path)
    paper = open_ds(cohort_root, tmp_path, split_protocol="paper-70-30")
    assert validated.train_overrides == {} and paper.train_overrides == {"model_selection": False}
    v, p = validated.splits(), paper.splits()
    assert p["test"] == v["test"]  # one test part for both protocols: their tables compare
    # the public code's "validation" is the test part: it schedules the learning rate, chooses nothing
    # (its slides under ids of their own: a case id belongs to one split)
    assert p["val"] == [f"{i}__test-part" for i in p["test"]] and sorted(p["train"]) == sorted(v["train"] + v["val"])
    scheduled = {c.case_id: c for c in paper.cases("val")}
    for case in paper.cases("test"):
        twin = scheduled[f"{case.case_id}__test-part"]
        assert (twin.features, twin.target, twin.patient_id) == (case.features, case.target, case.patient_id)
    cohort_order = [r["case_id"] for r in validated.split_manifest().rows if int(r["fold"]) == 1]
    assert p["train"] == [i for i in cohort_order if i in set(p["train"])]
    patients = {s: c.patient_id for s, c in ((c.case_id, c) for part in ("train", "test") for c in paper.cases(part))}
    n_train = len({patients[i] for i in p["train"]})
    n_test = len({patients[i] for i in p["test"]})
    assert 0.62 < n_train / (n_train + n_test) < 0.78  # 70/30 of the patients, as the paper
    with pytest.raises(PathkitError, match="option split_protocol='best-of-test': choose one of train-val-test"):
        open_ds(cohort_root, tmp_path, split_protocol="best-of-test").splits()


def test_long_label_table_and_unmatched_patients(root, tmp_path):
    lines = (root / "manifest.csv").read_text().splitlines()
    header = lines[0].split(",")
    pid, gene = header.index("patient_id"), header.index("MSI")
    labels = {line.split(",")[pid]: line.split(",")[gene] for line in lines[1:]}
    rows = ["patient_id,task,label"] + [f"{p},COAD-MSI,{'MSI-H' if v == '1' else 'MSS'}" for p, v in labels.items()]
    (root / "labels.csv").write_text("\n".join(rows + ["TCGA-XX-0001,COAD-MSI,MSS", "TCGA-XX-0002,COAD-MSI,MSI-H",
                                                       "TCGA-XX-0003,LGG-IDH1,1"]) + "\n")
    with pytest.raises(PathkitError, match=r"2 patient\(s\) labelled for COAD-MSI have no slide in the manifest: "
                                           r"TCGA-XX-0001, TCGA-XX-0002"):
        open_ds(root, tmp_path).validate()
    ds = open_ds(root, tmp_path, allow_unmatched_labels=True)
    assert ds.summary()["labelled_patients_without_slides"] == ["TCGA-XX-0001", "TCGA-XX-0002"]
    by_patient = {c.patient_id: c.target for part in ("train", "val", "test") for c in ds.cases(part)}
    assert len(by_patient) > 20
    assert all(by_patient[p] == ds.class_names()[int(labels[p])] for p in by_patient)


def test_single_class_task_is_a_clear_error(root, tmp_path):
    text = (root / "manifest.csv").read_text().splitlines()
    gene = text[0].split(",").index("MSI")
    rows = [",".join(v if i != gene else "0" for i, v in enumerate(line.split(","))) for line in text[1:]]
    (root / "manifest.csv").write_text("\n".join([text[0]] + rows) + "\n")
    with pytest.raises(PathkitError, match="all with label 0; the task needs positive and negative slides"):
        open_ds(root, tmp_path).validate()


def test_edited_split_manifest_is_refused(root, tmp_path):
    ds = open_ds(root, tmp_path)
    path = ds.split_manifest().path
    text = path.read_text()
    path.write_text(text.replace(",test,", ",train,", 1))
    with pytest.raises(PathkitError, match="no longer matches the recorded"):
        open_ds(root, tmp_path).validate()
    # a new split version draws fresh splits beside it
    assert open_ds(root, tmp_path, splits_version=2).split_manifest().path.name.endswith(".v2.splits.csv")


def test_mixed_feature_dimensions_in_a_cohort_are_refused(root, tmp_path):
    from pathkit_core.features.store import write_features

    target = next((root / "features").glob("SYN-TCGA-0003-*.safetensors"))
    write_features(target, torch.randn(20, 12), torch.zeros(20, 2))
    with pytest.raises(PathkitError, match=r"cohort TCGA mixes feature dimensions \(8-d: .*; 12-d: 1 file"):
        open_ds(root, tmp_path).validate()


def test_goldmark_split_manifest_is_imported_with_a_carved_validation_part(cohort_root, tmp_path):
    source = open_ds(cohort_root, tmp_path / "first").split_manifest()
    slides = sorted({r["case_id"] for r in source.rows})
    header = "slide_path,slide_id,label_index,target," + ",".join(f"split_{k}_set" for k in (1, 2))
    lines = [header]
    for sid in slides:
        parts = [next(r["part"] for r in source.rows if r["case_id"] == sid and r["fold"] == k) for k in (1, 2)]
        lines.append(f"x.svs,{sid},0,0," + ",".join("test" if p == "test" else "train" for p in parts))
    (tmp_path / "gm_splits.csv").write_text("\n".join(lines) + "\n")
    ds = open_ds(cohort_root, tmp_path, split_manifest=str(tmp_path / "gm_splits.csv"), n_splits=2, fold=2)
    imported = ds.split_manifest()
    assert imported.folds == [1, 2] and imported.meta["params"]["source"] == str(tmp_path / "gm_splits.csv")
    for k in (1, 2):
        assert set(imported.fold(k)["test"]) == set(source.fold(k)["test"])
        assert imported.fold(k)["val"] and set(imported.fold(k)["val"]) <= set(source.fold(k)["train"]) | set(
            source.fold(k)["val"])


def test_imported_split_manifest_with_patient_leakage_is_refused(root, tmp_path):
    lines = (root / "manifest.csv").read_text().splitlines()
    first = next(line for line in lines[1:] if line.startswith("SYN-TCGA-0003"))
    second_slide = first.split(",")[0] + "-SECOND"
    fields = first.split(",")
    fields[0] = fields[lines[0].split(",").index("slide_barcode")] = second_slide  # another glass slide
    (root / "manifest.csv").write_text("\n".join(lines + [",".join(fields)]) + "\n")
    slides = [line.split(",")[0] for line in lines[1:]] + [second_slide]
    rows = ["slide_id,split_1_set"] + [f"{sid},{'test' if sid == second_slide else 'train'}" for sid in slides]
    (root / "splits_in.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(PathkitError, match="patient SYN-TCGA-0003 has slides in train and test"):
        open_ds(root, tmp_path, split_manifest="splits_in.csv", n_splits=1).validate()


def test_bad_options_and_tables_are_explained(root, tmp_path):
    with pytest.raises(PathkitError, match=r"has no option\(s\) epochs; known: .*fold.*pathkit info goldmark"):
        GoldmarkDataset(root, view="COAD-MSI", epochs=3)
    with pytest.raises(PathkitError, match="test_cohort 'MSK' is not a cohort of this task"):
        open_ds(root, tmp_path, test_cohort="MSK").validate()
    with pytest.raises(PathkitError, match="no label column for task LGG-IDH1"):
        open_ds(root, tmp_path, view="LGG-IDH1").validate()
    with pytest.raises(PathkitError, match="fold 6 is outside 1..5"):
        open_ds(root, tmp_path, fold=6).validate()
    with pytest.raises(PathkitError, match="no slide manifest"):
        open_ds(tmp_path, tmp_path).validate()
    with pytest.raises(PathkitError, match="not a folder"):
        open_ds(tmp_path / "absent", tmp_path).validate()
    with pytest.raises(PathkitError, match="not binary"):
        parse_label("VUS", "row 3")
    assert parse_label("Mutant", "x") == 1 and parse_label("wild-type", "x") == 0 and parse_label("NA", "x") is None
    text = (root / "manifest.csv").read_text().replace(",1,features/", ",maybe,features/", 1)
    (root / "manifest.csv").write_text(text)
    with pytest.raises(PathkitError, match="label 'maybe' is not binary"):
        open_ds(root, tmp_path).validate()


def test_slides_without_patient_or_qc_record(root, tmp_path):
    lines = (root / "manifest.csv").read_text().splitlines()
    pid = lines[0].split(",").index("patient_id")
    broken = [lines[0]] + [",".join("" if i == pid and v.startswith("SYN-MSKCC-") else v
                                    for i, v in enumerate(line.split(","))) for line in lines[1:]]
    (root / "manifest.csv").write_text("\n".join(broken) + "\n")
    with pytest.raises(PathkitError, match="without a patient id and not a TCGA barcode"):
        open_ds(root, tmp_path).validate()
    (root / "manifest.csv").write_text("\n".join(lines) + "\n")
    # pathkit-store files carry no QC record here: without computing QC they are excluded, fail-closed
    strict = open_ds(root, tmp_path, compute_missing_qc=False)
    store_file = next((root / "features").glob("SYN-TCGA-0003-*.safetensors"))
    assert strict._check_feature(store_file).reason.startswith("no QC record")
    goldmark_file = next((root / "features").glob("features_SYN-MSKCC-*.pt"))
    assert strict._check_feature(goldmark_file).status == "ok"  # its JSON record says ok
    with pytest.raises(PathkitError, match=r"usable slide\(s\) with label\(s\) \[\]; both classes are needed"):
        strict.validate()


def _public_plateau_rule(scores, lr=1e-4, factor=0.5, patience=2, threshold=1e-4):
    """GOLDMARK's trainer: ReduceLROnPlateau(mode="max", patience=2, factor=0.5) stepped with the
    "validation" (test-part) AUROC at each validation epoch; written out by hand: a score counts
    as better when above best * (1 + threshold); after more than `patience` validations without
    one, the rate is multiplied by `factor` and the count restarts."""
    best, bad, rates = -float("inf"), 0, []
    for score in scores:
        if score > best * (1 + threshold):
            best, bad = score, 0
        else:
            bad += 1
        if bad > patience:
            lr, bad = lr * factor, 0
        rates.append(lr)
    return rates


@pytest.mark.parametrize("aurocs", [
    (0.60, 0.58, 0.59, 0.57, 0.62, 0.61, 0.63),  # halves at epoch 20
    (0.70, 0.69, 0.71, 0.70, 0.70, 0.70, 0.72),  # halves at epoch 80
    (0.80, 0.70, 0.75, 0.65, 0.66, 0.67, 0.68),  # halves at 20, then again at 120
])
def test_paper_70_30_steps_the_learning_rate_on_test_auroc_at_the_public_codes_epochs(aurocs, tmp_path,
                                                                                       one_torch_thread):
    from pathkit_generators.gma_mil import GOLDMARK_TRAIN

    from pathkit_core.training.trainer import TrainConfig, fit
    from tests.core.training._tiny_task import TinyRegressor, make_items

    overrides = open_ds(None, split_protocol="paper-70-30").train_overrides
    cfg = TrainConfig.from_mapping({**GOLDMARK_TRAIN, **overrides, "batch_size": 4, "progress": False, "cpu": True})
    test_part = make_items(6, 2)  # the fold's test part, passed as validation as the public code does
    seen, sequence = [], iter(aurocs)

    def test_auroc(preds, refs):
        seen.append(sorted(refs))
        return next(sequence)

    result = fit(TinyRegressor(), make_items(16, 1), test_part, cfg, tmp_path, selection=test_auroc)
    validated = [r["epoch"] for r in result.history if "selection" in r]
    assert validated == [2, 5, 10, 20, 50, 80, 120]
    assert all(ids == sorted(i["case_id"] for i in test_part) for ids in seen)
    rates = {r["epoch"]: r["lr"] for r in result.history}
    assert [rates[e] for e in validated] == pytest.approx(_public_plateau_rule(aurocs))
    assert rates[1] == pytest.approx(1e-4) and len({round(v, 12) for v in rates.values()}) > 1
    # nothing is chosen on the test part: the model is the epoch-120 one
    assert result.best_epoch == 120


def test_a_demo_for_a_task_that_is_no_goldmark_task_is_a_clear_error(tmp_path):
    from pathkit_datasets.goldmark import GoldmarkDataset

    with pytest.raises(PathkitError, match=r"task 'NOPE' is neither a GOLDMARK task \(BLCA-PIK3CA, .*\) nor a "
                                           r"TUMOUR-GENE key"):
        GoldmarkDataset(None, task="NOPE").make_demo(tmp_path / "demo")
    assert not (tmp_path / "demo").exists()
