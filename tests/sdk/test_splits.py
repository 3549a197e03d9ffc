"""Patient-level splits: stratification, disjointness, persistence, hash and leakage checks, retries."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_sdk.splits import (
    SplitParams,
    SplitRecord,
    as_records,
    carve_validation,
    check_leakage,
    load_or_create_splits,
    load_splits,
    make_splits,
    patient_strata,
    rows_hash,
)


def cohort(n_patients: int = 100, positive_every: int = 4, slides_of=lambda i: 1 + (i % 3 == 0)):
    rows = []
    for i in range(n_patients):
        label = int(i % positive_every == 0)
        for k in range(slides_of(i)):
            rows.append((f"S{i:03d}-{k}", f"P{i:03d}", label))
    return as_records(rows)


def test_five_stratified_patient_disjoint_splits():
    records = cohort()
    manifest = make_splits(records, SplitParams())
    assert manifest.folds == [1, 2, 3, 4, 5]
    strata = patient_strata(records)
    n_pos = sum(v == "1" for v in strata.values())
    test_sets = []
    for fold in manifest.folds:
        patients = manifest.patients(fold)
        assert not (patients["train"] & patients["val"]) and not (patients["train"] & patients["test"])
        assert not (patients["val"] & patients["test"])
        assert set().union(*patients.values()) == set(strata)
        # 30% of each class to test (exact per stratum), 20% of the rest to validation
        test_pos = sum(strata[p] == "1" for p in patients["test"])
        assert test_pos == round(0.3 * n_pos)
        assert len(patients["test"]) == round(0.3 * n_pos) + round(0.3 * (100 - n_pos))
        remaining_pos = n_pos - test_pos
        assert sum(strata[p] == "1" for p in patients["val"]) == round(0.2 * remaining_pos)
        # a patient's slides stay together
        parts = manifest.fold(fold)
        for part, ids in parts.items():
            owners = {r.patient_id for r in records if r.case_id in ids}
            assert owners <= patients[part]
        test_sets.append(frozenset(patients["test"]))
    assert len(set(test_sets)) == 5, "five different random draws, not one repeated"


def test_same_inputs_same_splits_other_seed_other_splits():
    records = cohort()
    a = make_splits(records, SplitParams(seed=7))
    b = make_splits(list(reversed(records)), SplitParams(seed=7))
    c = make_splits(records, SplitParams(seed=8))
    assert a.content_hash == b.content_hash  # order of the input table does not matter
    assert a.content_hash != c.content_hash


def test_binary_patient_label_is_positive_if_any_slide_is():
    records = as_records([("a1", "A", 0), ("a2", "A", 1), ("b1", "B", 0)])
    assert patient_strata(records) == {"A": "1", "B": "0"}
    multi = as_records([("a1", "A", 2), ("a2", "A", 0), ("a3", "A", 2), ("b1", "B", 1), ("b2", "B", 0)])
    assert patient_strata(multi) == {"A": "2", "B": "0"}  # mode; tie to the smallest


def test_save_load_round_trip_and_tamper_detection(tmp_path):
    manifest = make_splits(cohort(40), SplitParams(n_splits=2), name="t", version=3)
    path = manifest.save(tmp_path / "t.v3.splits.csv")
    loaded = load_splits(path)
    assert loaded.rows == manifest.rows and loaded.meta["version"] == 3
    assert loaded.fold(2) == manifest.fold(2)
    lines = path.read_text().splitlines()
    # move one slide of a two-slide test patient to train: the recorded hash no longer matches
    owners = Counter(tuple(line.split(",")[i] for i in (0, 2)) for line in lines[1:])
    target = next(i for i, line in enumerate(lines) if ",test," in line
                  and owners[(line.split(",")[0], line.split(",")[2])] == 2)
    lines[target] = lines[target].replace(",test,", ",train,")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PathkitError, match="no longer matches the recorded"):
        load_splits(path)
    # ... and with the hash "fixed" by hand, the leakage check still refuses a patient in two parts
    rows = [dict(zip(["fold", "part", "patient_id", "case_id", "label"], line.split(","), strict=True))
            for line in lines[1:]]
    meta = json.loads((tmp_path / "t.v3.splits.csv.json").read_text())
    meta["content_hash"] = rows_hash(rows)
    (tmp_path / "t.v3.splits.csv.json").write_text(json.dumps(meta))
    with pytest.raises(PathkitError, match="patient leakage"):
        load_splits(path)
    (tmp_path / "t.v3.splits.csv.json").unlink()
    with pytest.raises(PathkitError, match="metadata file"):
        load_splits(path)
    with pytest.raises(PathkitError, match="no such split manifest"):
        load_splits(tmp_path / "absent.csv")


def test_leakage_check_names_the_patient():
    rows = [{"fold": 1, "part": "train", "patient_id": "P1", "case_id": "a", "label": "0"},
            {"fold": 1, "part": "test", "patient_id": "P1", "case_id": "b", "label": "1"},
            {"fold": 1, "part": "val", "patient_id": "P2", "case_id": "c", "label": "0"}]
    with pytest.raises(PathkitError, match="P1 in test\\+train"):
        check_leakage(rows)
    with pytest.raises(PathkitError, match="unknown part"):
        check_leakage([{**rows[0], "part": "holdout"}])
    with pytest.raises(PathkitError, match="empty part"):
        check_leakage(rows[:1])


def test_persisted_splits_are_reused_and_guarded(tmp_path):
    records = cohort(40)
    path = tmp_path / "splits" / "task.v1.splits.csv"
    first = load_or_create_splits(path, records, SplitParams(n_splits=2))
    mtime = path.stat().st_mtime_ns
    again = load_or_create_splits(path, list(reversed(records)), SplitParams(n_splits=2))
    assert again.content_hash == first.content_hash and path.stat().st_mtime_ns == mtime
    changed = [SplitRecord(r.case_id, r.patient_id, "1" if r.case_id == "S001-0" else r.label) for r in records]
    with pytest.raises(PathkitError, match="different cohort"):
        load_or_create_splits(path, changed, SplitParams(n_splits=2))
    with pytest.raises(PathkitError, match="give a new split version"):
        load_or_create_splits(path, records, SplitParams(n_splits=3))
    other = load_or_create_splits(tmp_path / "splits" / "task.v2.splits.csv", changed, SplitParams(n_splits=2))
    assert other.content_hash != first.content_hash


def test_too_small_or_single_class_cohorts_are_refused():
    with pytest.raises(PathkitError, match="need at least 3 per class"):
        make_splits(as_records([(f"s{i}", f"p{i}", int(i < 2)) for i in range(20)]))
    with pytest.raises(PathkitError, match="at least two classes"):
        make_splits(as_records([(f"s{i}", f"p{i}", 0) for i in range(20)]))
    with pytest.raises(PathkitError, match="appears twice"):
        as_records([("s", "p", 0), ("s", "q", 1)])
    with pytest.raises(PathkitError, match="test_fraction"):
        make_splits(cohort(), SplitParams(test_fraction=1.0))


def test_draws_are_retried_until_every_part_holds_every_class():
    # Class 1 appears only as a minority slide of three patients whose stratum is 0 or 2, so
    # stratification alone cannot place it; draws are repeated until each part gets one.
    rows = []
    for i in range(30):
        label = [0, 2][i % 2]
        rows.append((f"s{i}", f"p{i}", label))
        if i < 3:
            rows += [(f"s{i}b", f"p{i}", label), (f"s{i}c", f"p{i}", 1)]
    manifest = make_splits(as_records(rows), SplitParams(n_splits=3))
    for fold in manifest.folds:
        for ids in manifest.fold(fold).values():
            assert Counter(r["label"] for r in manifest.rows if r["fold"] == fold and r["case_id"] in ids)["1"] >= 1
    assert max(manifest.meta["draws_per_fold"]) > 1
    # with a single draw allowed the same cohort fails, clearly
    with pytest.raises(PathkitError, match="after 1 draws some part still lacks a class"):
        make_splits(as_records(rows), SplitParams(n_splits=3, max_attempts=1, seed=1))


def test_carve_validation_is_stratified_and_never_empties_training():
    train = {f"p{i}": str(int(i < 6)) for i in range(20)}
    val = carve_validation(train, 0.2, [0, 1])
    assert sum(train[p] == "1" for p in val) == 1 and sum(train[p] == "0" for p in val) == 3
    assert carve_validation(train, 0.2, [0, 1]) == val
    with pytest.raises(PathkitError, match="validation needs one"):
        carve_validation({"a": "1", "b": "0", "c": "0"}, 0.2, 0)


# --------------------------------------------------------------------------- single splits: given or drawn


def test_a_split_file_is_read_as_csv_or_the_reg_json_layout(tmp_path):
    from pathkit_sdk.splits import read_split_file

    csv_file = tmp_path / "s.csv"
    csv_file.write_text("patient_id,case_id,split\np1,a,train\np2,b,Validation\np3,c,test\n")
    assert read_split_file(csv_file) == {"train": ["a"], "val": ["b"], "test": ["c"]}
    reg = tmp_path / "s.json"
    reg.write_text(json.dumps({"train": [{"id": "a.tiff", "report": "x"}], "val": ["b"], "test": [{"id": "c"}]}))
    assert read_split_file(reg) == {"train": ["a.tiff"], "val": ["b"], "test": ["c"]}
    for content, message in (("id,part\na,train\n", "expected CSV columns case_id,split"),
                             ("case_id,split\na,holdout\n", "line 2: unknown split 'holdout'"),
                             ('{"train": 3}', "expected JSON"), ('{"train": [', "invalid JSON")):
        bad = tmp_path / ("bad.json" if content.startswith("{") else "bad.csv")
        bad.write_text(content)
        with pytest.raises(PathkitError, match=message):
            read_split_file(bad)


def test_a_users_split_is_checked_never_fixed():
    from pathkit_sdk.splits import check_user_split, match_split_ids

    patients = {"a": "p1", "b": "p1", "c": "p2", "d": "p3", "e": "p3"}
    check_user_split({"train": ["a", "b"], "val": ["c"], "test": ["d", "e"]}, patients, "mine")
    with pytest.raises(PathkitError, match=r"mine: 2 patient\(s\) in two parts .*'p1' \(train and test\), "
                                           r"'p3' \(val and test\)"):
        check_user_split({"train": ["a"], "val": ["c", "d"], "test": ["b", "e"]}, patients, "mine")
    with pytest.raises(PathkitError, match=r"the val part\(s\) are empty \(train 2, val 0, test 3 cases\)"):
        check_user_split({"train": ["a", "b"], "val": [], "test": ["c", "d", "e"]}, patients, "mine")
    with pytest.raises(PathkitError, match=r"case\(s\) in more than one part: a \(train and test\)"):
        check_user_split({"train": ["a", "b"], "val": ["c"], "test": ["a", "d", "e"]}, patients, "mine")
    parts = match_split_ids({"train": ["a.tiff", "b"], "val": ["c"], "test": ["d", "e", "gone"]}, list(patients),
                            "f", normalise=lambda i: i.removesuffix(".tiff"), excluded={"gone": "no slide"})
    assert parts == {"train": ["a", "b"], "val": ["c"], "test": ["d", "e"]}


def test_a_drawn_split_is_stratified_where_labels_allow_and_seeded():
    from pathkit_sdk.splits import draw_split

    patients = {f"c{i}": f"p{i // 2}" for i in range(40)}
    labels = {c: "pos" if int(p[1:]) % 4 == 0 else "neg" for c, p in patients.items()}
    drawn = draw_split(patients, fractions=(0.15, 0.15), seed=1, case_labels=labels)
    assert drawn.stratified and drawn.describe() == ("drawn by pathkit (no split given): seeded (1), "
                                                     "stratified by label, requested train/val/test 70/15/15")
    assert all({labels[c] for c in ids} == {"pos", "neg"} for ids in drawn.parts.values())
    assert draw_split(patients, fractions=(0.15, 0.15), seed=1, case_labels=labels).parts == drawn.parts
    # a class with too few patients to stratify: a plain patient-disjoint split, said as such
    few = {c: ("rare" if c == "c0" else "common") for c in patients}
    plain = draw_split(patients, fractions=(0.15, 0.15), seed=1, case_labels=few)
    assert not plain.stratified and "stratified" not in plain.describe()


# --------------------------------------------------------------------------- split statements


def test_the_split_statement_gives_realised_counts_not_the_requested_fractions():
    """HepatoBench's demo: 7 classes x 4 patients, stratified draw asked for 70/15/15; per class
    round(0.15 * 4) = 1 test and 1 val patient, so 14/7/7 patients (50/25/25%) and, with its
    patch counts, 177/90/88 cases."""
    from pathkit_sdk.splits import split_statement

    sizes = {"train": (177, 14), "val": (90, 7), "test": (88, 7)}  # (cases, patients)
    parts = {part: [f"{part}-c{i}" for i in range(n)] for part, (n, _) in sizes.items()}
    patients = {c: f"{part}-P{i % sizes[part][1]}" for part, ids in parts.items() for i, c in enumerate(ids)}
    found = split_statement(parts, patients, unit="patient", how="drawn, requested train/val/test 70/15/15")
    assert found["counts"] == {"train": 177, "val": 90, "test": 88}
    assert found["units"] == {"train": 14, "val": 7, "test": 7}
    assert found["unit_fractions"] == {"train": 0.5, "val": 0.25, "test": 0.25}
    assert found["case_fractions"]["train"] == round(177 / 355, 4)
    assert found["statement"] == ("drawn, requested train/val/test 70/15/15; realised train/val/test 14/7/7 patients "
                                  "(50/25/25%), 177/90/88 cases (50/25/25%); no patient in two parts")


def test_an_image_level_split_is_never_called_patient_disjoint():
    from pathkit_sdk.splits import split_statement

    parts = {"train": ["a", "b", "c"], "val": ["d"], "test": ["e", "f"]}
    found = split_statement(parts, {}, unit="image")
    assert found["statement"] == ("realised train/val/test 3/1/2 images (50/17/33%); image-level: images of one "
                                  "slide or patient may sit in two parts")
    assert "disjoint" not in found["statement"]
    # slides that are their own unit: one count, named by the unit
    slides = split_statement(parts, {c: c for p in parts.values() for c in p}, unit="slide")
    assert "3/1/2 slides (50/17/33%); no slide in two parts" in slides["statement"]
    with pytest.raises(PathkitError, match="unknown unit 'tile'"):
        split_statement(parts, {}, unit="tile")
