"""The cohort datasets (slides-csv, slides-reports) and their shared conventions (pathkit_sdk.cohort): tables,
columns, rows, user splits kept exactly, drawn splits, and every documented bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest
from pathkit_datasets.reg2025 import REG2025, patient_of
from pathkit_datasets.slides_csv import SlidesCSV
from pathkit_datasets.slides_reports import SlidesReports

from pathkit_core.contracts import PathkitError
from pathkit_sdk.cohort import class_order, read_table


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def write_csv(path: Path, rows: list[dict], columns: list[str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = columns or list(rows[0])
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def cohort(root: Path, n_patients: int = 12, *, split: bool = True, slides_per_patient: int = 1,
           files: bool = True, **extra) -> list[dict]:
    """<root>/cohort.csv over <root>/slides/P<k>_<j>.svs: labels MSI/MSS alternate by patient;
    the split by patient: 0,1 -> test; 2,3 -> val; others train (so every part has both classes)."""
    rows = []
    for k in range(n_patients):
        for j in range(slides_per_patient):
            name = f"slides/P{k:02d}_{j}.svs"
            if files:
                touch(root / name)
            part = "test" if k < 2 else "val" if k < 4 else "train"
            row = {"slide_path": name, "patient_id": f"P{k:02d}", "label": ("MSI", "MSS")[k % 2],
                   "mpp": "0.25", "age": str(40 + k), **extra}
            if split:
                row["split"] = part
            rows.append(row)
    write_csv(root / "cohort.csv", rows)
    return rows


# --------------------------------------------------------------------------- tables


def test_tables_are_read_from_every_format_with_row_places(tmp_path):
    rows = [{"slide_path": "a.svs", "label": "x"}, {"slide_path": "b.svs", "label": "y"}]
    write_csv(tmp_path / "t.csv", rows)
    (tmp_path / "t.tsv").write_text("slide_path\tlabel\na.svs\tx\nb.svs\ty\n")
    pl.DataFrame(rows).write_parquet(tmp_path / "t.parquet")
    (tmp_path / "t.json").write_text(json.dumps(rows))
    (tmp_path / "t.jsonl").write_text(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    for suffix, places in ((".csv", ["line 2", "line 3"]), (".tsv", ["line 2", "line 3"]),
                           (".parquet", ["row 1", "row 2"]), (".json", ["item 0", "item 1"]),
                           (".jsonl", ["line 1", "line 3"])):
        table = read_table(tmp_path / f"t{suffix}")
        assert table.columns == ["slide_path", "label"] and [r["label"] for r in table.rows] == ["x", "y"]
        assert table.places == places, suffix
    (tmp_path / "reg.json").write_text(json.dumps({"train": rows[:1], "val": [], "test": rows[1:]}))
    table = read_table(tmp_path / "reg.json")
    assert table.layout_split == ["train", "test"] and table.where(1) == "reg.json, test item 0"


@pytest.mark.parametrize(("content", "name", "message"), [
    ("", "t.csv", "has no rows"),
    ("slide_path,label\n", "t.csv", "has no rows"),
    ("a,b\n1,2,3\n", "t.csv", "line 2 has more cells than the header"),
    ('[{"a": 1}, 3]', "t.json", "item 1 is a int, not an object"),
    ('{"a": 1}\n{oops\n', "t.jsonl", "line 2: invalid JSON"),
    ("x", "t.xlsx", "unknown table format '.xlsx'"),
])
def test_bad_tables_name_the_file_and_the_place(tmp_path, content, name, message):
    (tmp_path / name).write_text(content)
    with pytest.raises(PathkitError, match=message):
        read_table(tmp_path / name)


def test_class_order_is_natural_and_can_be_given(tmp_path):
    assert class_order(["10", "2", "1", "2"], None, tmp_path / "t.csv") == ("1", "2", "10")
    assert class_order(["MSS", "MSI"], "MSS,MSI", tmp_path / "t.csv") == ("MSS", "MSI")
    with pytest.raises(PathkitError, match="must list each class once"):
        class_order(["MSS", "MSI"], "MSS", tmp_path / "t.csv")


# --------------------------------------------------------------------------- slides-csv


def test_slides_csv_reads_the_table_and_keeps_the_users_split_exactly(tmp_path):
    root = tmp_path / "cohort"
    rows = cohort(root)
    ds = SlidesCSV(root, workdir=str(tmp_path / "work"))
    ds.validate()
    expected = {p: [Path(r["slide_path"]).stem for r in rows if r["split"] == p] for p in ("train", "val", "test")}
    assert ds.splits() == expected
    assert ds.class_names() == ("MSI", "MSS")
    case = next(ds.cases("test"))
    assert case.case_id == "P00_0" and case.patient_id == "P00" and case.target == "MSI"
    assert case.slides == (root / "slides" / "P00_0.svs",)  # relative to the table's folder
    assert case.meta == {"age": "40", "mpp": 0.25}  # extra columns and the per-slide mpp
    facts = ds.split_facts()
    assert facts["source"] == "given" and "split column of cohort.csv" in facts["description"]
    assert facts["counts"] == {"train": 8, "val": 2, "test": 2} and facts["class_names"] == ["MSI", "MSS"]
    assert not (tmp_path / "work" / "splits").exists()  # nothing drawn, nothing written


def test_slides_csv_aliases_defaults_and_an_mpp_option(tmp_path):
    root = tmp_path / "cohort"
    rows = [{"Slide": f"/{tmp_path}/s/{k}.svs", "Class": str(k % 2), "Set": ("train", "validation", "test")[k % 3]}
            for k in range(12)]
    for r in rows:
        touch(Path(r["Slide"]))
    write_csv(root / "my table.csv", rows)
    ds = SlidesCSV(root, table="my table.csv", mpp=0.5)
    ds.validate()
    case = next(ds.cases("val"))
    assert case.patient_id == case.case_id == "1"  # patient defaults to the slide
    assert case.meta["mpp"] == 0.5 and Path(case.slides[0]).is_absolute()
    assert ds.class_names() == ("0", "1")


def test_slides_csv_groups_a_patients_slides_into_one_case(tmp_path):
    root = tmp_path / "cohort"
    cohort(root, slides_per_patient=2)
    ds = SlidesCSV(root, case="patient")
    ds.validate()
    case = next(ds.cases("test"))
    assert case.case_id == case.patient_id == "P00"
    assert [s.name for s in case.slides] == ["P00_0.svs", "P00_1.svs"]
    assert case.meta["mpp"] == 0.25 and case.meta["slide_ids"] == ["P00_0", "P00_1"]
    rows = list(csv.DictReader((root / "cohort.csv").open()))
    rows[1]["label"] = "MSS"  # P00's second slide disagrees
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"patient 'P00' has slides with different labels .*line 2.*line 3"):
        SlidesCSV(root, case="patient").validate()


def test_a_split_with_a_patient_on_both_sides_is_an_error_naming_the_patient(tmp_path):
    root = tmp_path / "cohort"
    cohort(root, slides_per_patient=2)
    rows = list(csv.DictReader((root / "cohort.csv").open()))
    rows[1]["split"] = "train"  # P00: one slide in test, one in train
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"1 patient\(s\) in two parts .*'P00' \(train and test\)"):
        SlidesCSV(root).validate()


def test_a_splits_file_is_used_exactly_and_checked(tmp_path):
    root = tmp_path / "cohort"
    rows = cohort(root, split=False)
    ids = [Path(r["slide_path"]).stem for r in rows]
    parts = {"test": ids[:2], "val": ids[2:4], "train": ids[4:]}
    write_csv(tmp_path / "split.csv", [{"case_id": c, "split": p} for p, cs in parts.items() for c in cs])
    ds = SlidesCSV(root, splits_file=str(tmp_path / "split.csv"))
    assert ds.splits() == {p: parts[p] for p in ("train", "val", "test")}
    assert ds.split_facts()["source"] == "given" and ds.split_facts()["file"] == str(tmp_path / "split.csv")
    # the JSON REG layout, relative to the dataset root, ids with a slide suffix
    (root / "split.json").write_text(json.dumps({p: [f"{c}.svs" for c in cs] for p, cs in parts.items()}))
    assert SlidesCSV(root, splits_file="split.json").splits() == ds.splits()
    # a case the file leaves out, or an id that is no case, is an error naming them
    write_csv(tmp_path / "short.csv", [{"case_id": c, "split": "train"} for c in ids[1:]] +
              [{"case_id": "ghost", "split": "test"}])
    with pytest.raises(PathkitError, match=r"1 listed id\(s\) are no case of the dataset: ghost; 1 case\(s\) are "
                                           r"in no part: P00_0"):
        SlidesCSV(root, splits_file=str(tmp_path / "short.csv")).validate()
    write_csv(tmp_path / "leak.csv", [{"case_id": c, "split": "train" if c != ids[0] else "test"} for c in ids])
    with pytest.raises(PathkitError, match="the val part.* are empty"):
        SlidesCSV(root, splits_file=str(tmp_path / "leak.csv")).validate()
    write_csv(tmp_path / "bad.csv", [{"case_id": ids[0], "split": "holdout"}])
    with pytest.raises(PathkitError, match=r"bad.csv, line 2: unknown split 'holdout'"):
        SlidesCSV(root, splits_file=str(tmp_path / "bad.csv")).validate()
    with pytest.raises(PathkitError, match="does not exist"):
        SlidesCSV(root, splits_file="nope.csv").validate()


def test_a_split_column_and_a_splits_file_together_or_a_partial_split_column_are_errors(tmp_path):
    root = tmp_path / "cohort"
    rows = cohort(root)
    write_csv(tmp_path / "split.csv", [{"case_id": Path(r["slide_path"]).stem, "split": r["split"]} for r in rows])
    with pytest.raises(PathkitError, match="both cohort.csv .* and splits_file .* give a split; keep one"):
        SlidesCSV(root, splits_file=str(tmp_path / "split.csv")).validate()
    rows[3]["split"] = ""
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"1 case\(s\) have no split while others do: P03_0 \(line 5\)"):
        SlidesCSV(root).validate()


def test_without_a_split_one_is_drawn_seeded_stratified_in_the_workspace_and_said(tmp_path, caplog):
    root = tmp_path / "cohort"
    cohort(root, n_patients=20, split=False, slides_per_patient=2)
    work = tmp_path / "work"
    ds = SlidesCSV(root, workdir=str(work), split_seed=3)
    ds.validate()
    parts = ds.splits()
    facts = ds.split_facts()
    assert facts["source"] == "drawn" and facts["stratified"] and facts["seed"] == 3
    assert "drawn by pathkit (no split given)" in facts["description"] and "stratified" in caplog.text
    assert Path(facts["file"]).parent == work / "splits" / "slides-csv"  # not the user's folder
    assert sorted(p.name for p in root.iterdir()) == ["cohort.csv", "slides"]
    patients = {p: {c.split("_")[0] for c in ids} for p, ids in parts.items()}
    assert not (patients["train"] & patients["val"] or patients["train"] & patients["test"]
                or patients["val"] & patients["test"])
    labels = {c.case_id: c.target for p in parts for c in ds.cases(p)}
    assert all({labels[c] for c in ids} == {"MSI", "MSS"} for ids in parts.values())
    assert SlidesCSV(root, workdir=str(work), split_seed=3).splits() == parts  # read back
    assert SlidesCSV(root, split_seed=3).splits() == parts  # the same draw without a workspace
    assert SlidesCSV(root, split_seed=4).splits() != parts


def test_missing_slides_are_listed_with_their_rows_and_left_out_with_skip_missing(tmp_path):
    root = tmp_path / "cohort"
    cohort(root)
    (root / "slides" / "P05_0.svs").unlink()
    (root / "slides" / "P07_0.svs").unlink()
    with pytest.raises(PathkitError, match=r"2 slide file\(s\) do not exist: line 7: .*P05_0.svs; line 9: .*P07_0.svs"
                                           r".*--skip-missing"):
        SlidesCSV(root).validate()
    ds = SlidesCSV(root, skip_missing=True)
    ds.validate()
    assert set(ds.excluded_cases()) == {"P05_0", "P07_0"} and "line 7" in ds.excluded_cases()["P05_0"]
    assert "P05_0" not in ds.splits()["train"] and len(ds.splits()["train"]) == 6


def test_bad_cohort_tables_are_explained(tmp_path):
    root = tmp_path / "cohort"
    root.mkdir()
    write_csv(root / "cohort.csv", [{"file_name": "a.svs", "diagnosis": "x"}])
    with pytest.raises(PathkitError, match=r"cohort.csv has no slide_path or label column \(accepted names: "
                                           r"slide_path: slide_path, slide.*; it has: file_name, diagnosis"):
        SlidesCSV(root).validate()
    write_csv(root / "cohort.csv", [{"slide_path": "a.svs", "patient_id": "p"}])
    with pytest.raises(PathkitError, match="no label column .* it has: slide_path, patient_id"):
        SlidesCSV(root).validate()
    rows = cohort(root)
    rows[5]["label"] = ""
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"1 row\(s\) have no label: line 7"):
        SlidesCSV(root).validate()
    rows = cohort(root)
    rows[5]["mpp"] = "352.8"
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match="line 7: mpp '352.8' is outside the plausible .*fix the mpp column"):
        SlidesCSV(root).validate()
    with pytest.raises(PathkitError, match="dataset 'slides-csv': mpp 0.001 is outside.*--dataset-option mpp"):
        SlidesCSV(root, mpp=0.001).validate()


def test_duplicate_slides_and_case_ids_are_listed(tmp_path):
    root = tmp_path / "cohort"
    rows = cohort(root)
    rows[4]["slide_path"] = rows[2]["slide_path"]
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"1 duplicate slide path\(s\): .*P02_0.svs \(line 4, line 6\)"):
        SlidesCSV(root).validate()
    rows = cohort(root)
    touch(root / "other" / "P02_0.svs")
    rows[4]["slide_path"] = "other/P02_0.svs"
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"duplicate slide file name\(s\): P02_0 \(line 4, line 6\)"):
        SlidesCSV(root).validate()
    rows = cohort(root)
    for r, case_id in zip(rows, ["a", "b", "a"] + [f"c{k}" for k in range(9)], strict=True):
        r["case_id"] = case_id
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"1 duplicate case id\(s\): a \(line 2, line 4\)"):
        SlidesCSV(root).validate()


def test_one_class_or_a_split_part_with_one_class_is_an_error_before_training(tmp_path):
    root = tmp_path / "cohort"
    rows = cohort(root)
    write_csv(root / "cohort.csv", [{**r, "label": "MSI"} for r in rows])
    with pytest.raises(PathkitError, match="every case has label 'MSI' .*two or more classes"):
        SlidesCSV(root).validate()
    rows = cohort(root)
    rows[1]["label"] = "MSI"  # both test patients MSI
    write_csv(root / "cohort.csv", rows)
    with pytest.raises(PathkitError, match=r"the test part has one class only \('MSI': 2\)"):
        SlidesCSV(root).validate()


def test_unknown_and_mistyped_options_list_what_is_known(tmp_path):
    with pytest.raises(PathkitError, match=r"dataset 'slides-csv' has no option\(s\) labels; known: case, classes, "
                                           r".*pathkit info slides-csv"):
        SlidesCSV(tmp_path, labels="x.csv")
    with pytest.raises(PathkitError, match="option case='sample': choose one of slide, patient"):
        SlidesCSV(tmp_path, case="sample")
    with pytest.raises(PathkitError, match="option split_seed='a' is not a number"):
        SlidesCSV(tmp_path, split_seed="a")
    with pytest.raises(PathkitError, match="has no views"):
        SlidesCSV(tmp_path, view="x")
    with pytest.raises(PathkitError, match="needs --dataset-root.*expected layout: <root>/cohort.csv"):
        SlidesCSV(None).validate()
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.csv").write_text("x\n1\n")
    with pytest.raises(PathkitError, match="no cohort table in .*found a.csv, b.csv; choose one with "
                                           "--dataset-option table=FILE"):
        SlidesCSV(tmp_path).validate()


# --------------------------------------------------------------------------- slides-reports


def numbered_reports(root: Path, n: int = 10, *, split: dict | None = None) -> list[str]:
    ids = [f"case_{k:03d}" for k in range(1, n + 1)]
    for c in ids:
        touch(root / f"{c}.tiff")
    records = [{"id": f"{c}.tiff", "report": f"Stomach, biopsy;\n  finding {k % 3}"} for k, c in enumerate(ids)]
    if split:
        data = {p: [r for r in records if split[strip(r["id"])] == p] for p in ("train", "val", "test")}
        (root / "reports.json").write_text(json.dumps(data))
    else:
        (root / "reports.json").write_text(json.dumps(records))
    return ids


def strip(name: str) -> str:
    return name.removesuffix(".tiff")


def with_given_split(cls, root):
    """`cls` over ten numbered reports in the {"train", "val", "test"} layout, checked to keep that split."""
    ids = [f"case_{k:03d}" for k in range(1, 11)]
    split = {c: "train" if k < 6 else "val" if k < 8 else "test" for k, c in enumerate(ids)}
    numbered_reports(root, split=split)
    ds = cls(root)
    ds.validate()
    assert ds.splits() == {p: [c for c in ids if split[c] == p] for p in ("train", "val", "test")}
    return ds, ids


def test_slides_reports_keeps_sequential_ids_apart_and_the_users_split(tmp_path):
    root = tmp_path / "mine"
    ds, ids = with_given_split(SlidesReports, root)
    cases = {c.case_id: c for p in ("train", "val", "test") for c in ds.cases(p)}
    assert {c.patient_id for c in cases.values()} == set(ids)  # case_001, case_002: ten patients, not one
    assert cases["case_001"].target == "Stomach, biopsy;\n  finding 0"  # reports as written
    assert cases["case_001"].slides == (root / "case_001.tiff",)
    assert ds.split_facts()["source"] == "given" and "train/val/test keys" in ds.split_facts()["description"]
    # the REG patient rule is REG's: ids shaped like PIT_01_00002_01 only
    assert patient_of("case_001") == "case_001" and patient_of("PIT_01_00002_01") == "PIT_01_00002"


def test_slides_reports_jsonl_csv_patient_column_and_cleaning(tmp_path):
    root = tmp_path / "mine"
    rows = []
    for k in range(12):
        touch(root / "wsi" / f"s{k}.svs")
        rows.append({"slide_path": f"wsi/s{k}.svs", "patient_id": f"p{k // 2}", "findings": f"Tumour, GRADE {k % 3}!",
                     "note": "a", "split": ("train", "train", "val", "test")[(k // 2) % 4]})
    write_csv(root / "reports.csv", rows)
    ds = SlidesReports(root, report_cleaning="pathbench")
    ds.validate()
    case = next(ds.cases("val"))
    assert case.patient_id == "p2" and case.target == "tumour grade 1 ." and case.meta["note"] == "a"
    assert case.meta["raw_report"] == "Tumour, GRADE 1!"
    grouped = SlidesReports(root, case="patient", report_fields="note,findings")
    rows_by_patient = {c.case_id: c for p in ("train", "val", "test") for c in grouped.cases(p)}
    with pytest.raises(PathkitError, match="patient 'p0' has slides with different reports"):
        SlidesReports(root, case="patient").validate()
    assert len(rows_by_patient) == 6 and len(rows_by_patient["p0"].slides) == 2
    assert rows_by_patient["p0"].target == "a. Tumour, GRADE 0!"
    (root / "reports.jsonl").write_text("\n".join(json.dumps({"id": f"s{k}", "text": "x"}) for k in range(12)))
    drawn = SlidesReports(root, table="reports.jsonl", slides_dir="wsi")
    drawn.validate()
    assert drawn.split_facts()["source"] == "drawn" and sum(drawn.split_facts()["counts"].values()) == 12
    with pytest.raises(PathkitError, match="report_fields names column.* nope"):
        SlidesReports(root, report_fields="nope").validate()


def test_slides_reports_missing_slide_and_empty_report(tmp_path):
    root = tmp_path / "mine"
    ids = numbered_reports(root, 12)
    (root / f"{ids[4]}.tiff").unlink()
    with pytest.raises(PathkitError, match=r"1 slide file\(s\) do not exist: item 4: .*case_005\.\{tiff,tif,svs"):
        SlidesReports(root).validate()
    records = json.loads((root / "reports.json").read_text())
    records[2]["report"] = "  "
    (root / "reports.json").write_text(json.dumps(records))
    ds = SlidesReports(root, skip_missing=True)
    ds.validate()
    assert ds.excluded_cases()["case_003"].startswith("report is empty (reports.json, item 2)")
    assert "case_005" in ds.excluded_cases()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PathkitError, match="no reports file in .*looked for reports.json"):
        SlidesReports(empty).validate()


# --------------------------------------------------------------------------- the benchmark datasets follow


def test_reg2025_keeps_a_split_given_in_its_report_file_and_a_patient_id(tmp_path):
    root = tmp_path / "reg"
    ds, _ = with_given_split(REG2025, root)
    assert ds.split_facts()["source"] == "given"
    with pytest.raises(PathkitError, match="goes with split=auto"):
        REG2025(root, split="random", splits_file="x.csv").validate()
    records = [r for p in ("train", "val", "test") for r in json.loads((root / "reports.json").read_text())[p]]
    for r in records:
        r["patient_id"] = "same-person"
    (root / "reports.json").write_text(json.dumps({"train": records[:5], "val": records[5:8], "test": records[8:]}))
    with pytest.raises(PathkitError, match="'same-person' \\(train and val and test\\)"):
        REG2025(root).validate()


def test_every_slide_dataset_declares_an_mpp_option():
    from pathkit_core.plugins import get_plugin_manager

    registry = get_plugin_manager()
    for name in ("reg2025", "histai", "tcga-pathtext", "goldmark", "demo-reports", "slides-csv", "slides-reports"):
        cls = registry.get("dataset", name)
        assert "mpp" in {o.name for o in cls.option_table}, name
        assert cls.layout, name


# --------------------------------------------------------------------------- hardening (issue 28)


def test_a_million_row_table_repeating_one_slide_gives_a_short_error():
    from pathkit_sdk.cohort import CohortRow, check_duplicates

    rows = [CohortRow(i, f"line {i + 2}", "S1", "P1") for i in range(1_000_000)]
    with pytest.raises(PathkitError) as caught:
        check_duplicates(rows, lambda r: r.case_id, "slide id", Path("big.csv"))
    assert str(caught.value) == ("big.csv: 1 duplicate slide id(s): S1 (line 2, line 3, line 4, line 5, line 6, ... "
                                 "(999995 more))")


def test_a_slide_table_repeating_one_slide_lists_the_first_repeats_and_a_count(tmp_path):
    root = tmp_path / "cohort"
    touch(root / "slides" / "S1.svs")
    write_csv(root / "cohort.csv", [{"slide_path": "slides/S1.svs", "patient_id": f"P{i}", "label": "MSI"}
                                    for i in range(20_000)])
    with pytest.raises(PathkitError) as caught:
        SlidesCSV(root, workdir=str(tmp_path / "work")).validate()
    message = str(caught.value)
    assert len(message) < 400 and "line 2, line 3, line 4, line 5, line 6, ... (19995 more)" in message


def test_a_named_pipe_as_splits_file_is_refused_without_blocking(tmp_path):
    import os

    from tests._pipes import without_blocking

    root = tmp_path / "cohort"
    cohort(root, split=False)
    fifo = tmp_path / "split.csv"
    os.mkfifo(fifo)
    found = without_blocking(lambda: SlidesCSV(root, workdir=str(tmp_path / "work"), splits_file=str(fifo)).splits(),
                             fifo)
    assert isinstance(found, PathkitError) and f"split file {fifo} is not a regular file (a named pipe)" in str(found)
